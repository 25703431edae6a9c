//! Frames on their way back from the device: the renderer's read-back thread waits for each
//! submission, converts its frames' mapped buffers into the images' bytes and hands each frame
//! to whoever waits for it ([`PendingFrame::wait`]), so the node thread goes on and the
//! publishing threads only publish.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::gpu::{rgb_image, rows, TargetPool, Targets};
use super::*;

/// How long the stages of one frame took (`crate::stages`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadTimes {
    /// Recording the frame's draw and copies, and its share of the submission.
    pub submit: Duration,
    /// From the submission until the device finished it.
    pub gpu: Duration,
    /// Mapping the read-back buffers and giving them back.
    pub map: Duration,
    /// From the mapped buffers to the images' bytes.
    pub convert: Duration,
    /// When the submission went to the device (a publish job that started later waited in
    /// the dispatcher's queue since then).
    pub submitted: Option<Instant>,
}

/// A frame's images as their messages carry them: rgb8, depth as little-endian 32-bit floats
/// (32FC1), class ids (mono8); row-major, top row first, no padding. Depth and classes are
/// empty unless the camera asked for them.
#[derive(Debug, Clone, PartialEq)]
pub struct RawImages {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    pub depth: Vec<u8>,
    pub class: Vec<u8>,
}

impl RawImages {
    /// The images with depth in metres.
    pub fn decode(self) -> CameraImages {
        let depth = self
            .depth
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        CameraImages {
            width: self.width,
            height: self.height,
            rgb: self.rgb,
            depth,
            class: self.class,
        }
    }
}

type Readout = Result<(RawImages, ReadTimes), CameraError>;

/// A frame rendered (or recorded for the next [`Renderer::flush`](super::Renderer::flush)) and
/// being read back: [`PendingFrame::wait`] (on any thread) gives its images.
pub struct PendingFrame {
    pub(super) size: (u32, u32),
    pub(super) readout: Receiver<Readout>,
    /// Set once the frame's submission went to the device.
    pub(super) flushed: Arc<AtomicBool>,
}

impl std::fmt::Debug for PendingFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingFrame({}x{})", self.size.0, self.size.1)
    }
}

impl PendingFrame {
    /// The frame's width and height.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Waits for the read-back and returns the images.
    pub fn wait(self) -> Result<CameraImages, CameraError> {
        self.wait_raw().map(|(images, _)| images.decode())
    }

    /// Waits for the read-back: the images as their messages carry them, and how long each
    /// stage took. A frame whose renderer was never flushed is an error, not a hang.
    pub fn wait_raw(self) -> Result<(RawImages, ReadTimes), CameraError> {
        if !self.flushed.load(Ordering::Acquire) {
            return Err(CameraError::Readback(
                "the frame was never submitted (Renderer::flush)".into(),
            ));
        }
        self.readout
            .recv()
            .map_err(|_| CameraError::Readback("the read-back thread stopped".into()))?
    }
}

/// One frame of a submission: its targets and who waits for it.
pub(super) struct Readback {
    pub(super) targets: Targets,
    pub(super) size: (u32, u32),
    pub(super) depth: bool,
    pub(super) semantic: bool,
    /// Recording time plus the frame's share of the submission.
    pub(super) submit: Duration,
    pub(super) to: Sender<Readout>,
}

impl Readback {
    /// The read-back buffers this frame maps: colour always, depth and classes on request.
    pub(super) fn buffers(&self) -> impl Iterator<Item = &wgpu::Buffer> {
        let t = &self.targets;
        [
            (true, &t.colour_buf),
            (self.depth, &t.depth_buf),
            (self.semantic, &t.class_buf),
        ]
        .into_iter()
        .filter_map(|(wanted, buffer)| wanted.then_some(buffer))
    }
}

/// The frames of one submission, their buffers being mapped.
pub(super) struct Batch {
    pub(super) index: wgpu::SubmissionIndex,
    pub(super) submitted: Instant,
    pub(super) frames: Vec<Readback>,
    pub(super) mapped: Receiver<Result<(), wgpu::BufferAsyncError>>,
    pub(super) maps: usize,
}

/// The read-back thread: for each submission in turn, wait for the device (that submission
/// only, not the ones after it), then convert and hand over each of its frames, returning its
/// targets to the pool.
pub(super) fn run(device: wgpu::Device, pool: TargetPool, batches: Receiver<Batch>) {
    // A large frame's conversion is split over the cores: the device has finished and the
    // publishing threads wait for it.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    for batch in batches {
        let Batch {
            index,
            submitted,
            frames,
            mapped,
            maps,
        } = batch;
        let waited = device
            .poll(wgpu::PollType::WaitForSubmissionIndex(index))
            .map_err(|e| CameraError::Readback(format!("{e:?}")));
        let done = Instant::now();
        let gpu = done - submitted;
        // The poll ran the mapping callbacks of that submission.
        let mut maps_ok = waited.map(|_| ());
        for _ in 0..maps {
            if maps_ok.is_err() {
                break;
            }
            maps_ok = match mapped.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(CameraError::Readback(e.to_string())),
                Err(e) => Err(CameraError::Readback(format!("mapping: {e}"))),
            };
        }
        let map_share = done.elapsed() / frames.len().max(1) as u32;
        for frame in frames {
            let result = match &maps_ok {
                Ok(()) => Ok(convert(&frame, threads)),
                Err(e) => Err(CameraError::Readback(e.to_string())),
            };
            let unmapping = Instant::now();
            if maps_ok.is_ok() {
                for buffer in frame.buffers() {
                    buffer.unmap();
                }
            }
            let unmapped = unmapping.elapsed();
            let Readback {
                targets,
                size,
                submit,
                to,
                ..
            } = frame;
            if let Ok(mut pool) = pool.lock() {
                pool.entry(size).or_default().push(targets);
            }
            let readout = result.map(|(images, convert)| {
                let times = ReadTimes {
                    submit,
                    gpu,
                    map: map_share + unmapped,
                    convert,
                    submitted: Some(submitted),
                };
                (images, times)
            });
            // Nobody waiting (a sample dropped unread) is fine: the targets are back.
            let _ = to.send(readout);
        }
    }
}

/// The images of a mapped frame, and how long converting them took.
fn convert(frame: &Readback, threads: usize) -> (RawImages, Duration) {
    let start = Instant::now();
    let (w, h) = frame.size;
    let (w, h, t) = (w as usize, h as usize, &frame.targets);
    let pixels = w * h;
    // Straight from the mapped buffers into the outputs, one pass each and no zero-filling.
    let rgb = {
        let data = t.colour_buf.slice(..).get_mapped_range();
        rgb_image(&data, w, h, threads)
    };
    let copy = |wanted: bool, buffer: &wgpu::Buffer, bytes_per_pixel: usize| {
        let mut out = Vec::new();
        if wanted {
            out.reserve_exact(pixels * bytes_per_pixel);
            let data = buffer.slice(..).get_mapped_range();
            for row in rows(&data, w * bytes_per_pixel, h) {
                out.extend_from_slice(row);
            }
        }
        out
    };
    // Depth: R32Float texels are the 32FC1 message's little-endian floats already.
    let depth = copy(frame.depth, &t.depth_buf, 4);
    let class = copy(frame.semantic, &t.class_buf, 1);
    let images = RawImages {
        width: frame.size.0,
        height: frame.size.1,
        rgb,
        depth,
        class,
    };
    (images, start.elapsed())
}
