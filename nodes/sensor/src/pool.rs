//! Reused buffers for large payloads (images, point clouds), so a sensor does not allocate a
//! few megabytes per frame.
//!
//! [`BufferPool::take`] hands out a [`PooledBuffer`], a `Vec<u8>` of `buffer_len` bytes that
//! goes back to the pool when dropped, wherever that happens (usually on a dispatcher worker
//! after publishing). A buffer's contents are whatever its last user left: a producer writes
//! every byte it publishes. At most `max_buffers` idle buffers are kept; surplus ones are
//! freed, so a burst does not pin memory forever.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

struct Inner {
    buffer_len: usize,
    max_buffers: usize,
    idle: Mutex<Vec<Vec<u8>>>,
    allocations: AtomicU64,
}

impl Inner {
    fn give_back(&self, mut buf: Vec<u8>) {
        // A buffer that was shrunk below the pool's size would make the next taker reallocate.
        if buf.capacity() < self.buffer_len {
            return;
        }
        buf.resize(self.buffer_len, 0);
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_buffers {
            idle.push(buf);
        }
    }
}

/// A pool of equally sized byte buffers; clones share the same pool.
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<Inner>,
}

impl BufferPool {
    /// A pool of `buffer_len`-byte buffers keeping at most `max_buffers` idle ones.
    pub fn new(buffer_len: usize, max_buffers: usize) -> Self {
        BufferPool {
            inner: Arc::new(Inner {
                buffer_len,
                max_buffers,
                idle: Mutex::new(Vec::new()),
                allocations: AtomicU64::new(0),
            }),
        }
    }

    pub fn buffer_len(&self) -> usize {
        self.inner.buffer_len
    }

    /// An idle buffer, or a newly allocated one when none is idle.
    pub fn take(&self) -> PooledBuffer {
        let reused = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let buf = reused.unwrap_or_else(|| {
            self.inner.allocations.fetch_add(1, Ordering::Relaxed);
            vec![0; self.inner.buffer_len]
        });
        PooledBuffer {
            buf,
            pool: Arc::clone(&self.inner),
        }
    }

    /// How many buffers this pool has allocated so far.
    pub fn allocations(&self) -> u64 {
        self.inner.allocations.load(Ordering::Relaxed)
    }

    /// How many buffers are idle in the pool now.
    pub fn idle(&self) -> usize {
        self.inner
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// A buffer on loan from a [`BufferPool`]; it returns there when dropped.
pub struct PooledBuffer {
    buf: Vec<u8>,
    pool: Arc<Inner>,
}

impl PooledBuffer {
    /// Keeps the buffer for good (e.g. to move it into a message); the pool does not get it
    /// back.
    pub fn into_vec(mut self) -> Vec<u8> {
        // Leaves an empty Vec behind, which give_back rejects for its capacity.
        std::mem::take(&mut self.buf)
    }
}

impl Deref for PooledBuffer {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.buf
    }
}

impl DerefMut for PooledBuffer {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        self.pool.give_back(buf);
    }
}

impl std::fmt::Debug for PooledBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBuffer")
            .field("len", &self.buf.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_pool_does_not_allocate_per_frame() {
        let pool = BufferPool::new(1 << 20, 4);
        for i in 0..100u8 {
            let mut b = pool.take();
            assert_eq!(b.len(), 1 << 20);
            b[0] = i;
        }
        assert_eq!(pool.allocations(), 1);
        assert_eq!(pool.idle(), 1);
    }

    #[test]
    fn two_in_flight_allocate_two() {
        let pool = BufferPool::new(1024, 4);
        let mut held = pool.take();
        for _ in 0..100 {
            let next = pool.take();
            // Like a double buffer: the previous one goes back when the next is in hand.
            held = next;
        }
        drop(held);
        assert_eq!(pool.allocations(), 2);
    }

    #[test]
    fn into_vec_keeps_buffer_out_of_pool() {
        let pool = BufferPool::new(16, 4);
        let v = pool.take().into_vec();
        assert_eq!(v.len(), 16);
        assert_eq!(pool.idle(), 0);
        let _ = pool.take();
        assert_eq!(pool.allocations(), 2);
    }

    #[test]
    fn surplus_buffers_are_freed() {
        let pool = BufferPool::new(16, 2);
        let bufs: Vec<_> = (0..5).map(|_| pool.take()).collect();
        drop(bufs);
        assert_eq!(pool.idle(), 2);
    }

    #[test]
    fn shrunk_buffer_comes_back_full_size() {
        let pool = BufferPool::new(64, 2);
        let mut b = pool.take();
        b.truncate(3);
        drop(b);
        assert_eq!(pool.take().len(), 64);
        assert_eq!(pool.allocations(), 1);
    }
}
