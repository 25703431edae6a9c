//! The GPU-side data: vertex and instance layouts, the unit cube, the shader, the render
//! targets and their read-back rows.

use std::mem::MaybeUninit;

use super::scene::BoxInstance;
use super::*;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Vertex {
    pub(super) position: [f32; 3],
    pub(super) normal: [f32; 3],
}

/// A vertex of the world's static surfaces: world frame, its face's normal, and its surface's
/// colour and class (all surfaces are drawn in one draw).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct StaticVertex {
    pub(super) position: [f32; 3],
    pub(super) normal: [f32; 3],
    pub(super) colour: [f32; 4],
    pub(super) class: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct InstanceRaw {
    pub(super) model: [[f32; 4]; 4],
    pub(super) colour: [f32; 4],
    pub(super) class: u32,
    pub(super) _pad: [u32; 3],
}

impl From<&BoxInstance> for InstanceRaw {
    fn from(b: &BoxInstance) -> Self {
        let model = Mat4::from_scale_rotation_translation(b.half_extents, b.rotation, b.centre);
        InstanceRaw {
            model: model.to_cols_array_2d(),
            colour: [b.colour[0], b.colour[1], b.colour[2], 1.0],
            class: u32::from(b.class),
            _pad: [0; 3],
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Globals {
    pub(super) view_proj: [[f32; 4]; 4],
    pub(super) eye: [f32; 4],
    pub(super) forward: [f32; 4],
    pub(super) light: [f32; 4],
}

/// The unit cube (-1..1), 36 vertices with face normals.
pub(super) fn cube() -> Vec<Vertex> {
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
    ];
    let mut out = Vec::with_capacity(36);
    for (n, u, v) in faces {
        let n = Vec3::from(n);
        let u = Vec3::from(u);
        let v = Vec3::from(v);
        let corner = |a: f32, b: f32| Vertex {
            position: (n + u * a + v * b).to_array(),
            normal: n.to_array(),
        };
        let quad = [
            corner(-1.0, -1.0),
            corner(1.0, -1.0),
            corner(1.0, 1.0),
            corner(-1.0, -1.0),
            corner(1.0, 1.0),
            corner(-1.0, 1.0),
        ];
        out.extend_from_slice(&quad);
    }
    out
}

pub(super) const SHADER: &str = include_str!("shader.wgsl");

pub(super) const COLOUR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
pub(super) const DEPTH_OUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
pub(super) const CLASS_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R8Uint;
pub(super) const ZBUFFER_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// Render targets, read-back buffers and per-view inputs (globals, instances) for one image
/// size, reused every frame. Each set has its own inputs so that the views of several cameras
/// go to the device in one submission.
pub(super) struct Targets {
    pub(super) colour: wgpu::Texture,
    pub(super) depth: wgpu::Texture,
    pub(super) class: wgpu::Texture,
    pub(super) colour_view: wgpu::TextureView,
    pub(super) depth_view: wgpu::TextureView,
    pub(super) class_view: wgpu::TextureView,
    pub(super) z_view: wgpu::TextureView,
    pub(super) colour_buf: wgpu::Buffer,
    pub(super) depth_buf: wgpu::Buffer,
    pub(super) class_buf: wgpu::Buffer,
    /// This view's [`Globals`] and the bind group that binds them.
    pub(super) globals: wgpu::Buffer,
    pub(super) bind_group: wgpu::BindGroup,
    /// This view's box instances (grown when a scene has more).
    pub(super) instances: Option<wgpu::Buffer>,
    /// This view's static surfaces in view, nearest first, as indices into the scene's static
    /// vertices (grown when a view needs more).
    pub(super) indices: Option<wgpu::Buffer>,
}

pub(super) fn padded_row(bytes_per_row: u32) -> u32 {
    let align = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    bytes_per_row.div_ceil(align) * align
}

impl Targets {
    pub(super) fn new(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        width: u32,
        height: u32,
    ) -> Targets {
        let texture = |format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some("camera target"),
                size: wgpu::Extent3d {
                    width,
                    height,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let target = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
        let buffer = |bytes_per_pixel: u32| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("camera read-back"),
                size: u64::from(padded_row(width * bytes_per_pixel)) * u64::from(height),
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
                mapped_at_creation: false,
            })
        };
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("camera globals"),
            size: std::mem::size_of::<Globals>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("camera globals"),
            layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: globals.as_entire_binding(),
            }],
        });
        let (colour, depth, class) = (
            texture(COLOUR_FORMAT, target),
            texture(DEPTH_OUT_FORMAT, target),
            texture(CLASS_FORMAT, target),
        );
        let zbuffer = texture(ZBUFFER_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT);
        let view = |tex: &wgpu::Texture| tex.create_view(&Default::default());
        Targets {
            colour_view: view(&colour),
            depth_view: view(&depth),
            class_view: view(&class),
            z_view: view(&zbuffer),
            colour,
            depth,
            class,
            colour_buf: buffer(4),
            depth_buf: buffer(4),
            class_buf: buffer(1),
            globals,
            bind_group,
            instances: None,
            indices: None,
        }
    }

    /// Writes `instances` into this set's instance buffer (made larger first when needed).
    pub(super) fn write_instances(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        instances: &[InstanceRaw],
    ) {
        write_grown(
            device,
            queue,
            &mut self.instances,
            bytemuck::cast_slice(instances),
            wgpu::BufferUsages::VERTEX,
            "camera instances",
        );
    }

    /// Writes `indices` into this set's index buffer (made larger first when needed).
    pub(super) fn write_indices(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        indices: &[u32],
    ) {
        write_grown(
            device,
            queue,
            &mut self.indices,
            bytemuck::cast_slice(indices),
            wgpu::BufferUsages::INDEX,
            "camera static indices",
        );
    }
}

