//! What `convoy bench images` and `convoy bench bridge` send: the sample shapes (`image:WxH`,
//! `cloud:RINGSxPOINTS`), the byte pattern every reader checks, and the message types (convoy's
//! and ROS 2's) that carry a sequence number, a wall-clock stamp and the bytes.

use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use convoy_bridge::ros_msgs;
use convoy_core::dds::{PublishError, Publisher, TrailingBytes};
use convoy_core::messages::{self, Message, PointFieldType, SensorHeader};
use convoy_core::views::{ImageView, PointCloudView, Viewable};

/// Bytes per lidar point: x, y, z, intensity as f32.
const POINT_STEP: u32 = 16;
/// The point fields, each an f32 at 4 times its index.
const POINT_FIELDS: [&str; 4] = ["x", "y", "z", "intensity"];

/// What one sample is: an rgb8 image or a point cloud of rings x points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Image { width: u32, height: u32 },
    Cloud { rings: u32, points: u32 },
}

impl Shape {
    /// Payload bytes of one sample.
    pub fn bytes(&self) -> usize {
        match *self {
            Shape::Image { width, height } => width as usize * height as usize * 3,
            Shape::Cloud { rings, points } => {
                rings as usize * points as usize * POINT_STEP as usize
            }
        }
    }

    /// "image" or "cloud", as the foreign readers take it.
    pub fn kind(&self) -> &'static str {
        match self {
            Shape::Image { .. } => "image",
            Shape::Cloud { .. } => "cloud",
        }
    }

    /// (columns, rows): an image's (width, height), a cloud's (points, rings). Either message
    /// kind can carry either shape.
    fn grid(&self) -> (u32, u32) {
        match *self {
            Shape::Image { width, height } => (width, height),
            Shape::Cloud { rings, points } => (points, rings),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Image { width, height } => write!(f, "image:{width}x{height}"),
            Shape::Cloud { rings, points } => write!(f, "cloud:{rings}x{points}"),
        }
    }
}

impl FromStr for Shape {
    type Err = String;
    /// `image:640x480` (rgb8) or `cloud:64x2048` (rings x points per ring).
    fn from_str(s: &str) -> Result<Shape, String> {
        let usage = || format!("'{s}': expected image:WIDTHxHEIGHT or cloud:RINGSxPOINTS");
        let (kind, dims) = s.split_once(':').ok_or_else(usage)?;
        let (a, b) = dims.split_once('x').ok_or_else(usage)?;
        let a: u32 = a.parse().map_err(|_| usage())?;
        let b: u32 = b.parse().map_err(|_| usage())?;
        if a == 0 || b == 0 || u64::from(a) * u64::from(b) > 64 * 1024 * 1024 {
            return Err(format!(
                "'{s}': each side must be positive and the sample at most 64 Mi elements"
            ));
        }
        match kind {
            "image" => Ok(Shape::Image {
                width: a,
                height: b,
            }),
            "cloud" => Ok(Shape::Cloud {
                rings: a,
                points: b,
            }),
            _ => Err(usage()),
        }
    }
}

/// The byte pattern of sample `seq`: byte i is `(31 seq + 7 i) mod 256`. It is a window into
/// one buffer of `(7 i) mod 256`, so making (and checking) a sample is one copy (compare).
pub struct Pattern {
    base: Vec<u8>,
    len: usize,
}

impl Pattern {
    pub fn new(len: usize) -> Pattern {
        let base = (0..len + 256).map(|i| (i * 7) as u8).collect();
        Pattern { base, len }
    }

    /// 7 * 183 = 1 (mod 256): the window offset k with 7 k = 31 seq (mod 256).
    fn offset(seq: u64) -> usize {
        ((seq.wrapping_mul(31) % 256) * 183 % 256) as usize
    }

    pub fn sample(&self, seq: u64) -> &[u8] {
        let k = Self::offset(seq);
        &self.base[k..k + self.len]
    }
}

