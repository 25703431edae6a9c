//! `convoy topic echo --save DIR`: camera images as PNG files a user can open.
//!
//! rgb8 and mono8 are written as they are; 32FC1 depth as 16-bit grayscale millimetres
//! (0 where there is no depth: the sky, or beyond 65.5 m).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use convoy_core::messages::Image;

/// Writes `image` as `DIR/AGENT_SENSOR_FRAME.png` and returns the path.
pub fn save(dir: &Path, image: &Image) -> Result<PathBuf> {
    let (w, h) = (image.width, image.height);
    let pixels = w as usize * h as usize;
    let (colour, depth, data): (png::ColorType, png::BitDepth, Vec<u8>) =
        match image.encoding.as_str() {
            "rgb8" => (png::ColorType::Rgb, png::BitDepth::Eight, rows(image, 3)?),
            "mono8" => (
                png::ColorType::Grayscale,
                png::BitDepth::Eight,
                rows(image, 1)?,
            ),
            "32FC1" => {
                let raw = rows(image, 4)?;
                let mm: Vec<u8> = raw
                    .chunks_exact(4)
                    .flat_map(|b| {
                        let metres = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        let v = if metres.is_finite() && metres > 0.0 {
                            (metres * 1000.0).round().min(65535.0) as u16
                        } else {
                            0
                        };
                        v.to_be_bytes()
                    })
                    .collect();
                (png::ColorType::Grayscale, png::BitDepth::Sixteen, mm)
            }
            other => bail!("encoding '{other}' is not saved (rgb8, mono8, 32FC1 are)"),
        };
    let expected = pixels
        * match (colour, depth) {
            (png::ColorType::Rgb, _) => 3,
            (_, png::BitDepth::Sixteen) => 2,
            _ => 1,
        };
    if data.len() != expected {
        bail!(
            "a {w}x{h} {} image needs {expected} bytes, has {}",
            image.encoding,
            data.len()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = format!(
        "{}_{}_{:06}.png",
        image.header.agent, image.header.sensor, image.header.frame
    );
    let path = dir.join(name);
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    encoder.set_color(colour);
    encoder.set_depth(depth);
    let mut writer = encoder.write_header().context("PNG header")?;
    writer.write_image_data(&data).context("PNG data")?;
    writer.finish().context("PNG end")?;
    Ok(path)
}

/// The image's rows without any padding beyond `bytes_per_pixel * width` (step may be larger).
fn rows(image: &Image, bytes_per_pixel: usize) -> Result<Vec<u8>> {
    let row = image.width as usize * bytes_per_pixel;
    let step = image.step as usize;
    if step < row || image.data.len() < step * image.height as usize {
        bail!(
            "a {}x{} {} image with step {} needs {} bytes, has {}",
            image.width,
            image.height,
            image.encoding,
            step,
            step * image.height as usize,
            image.data.len()
        );
    }
    Ok(image
        .data
        .chunks(step)
        .take(image.height as usize)
        .flat_map(|r| r[..row].iter().copied())
        .collect())
}
