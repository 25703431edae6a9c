//! Hostile traffic for the robustness tests: reproducible garbage datagrams (noise, and RTPS
//! headers over submessages with random flags and lengths), sent to a domain's ports; and a
//! replayer that records what a domain's participants multicast and sends it back to every
//! port of the domain, as an attacker on the network would.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// xorshift64*: garbage that differs from datagram to datagram, reproducibly.
pub struct Garbage(pub u64);

impl Garbage {
    pub fn next_word(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_word() as u8).collect()
    }

    /// A datagram: plain noise, or an RTPS header (so the receiver parses on) followed by
    /// submessages of convoy's kinds (DATA, DATA_FRAG, HEARTBEAT, ACKNACK, GAP, INFO_TS,
    /// INFO_DST, NACK_FRAG, HEARTBEAT_FRAG) with random flags, lengths and bodies.
    pub fn datagram(&mut self) -> Vec<u8> {
        let len = match self.next_word() % 8 {
            0 => 60_000,
            n => (n as usize * 173) % 1400,
        };
        if self.next_word().is_multiple_of(3) {
            return self.bytes(len);
        }
        let mut out = b"RTPS\x02\x04\x01\x0f".to_vec();
        out.extend(self.bytes(12));
        const KINDS: [u8; 9] = [0x15, 0x16, 0x07, 0x06, 0x08, 0x09, 0x0e, 0x12, 0x13];
        while out.len() < len.max(24) {
            let kind = KINDS[(self.next_word() % KINDS.len() as u64) as usize];
            let flags = self.next_word() as u8;
            let body = (self.next_word() % 96) as usize;
            // Now and then a length that runs past the datagram's end.
            let claimed = if self.next_word().is_multiple_of(5) {
                self.next_word() as u16
            } else {
                body as u16
            };
            out.push(kind);
            out.push(flags);
            out.extend(if flags & 1 == 1 {
                claimed.to_le_bytes()
            } else {
                claimed.to_be_bytes()
            });
            out.extend(self.bytes(body));
        }
        out
    }
}

/// Sends garbage datagrams to every port in `ports` on loopback and to the domain's multicast
/// groups until `stop`; returns how many it sent.
pub fn send_garbage(
    d: u32,
    ports: Vec<u16>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        let _ = socket.set_multicast_loop_v4(true);
        let mut targets: Vec<std::net::SocketAddr> = ports
            .iter()
            .map(|p| (std::net::Ipv4Addr::LOCALHOST, *p).into())
            .collect();
        // RTPS's well-known multicast ports of the domain: discovery and user traffic.
        targets.extend(domain_targets(d, 0));
        let mut garbage = Garbage(0x5eed_0000 + u64::from(d));
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for target in &targets {
                if socket.send_to(&garbage.datagram(), target).is_ok() {
                    sent += 1;
                }
            }
            // Paced: a flood would measure the machine's two cores, not the parsers.
            std::thread::sleep(Duration::from_millis(2));
        }
        sent
    })
}

/// RTPS's multicast group and the domain's well-known ports: discovery and user multicast,
/// and the unicast discovery and user ports of the first `participants` participants on
/// 127.0.0.1.
pub fn domain_targets(d: u32, participants: u16) -> Vec<SocketAddr> {
    let base = (7400 + 250 * d) as u16;
    let group = Ipv4Addr::new(239, 255, 0, 1);
    let mut targets: Vec<SocketAddr> = vec![(group, base).into(), (group, base + 1).into()];
    for pid in 0..participants {
        for port in [base + 10 + 2 * pid, base + 11 + 2 * pid] {
            targets.push((Ipv4Addr::LOCALHOST, port).into());
        }
    }
    targets
}

/// A UDP socket on `port` that shares it with the participants bound there (SO_REUSEADDR, as
/// DDS implementations bind their multicast ports) and has joined RTPS's multicast group.
fn shared_multicast_socket(port: u16) -> UdpSocket {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns; the option values are
    // ints that outlive the calls; the address is a properly initialised sockaddr_in.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let one: libc::c_int = 1;
        for option in [libc::SO_REUSEADDR, libc::SO_REUSEPORT] {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                option,
                std::ptr::from_ref(&one).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        let bound = libc::bind(
            fd,
            std::ptr::from_ref(&addr).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(bound, 0, "bind {port}: {}", std::io::Error::last_os_error());
        let socket = UdpSocket::from_raw_fd(fd);
        socket
            .join_multicast_v4(&Ipv4Addr::new(239, 255, 0, 1), &Ipv4Addr::UNSPECIFIED)
            .expect("join RTPS's multicast group");
        socket
    }
}

/// Records every datagram multicast on domain `d` (discovery and user data: a secured run's
/// announcements, handshakes and samples as they crossed the wire) and, until `stop`, sends
/// each back to every port of the domain a few times over. Returns how many it replayed.
pub fn replay_domain(d: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let base = (7400 + 250 * d) as u16;
        let listeners: Vec<UdpSocket> = [base, base + 1]
            .into_iter()
            .map(shared_multicast_socket)
            .collect();
        for l in &listeners {
            let _ = l.set_read_timeout(Some(Duration::from_millis(5)));
        }
        let sender = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        let _ = sender.set_multicast_loop_v4(true);
        let targets = domain_targets(d, 24);
        let mut recorded: Vec<Vec<u8>> = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let mut sent = 0u64;
        let mut next = 0usize;
        while !stop.load(Ordering::Relaxed) {
            for l in &listeners {
                while let Ok(n) = l.recv(&mut buf) {
                    // Bounded: the first thousand datagrams are plenty to replay.
                    if recorded.len() < 1000 {
                        recorded.push(buf[..n].to_vec());
                    }
                }
            }
            // A handful a round, cycling through what was recorded.
            for _ in 0..8 {
                let Some(datagram) = recorded.get(next % recorded.len().max(1)) else {
                    break;
                };
                next += 1;
                for target in &targets {
                    if sender.send_to(datagram, target).is_ok() {
                        sent += 1;
                    }
                }
            }
        }
        sent
    })
}