/// A type the bench can send: it carries a sequence number, a wall-clock stamp and the bytes.
pub(crate) trait BenchPayload: Message {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self;
    /// Makes this sample the one `build` would make with `data` (as long as the bytes it
    /// carries), reusing its buffer.
    fn refill(&mut self, seq: u64, stamp_ns: i64, data: &[u8]);
    /// Writes `message` refilled as sample `seq` with `data`, waiting out a full reliable
    /// history until `give_up`: refilled in place and written from there, or (convoy's own
    /// types) with `data` copied straight into the same-host readers' shared-memory slot.
    fn write_as(
        publisher: &Publisher<Self>,
        message: &mut Self,
        (seq, stamp_ns, data): (u64, i64, &[u8]),
        stop: &AtomicBool,
        give_up: Instant,
    ) -> Result<(), PublishError> {
        message.refill(seq, stamp_ns, data);
        publisher.write_ref_patiently(message, stop, Some(give_up))
    }
    /// (sequence number, stamp, payload bytes)
    fn parts(&self) -> (u64, i64, &[u8]);
}

impl BenchPayload for messages::Image {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (width, height) = shape.grid();
        messages::Image {
            header: bench_header(seq, stamp_ns),
            width,
            height,
            encoding: "rgb8".into(),
            step: width * 3,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        (self.header.seq, self.header.stamp_ns, &self.data)
    }
    fn refill(&mut self, seq: u64, stamp_ns: i64, data: &[u8]) {
        self.header = bench_header(seq, stamp_ns);
        refill_bytes(&mut self.data, data);
    }
    fn write_as(
        publisher: &Publisher<Self>,
        message: &mut Self,
        sample: (u64, i64, &[u8]),
        stop: &AtomicBool,
        give_up: Instant,
    ) -> Result<(), PublishError> {
        write_filled(publisher, message, sample, stop, give_up)
    }
}

impl BenchPayload for messages::PointCloud {
    fn build(_shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let fields = (0..)
            .zip(POINT_FIELDS)
            .map(|(i, name)| messages::PointField {
                name: name.into(),
                offset: 4 * i,
                datatype: PointFieldType::Float32,
            })
            .collect();
        messages::PointCloud {
            header: bench_header(seq, stamp_ns),
            point_count: (data.len() / POINT_STEP as usize) as u32,
            point_step: POINT_STEP,
            fields,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        (self.header.seq, self.header.stamp_ns, &self.data)
    }
    fn refill(&mut self, seq: u64, stamp_ns: i64, data: &[u8]) {
        self.header = bench_header(seq, stamp_ns);
        refill_bytes(&mut self.data, data);
    }
    fn write_as(
        publisher: &Publisher<Self>,
        message: &mut Self,
        sample: (u64, i64, &[u8]),
        stop: &AtomicBool,
        give_up: Instant,
    ) -> Result<(), PublishError> {
        write_filled(publisher, message, sample, stop, give_up)
    }
}

/// [`BenchPayload::write_as`] for convoy's own types: the bytes go straight into the slot.
fn write_filled<M: BenchPayload + TrailingBytes>(
    publisher: &Publisher<M>,
    message: &mut M,
    (seq, stamp_ns, data): (u64, i64, &[u8]),
    stop: &AtomicBool,
    give_up: Instant,
) -> Result<(), PublishError> {
    message.refill(seq, stamp_ns, &[]);
    publisher.write_filled(
        message,
        data.len(),
        |out| out.copy_from_slice(data),
        stop,
        Some(give_up),
    )
}

/// A convoy payload type read in place by the bench's convoy reader.
pub(crate) trait ViewParts: BenchPayload + Viewable {
    /// [`BenchPayload::parts`] of a view.
    fn view_parts<'a>(view: &'a Self::View<'_>) -> (u64, i64, &'a [u8]);
}

impl ViewParts for messages::Image {
    fn view_parts<'a>(view: &'a ImageView<'_>) -> (u64, i64, &'a [u8]) {
        (view.header.seq, view.header.stamp_ns, view.data)
    }
}

