//! The GPU-side data: vertex and instance layouts, the unit cube, the shader, the render
//! targets and their read-back rows.

use super::scene::BoxInstance;
use super::*;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct Vertex {
    pub(super) position: [f32; 3],
    pub(super) normal: [f32; 3],
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

/// Render targets and read-back buffers for one image size, reused every frame.
pub(super) struct Targets {
    pub(super) colour: wgpu::Texture,
    pub(super) depth: wgpu::Texture,
    pub(super) class: wgpu::Texture,
    pub(super) zbuffer: wgpu::Texture,
    pub(super) colour_buf: wgpu::Buffer,
    pub(super) depth_buf: wgpu::Buffer,
    pub(super) class_buf: wgpu::Buffer,
}

pub(super) fn padded_row(bytes_per_row: u32) -> u32 {
    let align = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    bytes_per_row.div_ceil(align) * align
}

impl Targets {
    pub(super) fn new(device: &wgpu::Device, width: u32, height: u32) -> Targets {
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
        Targets {
            colour: texture(COLOUR_FORMAT, target),
            depth: texture(DEPTH_OUT_FORMAT, target),
            class: texture(CLASS_FORMAT, target),
            zbuffer: texture(ZBUFFER_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT),
            colour_buf: buffer(4),
            depth_buf: buffer(4),
            class_buf: buffer(1),
        }
    }
}

pub(super) type TargetPool = std::sync::Arc<std::sync::Mutex<BTreeMap<(u32, u32), Vec<Targets>>>>;

/// Hands each row of a mapped read-back buffer, without the row padding, to `row`.
pub(super) fn for_each_row(
    buffer: &wgpu::Buffer,
    row_bytes: u32,
    rows: u32,
    mut row: impl FnMut(&[u8]),
) {
    let padded = padded_row(row_bytes) as usize;
    let data = buffer.slice(..).get_mapped_range();
    for r in 0..rows as usize {
        let start = r * padded;
        row(&data[start..start + row_bytes as usize]);
    }
}
