//! The JPEG twin of a camera's image channel (`/<a>/<s>/image/compressed`, CompressedImage):
//! a browser takes a 1440x960 frame as ~0.2 MB of JPEG at the camera's rate where 4 MB of raw
//! pixels arrive a few times a second (docs/BENCHMARKS.md, "Live view"). Encoding runs on a
//! thread of its own, only while a client subscribes, and always on the newest frame: a frame
//! that arrives while the previous one is being encoded replaces the one waiting.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use convoy_core::messages::Image;
use foxglove::messages::CompressedImage;
use foxglove::Channel;
use jpeg_encoder::{ColorType, Encoder};

use super::scene::timestamp;

/// JPEG quality: the camera's pictures stay clean at about a twentieth of their raw size.
const QUALITY: u8 = 85;

/// `image` as a JPEG CompressedImage; None for layouts JPEG does not hold (depth's 32FC1) or a
/// frame whose size does not match its data.
pub fn compress(image: &Image) -> Option<CompressedImage> {
    let (color, bytes_per_pixel) = match image.encoding.as_str() {
        "rgb8" => (ColorType::Rgb, 3),
        "bgr8" => (ColorType::Bgr, 3),
        "rgba8" => (ColorType::Rgba, 4),
        "mono8" | "8UC1" => (ColorType::Luma, 1),
        _ => return None,
    };
    let width = u16::try_from(image.width).ok()?;
    let height = u16::try_from(image.height).ok()?;
    let row = image.width as usize * bytes_per_pixel;
    // Rows padded beyond their pixels (step > row) are packed first.
    let packed: Vec<u8>;
    let pixels = if image.step as usize == row {
        &image.data[..]
    } else {
        let step = image.step as usize;
        if step < row {
            return None;
        }
        packed = image
            .data
            .chunks(step)
            .take(image.height as usize)
            .flat_map(|r| r.get(..row).unwrap_or(r))
            .copied()
            .collect();
        &packed[..]
    };
    let mut jpeg = Vec::with_capacity(pixels.len() / 10);
    Encoder::new(&mut jpeg, QUALITY)
        .encode(pixels, width, height, color)
        .ok()?;
    Some(CompressedImage {
        timestamp: Some(timestamp(image.header.stamp_ns)),
        frame_id: image.header.agent.clone(),
        data: jpeg.into(),
        format: "jpeg".into(),
    })
}

/// The newest frame waiting to be encoded, and whether the view is closing.
type Slot = (Mutex<(Option<Image>, bool)>, Condvar);

/// One camera's encoding thread.
pub struct JpegTwin {
    slot: Arc<Slot>,
    out: Arc<Channel<CompressedImage>>,
    thread: Option<JoinHandle<()>>,
}

impl JpegTwin {
    pub fn start(out: Channel<CompressedImage>) -> std::io::Result<JpegTwin> {
        let slot: Arc<Slot> = Arc::new((Mutex::new((None, false)), Condvar::new()));
        let out = Arc::new(out);
        let (thread_slot, thread_out) = (Arc::clone(&slot), Arc::clone(&out));
        let thread = std::thread::Builder::new()
            .name(format!("jpeg {}", out.topic()))
            .spawn(move || encode_loop(&thread_slot, &thread_out))?;
        Ok(JpegTwin {
            slot,
            out,
            thread: Some(thread),
        })
    }

    /// Hands `image` to the encoder when a client subscribes (it replaces a frame still
    /// waiting); true when it replaced one.
    pub fn offer(&self, image: &Image) -> bool {
        if !self.out.has_sinks() {
            return false;
        }
        let (lock, wake) = &*self.slot;
        let Ok(mut slot) = lock.lock() else {
            return false;
        };
        let replaced = slot.0.replace(image.clone()).is_some();
        wake.notify_one();
        replaced
    }
}

impl Drop for JpegTwin {
    fn drop(&mut self) {
        let (lock, wake) = &*self.slot;
        if let Ok(mut slot) = lock.lock() {
            slot.1 = true;
        }
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn encode_loop(slot: &Slot, out: &Channel<CompressedImage>) {
    let (lock, wake) = slot;
    loop {
        let image = {
            let Ok(mut guard) = lock.lock() else {
                return;
            };
            while guard.0.is_none() && !guard.1 {
                guard = match wake.wait(guard) {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
            if guard.1 {
                return;
            }
            guard.0.take()
        };
        if let Some(compressed) = image.as_ref().and_then(compress) {
            out.log(&compressed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(encoding: &str, width: u32, height: u32, step: u32) -> Image {
        Image {
            width,
            height,
            encoding: encoding.into(),
            step,
            data: (0..step * height).map(|i| (i % 251) as u8).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn colour_and_classes_become_jpeg_and_depth_does_not() {
        let jpeg = compress(&image("rgb8", 64, 48, 192)).expect("rgb8 compresses");
        assert_eq!(jpeg.format, "jpeg");
        assert_eq!(&jpeg.data[..2], &[0xFF, 0xD8], "a JPEG starts with SOI");
        assert!(compress(&image("mono8", 64, 48, 64)).is_some());
        assert!(compress(&image("32FC1", 64, 48, 256)).is_none());
    }

    #[test]
    fn padded_rows_are_packed_and_short_data_is_refused() {
        assert!(compress(&image("rgb8", 64, 48, 200)).is_some());
        let mut short = image("rgb8", 64, 48, 192);
        short.data.truncate(100);
        assert!(compress(&short).is_none());
    }
}
