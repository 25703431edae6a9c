//! convoy change 76: reading a socket in a thread of its own that blocks in the
//! read.
//!
//! The event loop learns that a socket is readable from `epoll_wait`, reads it
//! with `recvmsg` until `EAGAIN` and only then waits again: three system calls
//! for the one datagram of a ping. A thread that blocks in `recvmmsg` with
//! `MSG_WAITFORONE` makes one: the call sleeps until the first datagram comes
//! and returns it together with whatever else is queued by then (up to
//! [`BATCH`]); only a full batch is followed by another call, which does not
//! wait (`MSG_DONTWAIT`).
//!
//! Each datagram lands in a slot of its own, a [`BytesMut`] chunk as in
//! `UDPListener::next_message`: the datagram is split off the chunk and frozen,
//! so what the readers keep shares the chunk and nothing is copied.

use std::{
  collections::HashMap,
  io,
  net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, SocketAddrV6},
  os::unix::io::RawFd,
};

use bytes::{Bytes, BytesMut};
use nix::libc;

use crate::{
  network::udp_listener::PacketOrigin, rtps::transmit::InterfaceSelector,
  serialization::padding_needed_for_alignment_4,
};

/// Datagrams one `recvmmsg` may return.
pub(crate) const BATCH: usize = 16;
/// The largest UDP datagram.
const MAX_MESSAGE_SIZE: usize = 64 * 1024;
/// A slot's chunk: several datagrams are split off one before it is replaced.
const CHUNK: usize = 256 * 1024;
/// Room for one `IP_PKTINFO` control message (`CMSG_SPACE(sizeof(in_pktinfo))`
/// is 32 on 64-bit Linux; 64 leaves margin).
const CMSG_ROOM: usize = 64;

/// The buffers of one receiving thread.
pub(crate) struct BatchReceiver {
  slots: Vec<BytesMut>,
  control: Vec<[u64; CMSG_ROOM / 8]>,
  addresses: Vec<libc::sockaddr_storage>,
}

impl BatchReceiver {
  pub(crate) fn new() -> Self {
    Self {
      slots: (0..BATCH).map(|_| BytesMut::with_capacity(CHUNK)).collect(),
      control: vec![[0u64; CMSG_ROOM / 8]; BATCH],
      // Safe: sockaddr_storage is plain old data, all zeros is a valid value.
      addresses: vec![unsafe { std::mem::zeroed() }; BATCH],
    }
  }

  /// With `wait`, blocks until at least one datagram is in `fd` (a blocking
  /// socket); without, returns at once. Appends what was queued (up to
  /// [`BATCH`]) to `out`, each with its origin. `via_multicast` and
  /// `ifindex_map` fill in the origin as `UDPListener::recv_one` does.
  pub(crate) fn receive(
    &mut self,
    fd: RawFd,
    wait: bool,
    via_multicast: bool,
    ifindex_map: &HashMap<u32, InterfaceSelector>,
    out: &mut Vec<(Bytes, PacketOrigin)>,
  ) -> io::Result<()> {
    for slot in &mut self.slots {
      if slot.capacity() < MAX_MESSAGE_SIZE {
        *slot = BytesMut::with_capacity(CHUNK);
      }
    }
    let mut iovecs: Vec<libc::iovec> = self
      .slots
      .iter_mut()
      .map(|slot| libc::iovec {
        iov_base: slot.as_mut_ptr().cast(),
        iov_len: MAX_MESSAGE_SIZE,
      })
      .collect();
    // Safe: mmsghdr is plain old data; every pointer is set below.
    let mut headers: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
    for (i, header) in headers.iter_mut().enumerate() {
      let msg = &mut header.msg_hdr;
      msg.msg_name = (&mut self.addresses[i] as *mut libc::sockaddr_storage).cast();
      msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
      msg.msg_iov = &mut iovecs[i];
      msg.msg_iovlen = 1;
      msg.msg_control = self.control[i].as_mut_ptr().cast();
      msg.msg_controllen = CMSG_ROOM as _;
    }
    // Safe: each header points at a live iovec over MAX_MESSAGE_SIZE bytes of
    // its slot's capacity, a sockaddr_storage and CMSG_ROOM control bytes, all
    // of which outlive the call.
    let flags = if wait {
      libc::MSG_WAITFORONE
    } else {
      libc::MSG_DONTWAIT
    };
    let received = unsafe {
      libc::recvmmsg(
        fd,
        headers.as_mut_ptr(),
        BATCH as libc::c_uint,
        flags as _,
        std::ptr::null_mut(),
      )
    };
    if received < 0 {
      let e = io::Error::last_os_error();
      if !wait && e.kind() == io::ErrorKind::WouldBlock {
        return Ok(());
      }
      return Err(e);
    }
    for (i, header) in headers.iter().enumerate().take(received as usize) {
      let nbytes = (header.msg_len as usize).min(MAX_MESSAGE_SIZE);
      let (source, ifindex, spec_dst) = origin_of(&header.msg_hdr, &self.addresses[i]);
      let local_if = spec_dst
        .map(InterfaceSelector::Ip)
        .or_else(|| ifindex_map.get(&ifindex).copied());
      let slot = &mut self.slots[i];
      // Safe: the kernel wrote `nbytes` bytes at the front of the capacity.
      unsafe { slot.set_len(nbytes) };
      // The next datagram of this chunk starts 4-aligned, as RTPS expects.
      let pad = padding_needed_for_alignment_4(nbytes);
      slot.extend_from_slice(&[0xCC, 0xCC, 0xCC, 0xCC][..pad]);
      let mut message = slot.split_to(slot.len());
      message.truncate(nbytes);
      out.push((
        message.freeze(),
        PacketOrigin {
          source,
          local_if,
          via_multicast,
        },
      ));
    }
    Ok(())
  }
}

