//! The shared-memory lane of a large-sample topic `T` (images, clouds): for readers on the
//! writer's host, the sample goes into the writer's ring ([`super::shm`]) and a small
//! [`ShmSample`] on `T/shm` says where, with `T`'s QoS, so ordering, lockstep and history stay
//! DDS's. Every other reader (another host, another DDS) gets `T` as before; the two never
//! overlap, since same-host convoy endpoints of `T` do not match (vendored rustdds change 58).
//! docs/TRANSPORT.md, "Same-host shared memory for large samples".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rustdds::{Timestamp, GUID};

use super::shm::{self, RingReader, RingWriter, SlotRef, SHM_DIR};
use super::subscriber::ReaderStats;
use super::wire;
use super::{PublishError, Publisher, Subscriber};
use crate::messages::{Message, ShmSample};

/// This process's host key and ring run name when large samples take the lane here (`CONVOY_SHM`
/// on, the default, and /proc tells the host), read once; the dead rings of earlier processes
/// are swept then.
pub(super) fn lane_host() -> Option<&'static (String, String)> {
    static HOST: std::sync::OnceLock<Option<(String, String)>> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let on = super::TransportSettings::from_env().map_or(true, |s| s.shm);
        let host = shm::host_key().filter(|_| on)?;
        let run = super::run_scope::RunId::from_env()
            .ok()
            .flatten()
            .map_or_else(|| "tool".to_string(), |id| id.as_str().to_string());
        let removed = shm::sweep(std::path::Path::new(SHM_DIR), None, false);
        if !removed.is_empty() {
            tracing::info!(
                "removed {} shared-memory rings of processes that died",
                removed.len()
            );
        }
        Some((host, run))
    })
    .as_ref()
}

/// The history depth a lane's ring must cover.
pub(super) fn depth_of(qos: &crate::qos::EndpointQos) -> u32 {
    match qos.history {
        crate::qos::History::KeepLast(depth) => depth,
        crate::qos::History::KeepAll => 32,
    }
}

/// Whether samples of `type_name` on `topic` take the lane: images and clouds everywhere, and
/// the latency bench's large samples. Small messages do not: a descriptor and a slot cost a
/// 64 B round trip more than the sample itself over DDS (27-35 µs against 43-62 µs on the
/// 2-core machine).
pub(super) fn rides_shm(type_name: &str, topic: &str) -> bool {
    match type_name {
        "convoy::Image" | "convoy::PointCloud" => true,
        "convoy::BenchSample" => {
            topic == crate::topics::BENCH_LARGE_PING || topic == crate::topics::BENCH_LARGE_PONG
        }
        _ => false,
    }
}

/// The descriptors' topic beside `topic`.
pub(super) fn ring_topic(topic: &str) -> String {
    format!("{topic}/shm")
}

/// The `shm=` USER_DATA entry of a topic's ordinary endpoint (`net`) or of its descriptors'
/// endpoint (`ring`) on host `host`.
pub(super) fn locality(kind: &str, host: &str) -> Vec<u8> {
    format!("shm={kind}:{host};").into_bytes()
}

/// Rings kept mapped by one reader; past this, the cache starts over (a writer that grew its
/// ring or restarted left old ones behind).
const MAPPED_RINGS: usize = 16;

/// Slots per ring: the history depth twice over and two in flight, so a reader within its QoS
/// history never finds its slot reused.
fn slots_for(depth: u32) -> u32 {
    depth.clamp(1, 64) * 2 + 2
}

/// The writing end: the ring (made on the first write, remade larger when a sample outgrows
/// it) and the descriptors' publisher.
pub(super) struct WriterLane {
    descriptors: Publisher<ShmSample>,
    ring: Option<RingWriter>,
    run: String,
    topic: String,
    slots: u32,
    /// Whether the ring may write slots its readers released before their turn.
    reuse: bool,
    /// Set once a ring could not be made: samples go inside their descriptors.
    inline: bool,
}

impl WriterLane {
    pub(super) fn new(
        descriptors: Publisher<ShmSample>,
        run: &str,
        topic: &str,
        depth: u32,
        reuse: bool,
    ) -> Self {
        WriterLane {
            descriptors,
            ring: None,
            run: run.to_string(),
            topic: topic.to_string(),
            slots: slots_for(depth),
            reuse,
            inline: false,
        }
    }

    pub(super) fn descriptors(&self) -> &Publisher<ShmSample> {
        &self.descriptors
    }

    /// The same-host readers matched now (none: [`WriterLane::write`] is not worth it). Counted
    /// once per write and handed to it: each count walks the participant's discovered readers.
    pub(super) fn readers(&self) -> usize {
        self.descriptors.matched_readers()
    }

    /// Puts `message` in the ring for `readers` same-host readers and tells them where.
    pub(super) fn write<M: Message>(
        &mut self,
        message: &M,
        readers: usize,
    ) -> Result<(), PublishError> {
        let len = wire::encoded_len(message).map_err(|e| PublishError::Encode {
            topic: self.topic.clone(),
            reason: e.to_string(),
        })?;
        // Encoded straight into the slot: no buffer and copy of a 4 MB image in between.
        self.write_with(len, readers, |slot| {
            wire::encode_into(message, slot).is_ok()
        })
    }

