#[cfg(target_os = "linux")]
pub(crate) mod batch_receive;
pub mod constant;
pub mod link_emulation;
pub mod udp_listener;
pub mod udp_sender;
pub mod util;