impl ViewParts for messages::PointCloud {
    fn view_parts<'a>(view: &'a PointCloudView<'_>) -> (u64, i64, &'a [u8]) {
        (view.header.seq, view.header.stamp_ns, view.data)
    }
}

/// `buf` made `data`, in the allocation it has.
fn refill_bytes(buf: &mut Vec<u8>, data: &[u8]) {
    buf.clear();
    buf.extend_from_slice(data);
}

fn bench_header(seq: u64, stamp_ns: i64) -> SensorHeader {
    SensorHeader {
        agent: "bench".into(),
        sensor: "bench".into(),
        frame: seq,
        stamp_ns,
        seq,
    }
}

/// ROS messages carry the sequence number in `frame_id` (ROS 2 headers have no seq).
impl BenchPayload for ros_msgs::Image {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (width, height) = shape.grid();
        ros_msgs::Image {
            header: ros_header(seq, stamp_ns),
            height,
            width,
            encoding: "rgb8".into(),
            is_bigendian: 0,
            step: width * 3,
            data,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        ros_parts(&self.header, &self.data)
    }
    fn refill(&mut self, seq: u64, stamp_ns: i64, data: &[u8]) {
        self.header = ros_header(seq, stamp_ns);
        refill_bytes(&mut self.data, data);
    }
}

impl BenchPayload for ros_msgs::PointCloud2 {
    fn build(shape: Shape, seq: u64, stamp_ns: i64, data: Vec<u8>) -> Self {
        let (points, rings) = shape.grid();
        let fields = (0..)
            .zip(POINT_FIELDS)
            .map(|(i, name)| ros_msgs::PointField {
                name: name.into(),
                offset: 4 * i,
                datatype: ros_msgs::PointField::FLOAT32,
                count: 1,
            })
            .collect();
        ros_msgs::PointCloud2 {
            header: ros_header(seq, stamp_ns),
            height: rings,
            width: points,
            fields,
            is_bigendian: false,
            point_step: POINT_STEP,
            row_step: points * POINT_STEP,
            data,
            is_dense: true,
        }
    }
    fn parts(&self) -> (u64, i64, &[u8]) {
        ros_parts(&self.header, &self.data)
    }
    fn refill(&mut self, seq: u64, stamp_ns: i64, data: &[u8]) {
        self.header = ros_header(seq, stamp_ns);
        refill_bytes(&mut self.data, data);
    }
}

fn ros_header(seq: u64, stamp_ns: i64) -> ros_msgs::Header {
    ros_msgs::Header {
        stamp: ros_msgs::Time::from_ns(stamp_ns),
        frame_id: seq.to_string(),
    }
}

/// A foreign frame_id that is no number reads as no sequence number of this bench.
fn ros_parts<'a>(header: &ros_msgs::Header, data: &'a [u8]) -> (u64, i64, &'a [u8]) {
    let seq = header.frame_id.parse().unwrap_or(u64::MAX);
    (seq, header.stamp.as_ns(), data)
}

pub(crate) fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_size() {
        let image: Shape = "image:640x480".parse().expect("image");
        assert_eq!(image.bytes(), 921_600);
        let cloud: Shape = "cloud:64x2048".parse().expect("cloud");
        assert_eq!(cloud.bytes(), 64 * 2048 * 16);
        assert!("image:640".parse::<Shape>().is_err());
        assert!("video:1x1".parse::<Shape>().is_err());
        assert!("image:0x5".parse::<Shape>().is_err());
    }

    #[test]
    fn pattern_matches_its_formula() {
        let p = Pattern::new(1000);
        for seq in [0u64, 1, 7, 255, 256, 12345] {
            let s = p.sample(seq);
            for (i, &b) in s.iter().enumerate() {
                assert_eq!(
                    b,
                    (seq.wrapping_mul(31) as usize + 7 * i) as u8,
                    "seq {seq} byte {i}"
                );
            }
        }
    }
}