/// The source address, the receiving interface's index and the local address
/// the datagram was sent to (`IP_PKTINFO`), as far as the kernel said.
fn origin_of(
  msg: &libc::msghdr,
  address: &libc::sockaddr_storage,
) -> (Option<SocketAddr>, u32, Option<IpAddr>) {
  let source = socket_address(address, msg.msg_namelen);
  let mut ifindex = 0u32;
  let mut spec_dst = None;
  // Safe: the kernel filled msg_control up to msg_controllen; the CMSG macros
  // stay within it.
  unsafe {
    let mut cmsg = libc::CMSG_FIRSTHDR(msg);
    while !cmsg.is_null() {
      if (*cmsg).cmsg_level == libc::IPPROTO_IP && (*cmsg).cmsg_type == libc::IP_PKTINFO {
        let info: libc::in_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
        #[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
        {
          ifindex = info.ipi_ifindex as u32;
        }
        let addr = Ipv4Addr::from(u32::from_be(info.ipi_spec_dst.s_addr));
        if !addr.is_unspecified() {
          spec_dst = Some(IpAddr::V4(addr));
        }
      }
      cmsg = libc::CMSG_NXTHDR(msg, cmsg);
    }
  }
  (source, ifindex, spec_dst)
}

fn socket_address(address: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
  let len = len as usize;
  match i32::from(address.ss_family) {
    libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
      // Safe: the family says this storage holds a sockaddr_in.
      let a: &libc::sockaddr_in = unsafe { &*(address as *const _ as *const libc::sockaddr_in) };
      let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
      Some(SocketAddr::V4(SocketAddrV4::new(
        ip,
        u16::from_be(a.sin_port),
      )))
    }
    libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
      // Safe: the family says this storage holds a sockaddr_in6.
      let a: &libc::sockaddr_in6 = unsafe { &*(address as *const _ as *const libc::sockaddr_in6) };
      Some(SocketAddr::V6(SocketAddrV6::new(
        a.sin6_addr.s6_addr.into(),
        u16::from_be(a.sin6_port),
        a.sin6_flowinfo,
        a.sin6_scope_id,
      )))
    }
    _ => None,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Three datagrams queued before the call come back from one call, in order,
  /// with their source address; the call then blocks no longer than it must.
  #[test]
  fn one_call_returns_what_is_queued() {
    use std::os::unix::io::AsRawFd;
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let to = receiver.local_addr().expect("addr");
    for payload in [&b"one"[..], b"two", b"three"] {
      sender.send_to(payload, to).expect("send");
    }
    let mut batch = BatchReceiver::new();
    let mut out = Vec::new();
    while out.len() < 3 {
      batch
        .receive(receiver.as_raw_fd(), true, false, &HashMap::new(), &mut out)
        .expect("receive");
    }
    let got: Vec<&[u8]> = out.iter().map(|(b, _)| b.as_ref()).collect();
    assert_eq!(got, vec![&b"one"[..], b"two", b"three"]);
    assert_eq!(out[0].1.source, sender.local_addr().ok());
    assert!(!out[0].1.via_multicast);
  }

  /// `shutdown(SHUT_RD)` from another thread ends a call blocked in the read:
  /// that is how a participant stops its receiving threads.
  #[test]
  fn shutdown_wakes_a_blocked_read() {
    use std::os::unix::io::AsRawFd;
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let fd = receiver.as_raw_fd();
    let reader = std::thread::spawn(move || {
      let mut batch = BatchReceiver::new();
      let mut out = Vec::new();
      let result = batch.receive(fd, true, false, &HashMap::new(), &mut out);
      (
        result.is_ok(),
        out.iter().map(|(b, _)| b.len()).sum::<usize>(),
      )
    });
    // Wait (bounded) until the reader is asleep in the call, then shut down.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !reader.is_finished() && std::time::Instant::now() < until {
      std::thread::sleep(std::time::Duration::from_millis(20));
      // Safe: fd is open for the whole test (receiver lives until its end).
      unsafe { libc::shutdown(fd, libc::SHUT_RD) };
    }
    assert!(reader.is_finished(), "the blocked read did not end");
    let (_ok, bytes) = reader.join().expect("reader thread");
    assert_eq!(bytes, 0);
    drop(receiver);
  }
}