/// Writes `bytes` at the start of `buffer`, first replacing it with one of the next power of
/// two bytes (at least 64) when it is missing or too small.
fn write_grown(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &mut Option<wgpu::Buffer>,
    bytes: &[u8],
    usage: wgpu::BufferUsages,
    label: &str,
) {
    let needed = (bytes.len() as u64).max(64);
    if buffer.as_ref().is_none_or(|b| b.size() < needed) {
        *buffer = Some(device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: needed.next_power_of_two(),
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        }));
    }
    if let (Some(buffer), false) = (buffer.as_ref(), bytes.is_empty()) {
        queue.write_buffer(buffer, 0, bytes);
    }
}

pub(super) type TargetPool = std::sync::Arc<std::sync::Mutex<BTreeMap<(u32, u32), Vec<Targets>>>>;

/// Each row of a mapped read-back buffer, without the row padding.
pub(super) fn rows(data: &[u8], row_bytes: usize, rows: usize) -> impl Iterator<Item = &[u8]> {
    let padded = padded_row(row_bytes as u32) as usize;
    data.chunks(padded)
        .take(rows)
        .map(move |row| &row[..row_bytes.min(row.len())])
}

/// Pixels from which a frame's conversion is split over several threads (640x480 and up).
const SPLIT_FROM: usize = 256 * 1024;

/// The rgb8 image of a mapped rgba8 read-back buffer (`width` x `height`, rows padded to the
/// copy alignment): one pass, no zero-filled buffer, and a large frame's rows split over up to
/// `threads` threads (this one among them).
pub(super) fn rgb_image(data: &[u8], width: usize, height: usize, threads: usize) -> Vec<u8> {
    let out_row = width * 3;
    let n = out_row * height;
    let mut rgb: Vec<u8> = Vec::with_capacity(n);
    let threads = if width * height >= SPLIT_FROM {
        threads.clamp(1, height.max(1))
    } else {
        1
    };
    let rows_each = height.div_ceil(threads.max(1)).max(1);
    let padded = padded_row(width as u32 * 4) as usize;
    {
        let spare = &mut rgb.spare_capacity_mut()[..n];
        let convert = |first: usize, out: &mut [MaybeUninit<u8>]| {
            for (r, dst) in out.chunks_exact_mut(out_row.max(1)).enumerate() {
                let at = (first + r) * padded;
                rgba_to_rgb(&data[at..at + width * 4], dst);
            }
        };
        let mut parts = spare.chunks_mut((rows_each * out_row).max(1)).enumerate();
        let own = parts.next();
        std::thread::scope(|scope| {
            for (i, part) in parts {
                scope.spawn(move || convert(i * rows_each, part));
            }
            if let Some((_, part)) = own {
                convert(0, part);
            }
        });
    }
    // SAFETY: the scope above wrote every one of the n bytes (each row's 3 x width, through
    // rgba_to_rgb) and joined its threads.
    unsafe { rgb.set_len(n) };
    rgb
}

