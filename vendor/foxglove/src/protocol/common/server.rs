//! Server messages.

pub mod advertise;
pub mod advertise_schema_table;
pub mod advertise_services;
pub mod connection_graph_update;
pub mod fetch_asset_response;
mod parameter_values;
#[doc(hidden)]
pub mod playback_state;
mod pong;
mod remove_status;
pub mod server_info;
mod service_call_failure;
mod service_call_response;
pub mod status;
mod time;
mod unadvertise;
mod unadvertise_services;

pub use advertise::{Advertise, Channel};
pub use advertise_schema_table::AdvertiseWithSchemaTable;
pub use advertise_services::AdvertiseServices;
pub use connection_graph_update::ConnectionGraphUpdate;
pub use fetch_asset_response::FetchAssetResponse;
pub use parameter_values::ParameterValues;
#[doc(hidden)]
pub use playback_state::PlaybackState;
pub use pong::Pong;
pub use remove_status::RemoveStatus;
pub use server_info::ServerInfo;
pub use service_call_failure::ServiceCallFailure;
pub use service_call_response::ServiceCallResponse;
pub use status::Status;
pub use time::Time;
pub use unadvertise::Unadvertise;
pub use unadvertise_services::UnadvertiseServices;
