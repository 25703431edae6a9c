//! Camera images whose every byte depends on their sequence number, so a reader can tell a
//! whole image from a torn one (the first half of one sample and the rest of another, what an
//! unguarded shared-memory slot overwritten mid-read would hand out), and the UDP ports of a
//! process, for the tests that send it garbage.

use convoy_core::messages::{Image, SensorHeader};

/// The sequence number of the handshake images, told apart from the numbered ones.
pub const MARKER: u64 = u64::MAX;

/// The pattern word `k` of image `seq`: a different value for every word and every sequence
/// number (a multiplicative hash), so no two images share a word at the same place.
fn word(seq: u64, k: u64) -> u64 {
    (seq.wrapping_add(1))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left((k % 61) as u32)
        ^ k
}

/// An rgb8 `width` x `height` image numbered `seq` (in `header.seq`), filled with its pattern.
pub fn test_image(seq: u64, width: u32, height: u32) -> Image {
    let len = width as usize * height as usize * 3;
    let mut data = Vec::with_capacity(len);
    let mut k = 0u64;
    while data.len() < len {
        let bytes = word(seq, k).to_le_bytes();
        let take = (len - data.len()).min(8);
        data.extend_from_slice(&bytes[..take]);
        k += 1;
    }
    Image {
        header: SensorHeader {
            agent: "ego".into(),
            sensor: "camera".into(),
            frame: seq,
            stamp_ns: 0,
            seq,
        },
        width,
        height,
        encoding: "rgb8".into(),
        step: width * 3,
        data,
    }
}

/// Whether `image` is exactly what [`test_image`] made for its sequence number: its size, its
/// header (frame = seq) and every byte.
pub fn is_whole(image: &Image) -> bool {
    let seq = image.header.seq;
    let len = image.width as usize * image.height as usize * 3;
    image.header.frame == seq
        && image.step == image.width * 3
        && image.data.len() == len
        && image
            .data
            .chunks(8)
            .zip(0u64..)
            .all(|(chunk, k)| chunk == &word(seq, k).to_le_bytes()[..chunk.len()])
}

/// The UDP ports process `pid` has bound (its sockets in /proc/net/udp): a DDS participant's
/// discovery and user ports, unicast and multicast.
pub fn udp_ports_of(pid: u32) -> Vec<u16> {
    let mut inodes = std::collections::BTreeSet::new();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"));
    for fd in fds.into_iter().flatten().flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            inodes.insert(inode.to_string());
        }
    }
    let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let mut ports: Vec<u16> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, inode) = (fields.get(1)?, fields.get(9)?);
            if !inodes.contains(*inode) {
                return None;
            }
            let port = local.split(':').nth(1)?;
            u16::from_str_radix(port, 16).ok()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_image_is_not_whole() {
        let image = test_image(5, 64, 48);
        assert!(is_whole(&image));
        let other = test_image(6, 64, 48);
        let mut torn = image.clone();
        let half = torn.data.len() / 2;
        torn.data[half..].copy_from_slice(&other.data[half..]);
        assert!(
            !is_whole(&torn),
            "half of image 6 in image 5 went unnoticed"
        );
        let mut short = image.clone();
        short.data.pop();
        assert!(!is_whole(&short));
        // A single byte differs, at the very end (a last partial word).
        let mut odd = test_image(7, 5, 3);
        assert!(is_whole(&odd));
        let last = odd.data.len() - 1;
        odd.data[last] ^= 1;
        assert!(!is_whole(&odd));
    }
}
