//! A frame being copied back from the GPU, and the images it gives.

use super::gpu::{for_each_row, TargetPool, Targets};
use super::*;

/// A frame rendered and being copied back: [`PendingFrame::wait`] (on any thread) gives its
/// images. Meanwhile the renderer can draw the next frame into another target set, so
/// rendering overlaps reading back. Its target set returns to the pool when it is done.
pub struct PendingFrame {
    pub(super) device: wgpu::Device,
    pub(super) targets: Option<Targets>,
    pub(super) pool: TargetPool,
    pub(super) size: (u32, u32),
    pub(super) depth: bool,
    pub(super) semantic: bool,
    pub(super) mapped: std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    pub(super) maps: usize,
}

impl std::fmt::Debug for PendingFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingFrame({}x{})", self.size.0, self.size.1)
    }
}

impl PendingFrame {
    /// Waits for the copies and returns the images.
    pub fn wait(mut self) -> Result<CameraImages, CameraError> {
        let result = self.read();
        self.give_back();
        result
    }

    pub(super) fn read(&mut self) -> Result<CameraImages, CameraError> {
        let (w, h) = self.size;
        self.device
            .poll(wgpu::PollType::Wait)
            .map_err(|e| CameraError::Readback(format!("{e:?}")))?;
        for _ in 0..self.maps {
            self.mapped
                .recv()
                .map_err(|e| CameraError::Readback(e.to_string()))?
                .map_err(|e| CameraError::Readback(e.to_string()))?;
        }
        let t = self
            .targets
            .as_ref()
            .ok_or_else(|| CameraError::Readback("targets already returned".into()))?;
        // Straight from the mapped buffers into the outputs, one pass each: at 1440x960 an
        // intermediate RGBA copy and a per-byte collect cost milliseconds per image.
        let pixels = w as usize * h as usize;
        let mut rgb = vec![0u8; pixels * 3];
        let mut out_rows = rgb.chunks_exact_mut(w as usize * 3);
        for_each_row(&t.colour_buf, w * 4, h, |row| {
            if let Some(out) = out_rows.next() {
                for (o, p) in out.chunks_exact_mut(3).zip(row.chunks_exact(4)) {
                    o.copy_from_slice(&p[..3]);
                }
            }
        });
        let mut depth = Vec::new();
        if self.depth {
            depth.reserve_exact(pixels);
            for_each_row(&t.depth_buf, w * 4, h, |row| {
                depth.extend(
                    row.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            });
        }
        let mut class = Vec::new();
        if self.semantic {
            class.reserve_exact(pixels);
            for_each_row(&t.class_buf, w, h, |row| class.extend_from_slice(row));
        }
        Ok(CameraImages {
            width: w,
            height: h,
            rgb,
            depth,
            class,
        })
    }

    /// Unmaps the buffers and returns the target set to the pool (also when dropped unread).
    pub(super) fn give_back(&mut self) {
        let Some(t) = self.targets.take() else {
            return;
        };
        // Mapping must have finished before unmapping; a poll completes it.
        let _ = self.device.poll(wgpu::PollType::Wait);
        for (mapped, buffer) in [
            (true, &t.colour_buf),
            (self.depth, &t.depth_buf),
            (self.semantic, &t.class_buf),
        ] {
            if mapped {
                buffer.unmap();
            }
        }
        if let Ok(mut pool) = self.pool.lock() {
            pool.entry(self.size).or_default().push(t);
        }
    }
}

impl Drop for PendingFrame {
    fn drop(&mut self) {
        self.give_back();
    }
}
