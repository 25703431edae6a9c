//! Shared-memory rings for large samples between a writer and readers on one host (the design:
//! docs/TRANSPORT.md, "Same-host shared memory for large samples"). One file per writer under
//! `/dev/shm`, named with the run id and the owner's pid so two runs cannot collide and a dead
//! owner's files can be found and removed.
//!
//! Layout: a header page (magic, version, slot count, slot size, owner pid) then the slots, each
//! a sequence number, a length and `slot_size` payload bytes. The writer makes a slot's sequence
//! odd while it writes and even (2 x the write's number + 2) when done; a reader checks the
//! sequence its descriptor names before and after reading, so a slot overwritten meanwhile is
//! reported lost, never read torn. Readers only read the slots: the file is mapped read-only
//! for them.
//!
//! Release table: after the header's fields, each reader that can open the file for writing
//! claims an entry (its pid and a number, and the sequence of the last sample it is done with)
//! in the header page. A writer whose same-host readers all hold entries reuses the most
//! recently written slot they are all done with, so a round trip or a steady stream keeps
//! writing the same few slots, warm in the cache, instead of walking the whole ring (1 MiB
//! round trip on the 2-core machine: 518 µs through 66 rotating slots, 344 µs through 2).
//! Otherwise, and whenever no slot is released, it writes the slot written longest ago, which
//! is the round robin the ring's size is made for. An entry is only ever a reason to hold a
//! slot back or to reuse it early: a wrong or stale one costs a lost sample, never a torn one.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};

mod reader;
pub use reader::RingReader;

/// Where the rings live.
pub const SHM_DIR: &str = "/dev/shm";
const MAGIC: u64 = u64::from_le_bytes(*b"CNVYSHM1");
const VERSION: u64 = 1;
/// The header's size: one page, so slots start page-aligned.
const HEADER: usize = 4096;
/// Each slot's sequence and length words before its payload.
const SLOT_HEAD: usize = 16;
/// Where the release table starts in the header page, and its entries: (owner, released), the
/// owner `pid << 32 | n` (0: free), released the sequence of the last sample the reader is done
/// with.
const RELEASES_AT: usize = 1024;
const RELEASE_ENTRIES: usize = 64;
const RELEASE_ENTRY: usize = 16;
/// How often a writer looks for entries of readers whose process is gone.
const RECLAIM_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a ring could not be made, opened or read. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("{}: not a convoy ring (bad magic or version)", path.display())]
    NotARing { path: PathBuf },
    #[error("{}: slot {slot} out of the ring's {slots}", path.display())]
    NoSlot {
        path: PathBuf,
        slot: u32,
        slots: u32,
    },
    #[error("{}: a {len}-byte sample does not fit a {size}-byte slot", path.display())]
    TooLarge {
        path: PathBuf,
        len: usize,
        size: usize,
    },
    /// The writer reused the slot before this reader got to it: the sample is lost.
    #[error("{}: slot {slot} was overwritten (wanted sequence {wanted}, found {found})", path.display())]
    Overwritten {
        path: PathBuf,
        slot: u32,
        wanted: u64,
        found: u64,
    },
}

/// Where one sample lies: what a descriptor on DDS carries besides the ring's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRef {
    pub slot: u32,
    pub seq: u64,
    pub len: u32,
}

/// A mapping of a ring file.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// The mapping is plain shared memory; every access to it goes through atomics or through
// copies bracketed by the slot's sequence check.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(file: &File, len: usize, writable: bool, path: &Path) -> Result<Mapping, ShmError> {
        use std::os::fd::AsRawFd;
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of a file we hold open, of its whole length; it is
        // unmapped exactly once, in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io(path, std::io::Error::last_os_error()));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    /// The 8-byte word at `offset` (8-aligned, inside the mapping) as an atomic.
    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.len);
        // SAFETY: in bounds and aligned (offsets are multiples of 8 from a page-aligned base);
        // AtomicU64 has the layout of u64 and the memory lives as long as `self`.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU64) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the pointer and length of our own successful mmap.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

