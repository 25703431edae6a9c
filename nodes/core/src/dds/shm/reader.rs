//! The reading end of a shared-memory ring: opening a writer's file read-only, checking a
//! descriptor's slot before and after the copy, and the release-table entry that tells the
//! writer which samples this reader is done with (the layout: the parent module).

use super::*;

/// The reading end of a ring (its slots mapped read-only).
pub struct RingReader {
    path: PathBuf,
    map: Mapping,
    geometry: Geometry,
    /// This reader's entry in the release table, when the file could be opened for writing
    /// and an entry was free: (the header page mapped writable, the entry's offset).
    pub(super) release: Option<(Mapping, usize)>,
}

impl RingReader {
    pub fn open(path: &Path) -> Result<RingReader, ShmError> {
        use std::os::unix::fs::OpenOptionsExt;
        // Not blocking (a FIFO named like a ring would block a plain open forever) and not
        // following a link out of /dev/shm; then only a regular file is a ring.
        let open = |write: bool| {
            OpenOptions::new()
                .read(true)
                .write(write)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                .open(path)
        };
        // Writable for the release table where the file allows it; the slots are mapped
        // read-only either way.
        let (file, writable) = match open(true) {
            Ok(file) => (file, true),
            Err(_) => (open(false).map_err(|e| io(path, e))?, false),
        };
        let metadata = file.metadata().map_err(|e| io(path, e))?;
        if !metadata.is_file() {
            return Err(ShmError::NotARing {
                path: path.to_path_buf(),
            });
        }
        let len = metadata.len() as usize;
        if len < HEADER {
            return Err(ShmError::NotARing {
                path: path.to_path_buf(),
            });
        }
        let map = Mapping::new(&file, len, false, path)?;
        if map.word(0).load(Ordering::Acquire) != MAGIC
            || map.word(8).load(Ordering::Relaxed) != VERSION
        {
            return Err(ShmError::NotARing {
                path: path.to_path_buf(),
            });
        }
        let geometry = Geometry {
            slots: map.word(16).load(Ordering::Relaxed) as u32,
            slot_size: usize::try_from(map.word(24).load(Ordering::Relaxed))
                .unwrap_or(usize::MAX / 2),
        };
        // A header from outside is checked with checked arithmetic: a corrupt one is an error,
        // not an overflow.
        let expected = (SLOT_HEAD + geometry.slot_size)
            .checked_mul(geometry.slots as usize)
            .and_then(|slots| slots.checked_add(HEADER));
        if expected != Some(len) || !geometry.slot_size.is_multiple_of(8) {
            return Err(ShmError::NotARing {
                path: path.to_path_buf(),
            });
        }
        let release = if writable {
            claim_entry(&file, path)
        } else {
            None
        };
        Ok(RingReader {
            path: path.to_path_buf(),
            map,
            geometry,
            release,
        })
    }

    /// Tells the writer this reader is done with the sample of sequence `seq` and every one
    /// before it (a reader takes one writer's samples in order).
    fn release(&self, seq: u64) {
        if let Some((header, at)) = &self.release {
            header.word(at + 8).fetch_max(seq, Ordering::Release);
        }
    }

    /// Hands the sample at `at` to `read` and returns what it made, or `Overwritten` when the
    /// writer reused the slot before or while `read` ran (then `read`'s result is dropped: it
    /// may have seen a mix of two samples).
    pub fn read<T>(&self, at: SlotRef, read: impl FnOnce(&[u8]) -> T) -> Result<T, ShmError> {
        if at.slot >= self.geometry.slots {
            return Err(ShmError::NoSlot {
                path: self.path.clone(),
                slot: at.slot,
                slots: self.geometry.slots,
            });
        }
        let offset = self.geometry.slot_offset(at.slot);
        let sequence = self.map.word(offset);
        let overwritten = |found: u64| ShmError::Overwritten {
            path: self.path.clone(),
            slot: at.slot,
            wanted: at.seq,
            found,
        };
        let before = sequence.load(Ordering::Acquire);
        if before != at.seq {
            self.release(at.seq);
            return Err(overwritten(before));
        }
        let len = (self.map.word(offset + 8).load(Ordering::Relaxed) as usize)
            .min(self.geometry.slot_size)
            .min(at.len as usize);
        // SAFETY: in bounds of the mapping (len <= slot_size); the bytes may change under us if
        // the writer laps this reader, which the sequence check below turns into an error.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.map.ptr.add(offset + SLOT_HEAD), len) };
        let made = read(bytes);
        fence(Ordering::Acquire);
        let after = sequence.load(Ordering::Relaxed);
        self.release(at.seq);
        if after != at.seq {
            return Err(overwritten(after));
        }
        Ok(made)
    }
}

impl Drop for RingReader {
    fn drop(&mut self) {
        if let Some((header, at)) = &self.release {
            header.word(*at).store(0, Ordering::Release);
        }
    }
}

/// Claims a free entry of the release table of the ring open (writable) as `file`: the header
/// page mapped writable and the entry's offset; None when every entry is taken or the page
/// cannot be mapped (the reader then only reads, and the writer keeps to round robin).
fn claim_entry(file: &File, path: &Path) -> Option<(Mapping, usize)> {
    static READERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let header = Mapping::new(file, HEADER, true, path).ok()?;
    let tag =
        (u64::from(std::process::id()) << 32) | u64::from(READERS.fetch_add(1, Ordering::Relaxed));
    (0..RELEASE_ENTRIES)
        .map(|entry| RELEASES_AT + entry * RELEASE_ENTRY)
        .find(|&at| {
            // Released 0 before the owner: the writer never sees this entry with another
            // reader's progress.
            let owner = header.word(at);
            if owner.load(Ordering::Acquire) != 0 {
                return false;
            }
            header.word(at + 8).store(0, Ordering::Release);
            owner
                .compare_exchange(0, tag, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
        .map(|at| (header, at))
}