/// Writes the rgb8 of the rgba8 pixels in `rgba` to `out` (three bytes a pixel: `out` is as
/// long as that), what copying the first three bytes of every pixel gives
/// (`tests::conversion_is_the_straight_loop`): sixteen bytes in, twelve out per SSSE3 shuffle
/// where the CPU has it (nearly all x86-64 since 2008), otherwise eight pixels at a time in
/// 64-bit words.
pub(super) fn rgba_to_rgb(rgba: &[u8], out: &mut [MaybeUninit<u8>]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has SSSE3 (checked just above).
        unsafe { rgba_to_rgb_ssse3(rgba, out) };
        return;
    }
    rgba_to_rgb_words(rgba, out);
}

/// [`rgba_to_rgb`] with one SSSE3 byte shuffle per four pixels.
///
/// # Safety
/// The CPU must have SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
pub(super) unsafe fn rgba_to_rgb_ssse3(rgba: &[u8], out: &mut [MaybeUninit<u8>]) {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_setr_epi8, _mm_shuffle_epi8, _mm_storeu_si128,
    };
    let pixels = (rgba.len() / 4).min(out.len() / 3);
    // Bytes 0-2, 4-6, 8-10, 12-14 of four pixels, then four zeros (the next step's bytes).
    let keep = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    let mut i = 0;
    while i + 6 <= pixels {
        // SAFETY: reads rgba[4i..4i + 16] (i + 4 <= pixels) and writes out[3i..3i + 16]
        // (3i + 16 <= 3 pixels as i + 6 <= pixels); both unaligned loads and stores.
        unsafe {
            let four = _mm_loadu_si128(rgba.as_ptr().add(4 * i).cast::<__m128i>());
            let rgb = _mm_shuffle_epi8(four, keep);
            _mm_storeu_si128(out.as_mut_ptr().add(3 * i).cast::<__m128i>(), rgb);
        }
        i += 4;
    }
    // The last few pixels, over the four bytes the last shuffle wrote past its twelve.
    rgba_to_rgb_words(&rgba[4 * i..4 * pixels], &mut out[3 * i..3 * pixels]);
}

/// [`rgba_to_rgb`] eight pixels at a time in 64-bit words (any CPU).
pub(super) fn rgba_to_rgb_words(rgba: &[u8], out: &mut [MaybeUninit<u8>]) {
    let mut blocks = rgba.chunks_exact(32);
    let mut outs = out.chunks_exact_mut(24);
    for (block, o) in (&mut blocks).zip(&mut outs) {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&block[8 * i..8 * i + 8]);
            // Two pixels, r g b a r g b a: their six colour bytes, low first.
            let w = u64::from_le_bytes(w);
            (w & 0x00ff_ffff) | ((w >> 8) & 0xffff_ff00_0000)
        };
        let (a, b, c, d) = (word(0), word(1), word(2), word(3));
        let words = [a | (b << 48), (b >> 16) | (c << 32), (c >> 32) | (d << 16)];
        for (o, w) in o.chunks_exact_mut(8).zip(words) {
            for (o, byte) in o.iter_mut().zip(w.to_le_bytes()) {
                o.write(byte);
            }
        }
    }
    let rest = outs.into_remainder();
    for (o, p) in rest
        .chunks_exact_mut(3)
        .zip(blocks.remainder().chunks_exact(4))
    {
        o[0].write(p[0]);
        o[1].write(p[1]);
        o[2].write(p[2]);
    }
}