fn io(path: &Path, e: std::io::Error) -> ShmError {
    ShmError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// What makes two processes "on one host" for shared memory: the kernel (hostname and boot
/// id) and the network namespace, so namespaces that stand for hosts in tests stay apart as
/// real hosts would. Sixteen hex digits (FNV-1a of the three), the same in every process of
/// the host and namespace; `None` where /proc cannot tell (then nothing is shared).
pub fn host_key() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let hostname = read("/proc/sys/kernel/hostname")?;
    let boot = read("/proc/sys/kernel/random/boot_id")?;
    let netns = std::fs::read_link("/proc/self/ns/net").ok()?;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("{hostname}\n{boot}\n{}", netns.display()).bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Some(format!("{hash:016x}"))
}

/// The file name of writer `writer`'s ring in run `run_id`, owned by this process.
pub fn ring_name(run_id: &str, writer: &str) -> String {
    format!(
        "convoy-{}-{}-{}",
        name_part(run_id),
        std::process::id(),
        name_part(writer)
    )
}

/// `text` with everything but ASCII letters and digits as `_` (a run id may hold `-`, which
/// separates the parts of a ring's name).
fn name_part(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The ring's geometry from its header.
struct Geometry {
    slots: u32,
    slot_size: usize,
}

impl Geometry {
    fn slot_offset(&self, slot: u32) -> usize {
        HEADER + slot as usize * (SLOT_HEAD + self.slot_size)
    }
    fn file_len(&self) -> usize {
        self.slot_offset(self.slots)
    }
}

/// The writing end of a ring. The file is removed when it is dropped.
pub struct RingWriter {
    path: PathBuf,
    map: Mapping,
    geometry: Geometry,
    writes: u64,
    /// The sequence each slot was last written with (0: never).
    written: Vec<u64>,
    /// Whether released slots may be written again before their turn (not where a late
    /// joiner is owed the history: TRANSIENT_LOCAL).
    reuse: bool,
    last_reclaim: std::time::Instant,
}

/// Allocates the file's pages now: a file only set to its length is sparse, and a write into
/// a page that /dev/shm has no room for kills the writer with SIGBUS (Docker's default
/// /dev/shm is 64 MiB; a 1440x960 camera's ring is ~75 MB). With them reserved, a ring that
/// does not fit is an error at its creation instead.
fn reserve(file: &File, len: usize) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let len =
        libc::off_t::try_from(len).map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a valid open descriptor and a byte range; posix_fallocate touches nothing else.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(errno)),
    }
}