    /// Lets `fill` write a sample's `len` encoded bytes straight into the next slot for
    /// `readers` same-host readers (making a larger ring first when it does not fit) and tells
    /// them where. Where
    /// /dev/shm has no room for a ring, the bytes go inside the descriptor instead (the
    /// same-host readers get nothing over `T` itself), and the lane stays so.
    pub(super) fn write_with(
        &mut self,
        len: usize,
        readers: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<(), PublishError> {
        let topic = &self.topic;
        let fits = self.ring.as_ref().is_some_and(|r| r.slot_size() >= len);
        if !fits && !self.inline {
            // Numbered across the process: two writers of one topic in one process each get
            // a ring of their own.
            static RINGS: AtomicU32 = AtomicU32::new(0);
            let n = RINGS.fetch_add(1, Ordering::Relaxed) + 1;
            let name = shm::ring_name(&self.run, &format!("{topic}-{n}"));
            // A little room to grow: an image's size is fixed, a cloud's varies per scan.
            let size = len + len / 8 + 64;
            match RingWriter::create(std::path::Path::new(SHM_DIR), &name, self.slots, size) {
                Ok(ring) if self.reuse => self.ring = Some(ring),
                Ok(ring) => self.ring = Some(ring.without_reuse()),
                Err(e) => {
                    tracing::warn!(
                        "{topic}: no shared-memory ring ({e}); its samples go to same-host \
                         readers inside their descriptors, over DDS"
                    );
                    self.ring = None;
                    self.inline = true;
                }
            }
        }
        let Some(ring) = self.ring.as_mut() else {
            let mut payload = vec![0; len];
            if !fill(&mut payload) {
                return Err(PublishError::Encode {
                    topic: topic.clone(),
                    reason: "the sample could not be encoded".into(),
                });
            }
            return self.descriptors.write(ShmSample {
                len: len as u32,
                payload,
                ..ShmSample::default()
            });
        };
        let at = ring
            .write_with(len, readers, fill)
            .map_err(|e| PublishError::Dds {
                topic: topic.clone(),
                reason: e.to_string(),
            })?;
        let name = ring
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.descriptors.write(ShmSample {
            ring: name,
            slot: at.slot,
            seq: at.seq,
            len: at.len,
            payload: Vec::new(),
        })
    }
}

/// The reading end: the descriptors' subscriber and the rings it has mapped.
pub(super) struct ReaderLane {
    pub(super) descriptors: Subscriber<ShmSample>,
    rings: HashMap<String, RingReader>,
    /// The descriptors' own lost count, as last added to the reader's.
    descriptors_lost: AtomicU64,
}

impl ReaderLane {
    pub(super) fn new(descriptors: Subscriber<ShmSample>) -> Self {
        ReaderLane {
            descriptors,
            rings: HashMap::new(),
            descriptors_lost: AtomicU64::new(0),
        }
    }

    /// Takes up to `max` samples that are there now, each what `read` makes of its bytes in
    /// their slot (given its source time and writer): a decoded value, or whatever a view of
    /// the bytes in place gives. A descriptor whose slot the writer reused before or while
    /// `read` ran counts as lost, and what `read` made of it is dropped (it may have seen two
    /// samples mixed); one that names no readable ring, or whose bytes do not decode, is
    /// handed to `log` (which counts and names it: a decode error).
    pub(super) fn take_with<R>(
        &mut self,
        max: usize,
        stats: &ReaderStats,
        mut log: impl FnMut(&str),
        mut read: impl FnMut(&[u8], Option<Timestamp>, GUID) -> Result<R, wire::WireError>,
        out: &mut Vec<(R, Option<Timestamp>, GUID)>,
    ) {
        for got in self.descriptors.take(max) {
            let d = got.value;
            if d.ring.is_empty() {
                // A writer without a ring: the sample is inside its descriptor.
                match read(&d.payload, got.source_timestamp, got.writer) {
                    Ok(value) => out.push((value, got.source_timestamp, got.writer)),
                    Err(e) => log(&e.to_string()),
                }
                continue;
            }
            // Only a plain convoy ring name under /dev/shm: a descriptor names no other file.
            if !d.ring.starts_with("convoy-") || d.ring.contains('/') || d.ring.len() > 255 {
                log(&format!("descriptor names '{}', not a convoy ring", d.ring));
                continue;
            }
            if !self.rings.contains_key(&d.ring) {
                if self.rings.len() >= MAPPED_RINGS {
                    self.rings.clear();
                }
                match RingReader::open(&std::path::Path::new(SHM_DIR).join(&d.ring)) {
                    Ok(ring) => {
                        self.rings.insert(d.ring.clone(), ring);
                    }
                    Err(e) => {
                        log(&e.to_string());
                        continue;
                    }
                }
            }
            let Some(ring) = self.rings.get(&d.ring) else {
                continue;
            };
            let at = SlotRef {
                slot: d.slot,
                seq: d.seq,
                len: d.len,
            };
            match ring.read(at, |bytes| read(bytes, got.source_timestamp, got.writer)) {
                Ok(Ok(value)) => out.push((value, got.source_timestamp, got.writer)),
                Ok(Err(e)) => log(&e.to_string()),
                Err(shm::ShmError::Overwritten { .. }) => {
                    stats.lost.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => log(&e.to_string()),
            }
        }
        // Descriptors overwritten in their own history before they were taken are samples this
        // reader lost, as they would be over `T` itself.
        let lost = super::subscriber::ReaderStats::get(&self.descriptors.stats().lost);
        let new = lost.saturating_sub(self.descriptors_lost.swap(lost, Ordering::Relaxed));
        stats.lost.fetch_add(new, Ordering::Relaxed);
    }
}