impl RingWriter {
    /// Makes `dir/name` with `slots` slots of `slot_size` bytes (rounded up to 8), its pages
    /// reserved (no room in `dir` is an error here, not a SIGBUS later).
    pub fn create(
        dir: &Path,
        name: &str,
        slots: u32,
        slot_size: usize,
    ) -> Result<RingWriter, ShmError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(name);
        let geometry = Geometry {
            slots: slots.max(1),
            slot_size: slot_size.div_ceil(8) * 8,
        };
        // Owner only: a ring holds samples in the clear, those of a secured run's encrypted
        // topics included (docs/SECURITY.md); the run's nodes are one user's processes.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let made = (|| {
            file.set_len(geometry.file_len() as u64)
                .map_err(|e| io(&path, e))?;
            reserve(&file, geometry.file_len()).map_err(|e| io(&path, e))?;
            Mapping::new(&file, geometry.file_len(), true, &path)
        })();
        let map = match made {
            Ok(map) => map,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        map.word(8).store(VERSION, Ordering::Relaxed);
        map.word(16)
            .store(u64::from(geometry.slots), Ordering::Relaxed);
        map.word(24)
            .store(geometry.slot_size as u64, Ordering::Relaxed);
        map.word(32)
            .store(u64::from(std::process::id()), Ordering::Relaxed);
        // The magic last: a reader that sees it sees the rest.
        map.word(0).store(MAGIC, Ordering::Release);
        Ok(RingWriter {
            path,
            written: vec![0; geometry.slots as usize],
            map,
            geometry,
            writes: 0,
            reuse: true,
            last_reclaim: std::time::Instant::now(),
        })
    }

    /// Writes every slot in its turn, never one its readers released early: for a history a
    /// late-joining reader is owed.
    pub fn without_reuse(mut self) -> RingWriter {
        self.reuse = false;
        self
    }

    /// The slot the next write goes to, for `readers` matched same-host readers: the most
    /// recently written one every reader released, when every reader holds a release entry;
    /// else the one written longest ago.
    fn next_slot(&mut self, readers: usize) -> u32 {
        let oldest = (0..self.geometry.slots)
            .min_by_key(|&s| self.written[s as usize])
            .unwrap_or(0);
        if !self.reuse || readers == 0 {
            return oldest;
        }
        if self.last_reclaim.elapsed() >= RECLAIM_EVERY {
            self.last_reclaim = std::time::Instant::now();
            self.reclaim_dead_entries();
        }
        let (mut registered, mut released) = (0usize, u64::MAX);
        for entry in 0..RELEASE_ENTRIES {
            let at = RELEASES_AT + entry * RELEASE_ENTRY;
            if self.map.word(at).load(Ordering::Acquire) != 0 {
                registered += 1;
                released = released.min(self.map.word(at + 8).load(Ordering::Acquire));
            }
        }
        if registered < readers {
            // A reader without an entry (not yet read, or its file opened read-only) may still
            // want any slot.
            return oldest;
        }
        (0..self.geometry.slots)
            .filter(|&s| self.written[s as usize] <= released)
            .max_by_key(|&s| self.written[s as usize])
            .unwrap_or(oldest)
    }

    /// Frees the entries whose reader's process is gone (it was SIGKILLed): each would hold
    /// back every slot written since it stopped.
    fn reclaim_dead_entries(&self) {
        for entry in 0..RELEASE_ENTRIES {
            let owner = self.map.word(RELEASES_AT + entry * RELEASE_ENTRY);
            let tag = owner.load(Ordering::Acquire);
            if tag != 0 && !process_alive((tag >> 32) as i32) {
                let _ = owner.compare_exchange(tag, 0, Ordering::AcqRel, Ordering::Relaxed);
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The largest sample a slot holds.
    pub fn slot_size(&self) -> usize {
        self.geometry.slot_size
    }

    /// Copies `payload` into the next slot (for `readers` same-host readers) and says where it
    /// lies.
    pub fn write(&mut self, payload: &[u8], readers: usize) -> Result<SlotRef, ShmError> {
        self.write_with(payload.len(), readers, |slot| {
            slot.copy_from_slice(payload);
            true
        })
    }

    /// Lets `fill` write `len` bytes straight into the next slot for `readers` matched
    /// same-host readers (no buffer in between) and says where they lie; `fill` returning false
    /// leaves the slot unpublished (stale to any descriptor) and is an error.
    pub fn write_with(
        &mut self,
        len: usize,
        readers: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<SlotRef, ShmError> {
        if len > self.geometry.slot_size || len > u32::MAX as usize {
            return Err(ShmError::TooLarge {
                path: self.path.clone(),
                len,
                size: self.geometry.slot_size,
            });
        }
        let slot = self.next_slot(readers);
        let seq = 2 * self.writes + 2;
        self.written[slot as usize] = seq;
        let at = self.geometry.slot_offset(slot);
        let sequence = self.map.word(at);
        sequence.store(seq - 1, Ordering::Relaxed);
        // Readers that load the odd sequence, or a later one, see the slot as busy.
        fence(Ordering::Release);
        self.map.word(at + 8).store(len as u64, Ordering::Relaxed);
        // SAFETY: the payload area of this slot, in bounds (len <= slot_size), written only by
        // this writer (one RingWriter per file, `&mut self`); readers never trust it without
        // the sequence check around their read.
        let slot_bytes =
            unsafe { std::slice::from_raw_parts_mut(self.map.ptr.add(at + SLOT_HEAD), len) };
        self.writes += 1;
        if !fill(slot_bytes) {
            // Left odd: busy to every reader, and the next write of this slot moves past it.
            return Err(ShmError::Io {
                path: self.path.clone(),
                message: "the sample could not be written into its slot".into(),
            });
        }
        sequence.store(seq, Ordering::Release);
        Ok(SlotRef {
            slot,
            seq,
            len: len as u32,
        })
    }
}

impl Drop for RingWriter {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether process `pid` exists (kill(pid, 0) fails with ESRCH when it does not).
fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes the rings in `dir` of run `run_id` (of any run: `None`) whose owner is gone, or all
/// of the run's with `all`: a node at start sweeps every run's dead rings, a launcher all of
/// its run's at the end. Returns the names removed.
pub fn sweep(dir: &Path, run_id: Option<&str>, all: bool) -> Vec<String> {
    let prefix = match run_id {
        Some(run) => format!("convoy-{}-", name_part(run)),
        None => "convoy-".to_string(),
    };
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        // The owner's pid: the part after the run id (which has no `-` in a ring's name).
        let owner_part = match run_id {
            Some(_) => rest.split('-').next(),
            None => rest.split('-').nth(1),
        };
        let owner = owner_part.and_then(|p| p.parse::<i32>().ok());
        let alive = owner.is_some_and(process_alive);
        if (all || !alive) && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(name);
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A fresh directory for one test's rings, removed when the test ends.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("convoy-shm-test-{name}-"))
            .tempdir()
            .expect("scratch")
    }

    #[test]
    fn a_reader_gets_what_the_writer_wrote_until_the_slot_is_reused() {
        let scratch = scratch("ring");
        let dir = scratch.path();
        let mut writer =
            RingWriter::create(dir, &ring_name("r1", "cam/front"), 2, 100).expect("ring");
        let reader = RingReader::open(writer.path()).expect("open");
        // No same-host reader counted by the writer: every slot in its turn.
        let a = writer.write(b"first", 0).expect("write");
        let b = writer.write(&[7u8; 100], 0).expect("write");
        assert_eq!(reader.read(a, |s| s.to_vec()).expect("a"), b"first");
        assert_eq!(reader.read(b, |s| s.to_vec()).expect("b"), vec![7u8; 100]);
        // A third write reuses a's slot: a is lost, named as such.
        let c = writer.write(b"third", 0).expect("write");
        assert_eq!(c.slot, a.slot);
        assert!(matches!(
            reader.read(a, |s| s.len()),
            Err(ShmError::Overwritten { .. })
        ));
        assert_eq!(reader.read(c, |s| s.to_vec()).expect("c"), b"third");
        // Slots round up to 8 bytes: 104 here.
        assert!(matches!(
            writer.write(&[0u8; 105], 0),
            Err(ShmError::TooLarge { len: 105, .. })
        ));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(writer.path())
            .expect("ring")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "a ring readable by other users");
        let path = writer.path().to_path_buf();
        drop(writer);
        assert!(!path.exists(), "the writer's file outlived it");
        // The reader's mapping stays valid after the file is gone.
        assert_eq!(reader.read(c, |s| s.to_vec()).expect("c"), b"third");
    }

    #[test]
    fn released_slots_are_written_again_and_held_ones_are_not() {
        let scratch = scratch("release");
        let dir = scratch.path();
        let mut writer = RingWriter::create(dir, &ring_name("r4", "ping"), 6, 64).expect("ring");
        let reader = RingReader::open(writer.path()).expect("open");
        assert!(reader.release.is_some(), "no release entry");
        // One reader that reads each sample before the next is written: one slot, warm.
        let mut slots = BTreeSet::new();
        for i in 0..20u8 {
            let at = writer.write(&[i; 8], 1).expect("write");
            assert_eq!(reader.read(at, |b| b[0]).expect("read"), i);
            slots.insert(at.slot);
        }
        assert_eq!(slots.len(), 1, "slots used: {slots:?}");
        // Samples not yet read are held: the next writes go elsewhere, each readable after.
        let held: Vec<SlotRef> = (0..5u8)
            .map(|i| writer.write(&[i; 8], 1).expect("write"))
            .collect();
        let distinct: BTreeSet<u32> = held.iter().map(|at| at.slot).collect();
        assert_eq!(distinct.len(), 5, "{held:?}");
        for (i, at) in (0u8..).zip(&held) {
            assert_eq!(reader.read(*at, |b| b[0]).expect("held sample"), i);
        }
        // Two readers counted and one entry: round robin, the oldest slot first.
        let before = writer.written.clone();
        let at = writer.write(b"x", 2).expect("write");
        let oldest = (0..6u32)
            .min_by_key(|&s| before[s as usize])
            .expect("a slot");
        assert_eq!(at.slot, oldest);
        // A dropped reader frees its entry; a fresh one holds every slot until it reads.
        drop(reader);
        let second = RingReader::open(writer.path()).expect("open");
        let first = writer.write(b"y", 1).expect("write");
        let next = writer.write(b"z", 1).expect("write");
        assert_ne!(first.slot, next.slot);
        assert_eq!(second.read(first, |b| b.to_vec()).expect("y"), b"y");
        assert_eq!(second.read(next, |b| b.to_vec()).expect("z"), b"z");
    }

    #[test]
    fn an_entry_of_a_dead_reader_is_reclaimed() {
        let scratch = scratch("reclaim");
        let dir = scratch.path();
        let mut writer = RingWriter::create(dir, &ring_name("r5", "img"), 4, 8).expect("ring");
        // An entry left by a SIGKILLed reader: a pid beyond pid_max, nothing released.
        let at = RELEASES_AT;
        writer
            .map
            .word(at)
            .store(99_999_999u64 << 32 | 1, Ordering::Release);
        let reader = RingReader::open(writer.path()).expect("open");
        let mut slots = BTreeSet::new();
        for i in 0..8u8 {
            let s = writer.write(&[i], 1).expect("write");
            reader.read(s, |_| ()).expect("read");
            slots.insert(s.slot);
        }
        // Held back by the dead entry (never released), the writer went round every slot.
        assert_eq!(slots.len(), 4);
        writer.last_reclaim -= RECLAIM_EVERY;
        let a = writer.write(b"a", 1).expect("write");
        reader.read(a, |_| ()).expect("read");
        let b = writer.write(b"b", 1).expect("write");
        assert_eq!(
            a.slot, b.slot,
            "the dead reader's entry still holds slots back"
        );
        assert_eq!(writer.map.word(at).load(Ordering::Acquire), 0);
    }

    #[test]
    fn bad_files_and_descriptors_are_errors_naming_the_file() {
        let scratch = scratch("bad");
        let dir = scratch.path();
        let junk = dir.join("convoy-r2-1-junk");
        std::fs::write(&junk, vec![1u8; 8192]).expect("write");
        assert!(matches!(
            RingReader::open(&junk),
            Err(ShmError::NotARing { .. })
        ));
        std::fs::write(&junk, b"short").expect("write");
        assert!(matches!(
            RingReader::open(&junk),
            Err(ShmError::NotARing { .. })
        ));
        let missing = RingReader::open(&dir.join("missing"))
            .err()
            .expect("missing");
        assert!(missing.to_string().contains("missing"), "{missing}");
        let writer = RingWriter::create(dir, "convoy-r2-ring", 2, 16).expect("ring");
        let reader = RingReader::open(writer.path()).expect("open");
        let bad = SlotRef {
            slot: 9,
            seq: 2,
            len: 4,
        };
        assert!(matches!(
            reader.read(bad, |_| ()),
            Err(ShmError::NoSlot { slot: 9, .. })
        ));
        // A slot never written has sequence 0: any descriptor for it is stale.
        let never = SlotRef {
            slot: 1,
            seq: 4,
            len: 4,
        };
        assert!(matches!(
            reader.read(never, |_| ()),
            Err(ShmError::Overwritten { found: 0, .. })
        ));
        // The same name twice is refused (two writers never share a ring).
        assert!(RingWriter::create(dir, "convoy-r2-ring", 2, 16).is_err());
    }

    #[test]
    fn the_host_key_is_stable_and_names_the_network_namespace() {
        let key = host_key().expect("a host key from /proc");
        assert_eq!(key.len(), 16);
        assert_eq!(Some(key), host_key());
    }

    #[test]
    fn a_sweep_removes_the_rings_of_dead_owners_and_only_of_its_run() {
        let scratch = scratch("sweep");
        let dir = scratch.path();
        // A pid that cannot be alive (beyond the kernel's pid_max of 2^22).
        std::fs::write(dir.join("convoy-run1-99999999-cam"), b"x").expect("write");
        std::fs::write(dir.join("convoy-run2-99999999-cam"), b"x").expect("write");
        let live = RingWriter::create(dir, &ring_name("run1", "lidar"), 1, 8).expect("ring");
        assert_eq!(
            sweep(dir, Some("run1"), false),
            ["convoy-run1-99999999-cam"]
        );
        assert!(live.path().exists(), "a live owner's ring was removed");
        assert!(
            dir.join("convoy-run2-99999999-cam").exists(),
            "another run's ring was removed"
        );
        let name = live
            .path()
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert_eq!(sweep(dir, Some("run1"), true), [name]);
        // Any run's dead rings, and nothing alive.
        let live = RingWriter::create(dir, &ring_name("run-3", "lidar"), 1, 8).expect("ring");
        assert_eq!(sweep(dir, None, false), ["convoy-run2-99999999-cam"]);
        assert!(live.path().exists());
        assert!(live.path().to_string_lossy().contains("convoy-run_3-"));
    }
}
