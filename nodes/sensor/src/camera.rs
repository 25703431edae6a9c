//! Camera: off-screen wgpu rendering of the scenario's world — the ground, the map's static
//! boxes and every agent's box in a colour of its own, under one directional light — from a
//! camera mounted on its agent. One pass writes three targets: colour (rgb8), depth along the
//! optical axis (32-bit float metres) and semantic class ids; the targets are copied into
//! read-back buffers that are reused from frame to frame.
//!
//! [`CameraScene`] is the data (boxes as instances of one unit cube, built from the scenario,
//! agents moved to each frame's states); [`Renderer`] owns the GPU objects and renders a
//! [`CameraParams`] view of a scene. It works on any wgpu adapter, Mesa's lavapipe (CPU)
//! included; with none, creating it fails with what to install. Rendering uses no randomness, so
//! a frame renders the same every time on a given backend.

use std::collections::BTreeMap;

use convoy_core::messages::AgentState;
use convoy_core::scenario::{Scenario, SensorSpec};
use glam::{Mat4, Quat, Vec3};

/// Semantic class ids written to the class target.
pub const CLASS_SKY: u8 = 0;
pub const CLASS_GROUND: u8 = 1;
pub const CLASS_STATIC: u8 = 2;
pub const CLASS_VEHICLE: u8 = 3;

/// Depth written where nothing is hit (the sky), metres.
pub const SKY_DEPTH: f32 = f32::INFINITY;

const SKY_COLOUR: [f64; 4] = [0.53, 0.71, 0.92, 1.0];
const GROUND_COLOUR: [f32; 3] = [0.35, 0.35, 0.33];
const STATIC_COLOUR: [f32; 3] = [0.75, 0.72, 0.66];
/// Agent colours, by the agent's index in the scenario.
pub const AGENT_COLOURS: [[f32; 3]; 8] = [
    [0.85, 0.10, 0.10],
    [0.10, 0.30, 0.85],
    [0.10, 0.70, 0.20],
    [0.90, 0.75, 0.10],
    [0.60, 0.20, 0.75],
    [0.10, 0.75, 0.75],
    [0.95, 0.50, 0.10],
    [0.90, 0.90, 0.90],
];

const NEAR: f32 = 0.1;
const FAR: f32 = 1000.0;

/// Why a renderer could not be made or could not render.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    #[error(
        "no graphics adapter for the camera: install Mesa's Vulkan drivers (Debian: apt-get \
         install mesa-vulkan-drivers libvulkan1) or a GPU driver ({0})"
    )]
    NoAdapter(String),
    #[error("cannot open the graphics device: {0}")]
    Device(String),
    #[error("reading the rendered image back failed: {0}")]
    Readback(String),
}

/// A camera's view, from its [`SensorSpec`] (defaults: 640x480, 90 degrees horizontal, on the
/// bonnet looking ahead).
#[derive(Debug, Clone, PartialEq)]
pub struct CameraParams {
    pub width: u32,
    pub height: u32,
    /// Horizontal field of view, radians.
    pub hfov: f64,
    /// Mount point in the agent's body frame, metres.
    pub offset: [f64; 3],
    /// Downward tilt, radians.
    pub pitch: f64,
    /// Read back the depth and class targets too (colour always).
    pub depth: bool,
    pub semantic: bool,
}

impl CameraParams {
    pub fn from_spec(spec: &SensorSpec, half_extents: [f64; 3]) -> CameraParams {
        CameraParams {
            width: spec.width.unwrap_or(640),
            height: spec.height.unwrap_or(480),
            hfov: spec.fov_rad(),
            offset: spec.mount_offset(half_extents),
            pitch: spec.pitch.unwrap_or(0.0).to_radians(),
            depth: spec.depth,
            semantic: spec.semantic,
        }
    }
}

/// One box to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BoxInstance {
    centre: Vec3,
    half_extents: Vec3,
    rotation: Quat,
    colour: [f32; 3],
    class: u8,
}

/// What a camera sees: static boxes and one box per agent.
pub struct CameraScene {
    statics: Vec<BoxInstance>,
    agents: BTreeMap<String, BoxInstance>,
}

fn quat_of(state: &AgentState) -> Quat {
    let q = &state.pose.orientation;
    let r = Quat::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32);
    if r.is_finite() && r.length() > 0.5 {
        r.normalize()
    } else {
        Quat::IDENTITY
    }
}

fn position_of(state: &AgentState) -> Vec3 {
    let p = &state.pose.position;
    Vec3::new(p.x as f32, p.y as f32, p.z as f32)
}

impl CameraScene {
    pub fn new(scenario: &Scenario) -> CameraScene {
        let [hx, hy] = scenario.map.ground_half_extents;
        let mut statics = vec![BoxInstance {
            centre: Vec3::new(0.0, 0.0, -0.05),
            half_extents: Vec3::new(hx as f32, hy as f32, 0.05),
            rotation: Quat::IDENTITY,
            colour: GROUND_COLOUR,
            class: CLASS_GROUND,
        }];
        for b in &scenario.map.boxes {
            let [x, y, z] = b.center;
            let [ex, ey, ez] = b.half_extents;
            statics.push(BoxInstance {
                centre: Vec3::new(x as f32, y as f32, z as f32),
                half_extents: Vec3::new(ex as f32, ey as f32, ez as f32),
                rotation: Quat::from_rotation_z(b.yaw as f32),
                colour: STATIC_COLOUR,
                class: CLASS_STATIC,
            });
        }
        let agents = scenario
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let [ex, ey, ez] = a.vehicle.half_extents;
                (
                    a.id.clone(),
                    BoxInstance {
                        centre: Vec3::new(0.0, 0.0, -10_000.0),
                        half_extents: Vec3::new(ex as f32, ey as f32, ez as f32),
                        rotation: Quat::IDENTITY,
                        colour: AGENT_COLOURS[i % AGENT_COLOURS.len()],
                        class: CLASS_VEHICLE,
                    },
                )
            })
            .collect();
        CameraScene { statics, agents }
    }

    /// The colour agent `id` is drawn in.
    pub fn colour_of(&self, id: &str) -> Option<[f32; 3]> {
        self.agents.get(id).map(|b| b.colour)
    }

    /// Moves the agents' boxes to `states`; agents without a state are parked out of sight.
    pub fn place<'a>(&mut self, states: impl Iterator<Item = &'a AgentState>) {
        for b in self.agents.values_mut() {
            b.centre = Vec3::new(0.0, 0.0, -10_000.0);
        }
        for s in states {
            if let Some(b) = self.agents.get_mut(&s.agent_id) {
                b.centre = position_of(s);
                b.rotation = quat_of(s);
            }
        }
    }

    fn instances(&self, skip_agent: &str) -> Vec<InstanceRaw> {
        self.statics
            .iter()
            .chain(
                self.agents
                    .iter()
                    .filter(|(id, _)| id.as_str() != skip_agent)
                    .map(|(_, b)| b),
            )
            .map(InstanceRaw::from)
            .collect()
    }
}

/// A rendered view: rgb8 colour, depth in metres along the optical axis, class ids; row-major,
/// top row first. Depth and classes are empty unless the parameters asked for them.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraImages {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    pub depth: Vec<f32>,
    pub class: Vec<u8>,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Vertex {
    position: [f32; 3],
    normal: [f32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct InstanceRaw {
    model: [[f32; 4]; 4],
    colour: [f32; 4],
    class: u32,
    _pad: [u32; 3],
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
struct Globals {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    forward: [f32; 4],
    light: [f32; 4],
}

/// The unit cube (-1..1), 36 vertices with face normals.
fn cube() -> Vec<Vertex> {
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

const SHADER: &str = r#"
struct Globals {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    forward: vec4<f32>,
    light: vec4<f32>,
};
@group(0) @binding(0) var<uniform> g: Globals;

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) colour: vec3<f32>,
    @location(3) @interpolate(flat) class_id: u32,
};

@vertex
fn vs_main(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) m0: vec4<f32>,
    @location(3) m1: vec4<f32>,
    @location(4) m2: vec4<f32>,
    @location(5) m3: vec4<f32>,
    @location(6) colour: vec4<f32>,
    @location(7) class_id: u32,
) -> VsOut {
    let model = mat4x4<f32>(m0, m1, m2, m3);
    let world = model * vec4<f32>(position, 1.0);
    // Normals of a scaled box: the rotation part only (the scale is per axis, positive).
    let n = normalize((model * vec4<f32>(normal, 0.0)).xyz);
    var out: VsOut;
    out.clip = g.view_proj * world;
    out.world = world.xyz;
    out.normal = n;
    out.colour = colour.rgb;
    out.class_id = class_id;
    return out;
}

struct FsOut {
    @location(0) colour: vec4<f32>,
    @location(1) depth: f32,
    @location(2) class_id: u32,
};

@fragment
fn fs_main(in: VsOut) -> FsOut {
    let diffuse = max(dot(normalize(in.normal), -g.light.xyz), 0.0);
    var out: FsOut;
    out.colour = vec4<f32>(in.colour * (0.35 + 0.65 * diffuse), 1.0);
    out.depth = dot(in.world - g.eye.xyz, g.forward.xyz);
    out.class_id = in.class_id;
    return out;
}
"#;

const COLOUR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
const DEPTH_OUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
const CLASS_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R8Uint;
const ZBUFFER_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// Render targets and read-back buffers for one image size, reused every frame.
struct Targets {
    colour: wgpu::Texture,
    depth: wgpu::Texture,
    class: wgpu::Texture,
    zbuffer: wgpu::Texture,
    colour_buf: wgpu::Buffer,
    depth_buf: wgpu::Buffer,
    class_buf: wgpu::Buffer,
}

fn padded_row(bytes_per_row: u32) -> u32 {
    let align = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    bytes_per_row.div_ceil(align) * align
}

impl Targets {
    fn new(device: &wgpu::Device, width: u32, height: u32) -> Targets {
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

/// The GPU side: device, pipeline, the cube, and targets per image size.
pub struct Renderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::RenderPipeline,
    globals: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    cube: wgpu::Buffer,
    /// Free target sets by image size: a frame takes one, and gives it back once read.
    pool: TargetPool,
    /// The adapter's name, for logs ("llvmpipe" on lavapipe).
    pub adapter: String,
}

type TargetPool = std::sync::Arc<std::sync::Mutex<BTreeMap<(u32, u32), Vec<Targets>>>>;

/// A frame rendered and being copied back: [`PendingFrame::wait`] (on any thread) gives its
/// images. Meanwhile the renderer can draw the next frame into another target set, so
/// rendering overlaps reading back. Its target set returns to the pool when it is done.
pub struct PendingFrame {
    device: wgpu::Device,
    targets: Option<Targets>,
    pool: TargetPool,
    size: (u32, u32),
    depth: bool,
    semantic: bool,
    mapped: std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    maps: usize,
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

    fn read(&mut self) -> Result<CameraImages, CameraError> {
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
    fn give_back(&mut self) {
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

impl Renderer {
    pub fn new() -> Result<Renderer, CameraError> {
        // Vulkan only (lavapipe on machines without a GPU), and no validation layers (debug
        // builds ask for them by default and warn when they are not installed).
        let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL,
            flags: wgpu::InstanceFlags::empty(),
            ..Default::default()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
        }))
        .map_err(|e| CameraError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("convoy camera"),
            required_features: wgpu::Features::empty(),
            required_limits: wgpu::Limits::downlevel_defaults().using_resolution(adapter.limits()),
            ..Default::default()
        }))
        .map_err(|e| CameraError::Device(e.to_string()))?;
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("camera shader"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let globals = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("camera globals"),
            size: std::mem::size_of::<Globals>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("camera globals"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("camera globals"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: globals.as_entire_binding(),
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("camera"),
            bind_group_layouts: &[&layout],
            push_constant_ranges: &[],
        });
        let vertex_attrs = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];
        let instance_attrs = wgpu::vertex_attr_array![
            2 => Float32x4, 3 => Float32x4, 4 => Float32x4, 5 => Float32x4,
            6 => Float32x4, 7 => Uint32
        ];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("camera"),
            layout: Some(&pipeline_layout),
            vertex: wgpu::VertexState {
                module: &shader,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[
                    wgpu::VertexBufferLayout {
                        array_stride: std::mem::size_of::<Vertex>() as u64,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &vertex_attrs,
                    },
                    wgpu::VertexBufferLayout {
                        array_stride: std::mem::size_of::<InstanceRaw>() as u64,
                        step_mode: wgpu::VertexStepMode::Instance,
                        attributes: &instance_attrs,
                    },
                ],
            },
            fragment: Some(wgpu::FragmentState {
                module: &shader,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[
                    Some(COLOUR_FORMAT.into()),
                    Some(DEPTH_OUT_FORMAT.into()),
                    Some(CLASS_FORMAT.into()),
                ],
            }),
            primitive: wgpu::PrimitiveState {
                // The cube's winding is not relied on: both faces are drawn.
                cull_mode: None,
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: ZBUFFER_FORMAT,
                depth_write_enabled: true,
                depth_compare: wgpu::CompareFunction::Less,
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            multiview: None,
            cache: None,
        });
        let cube_vertices = cube();
        let cube = wgpu::util::DeviceExt::create_buffer_init(
            &device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("cube"),
                contents: bytemuck::cast_slice(&cube_vertices),
                usage: wgpu::BufferUsages::VERTEX,
            },
        );
        Ok(Renderer {
            device,
            queue,
            pipeline,
            globals,
            bind_group,
            cube,
            pool: TargetPool::default(),
            adapter: format!("{} ({:?})", info.name, info.backend),
        })
    }

    /// Renders `scene` as the camera `params` on `own` sees it (its own box is not drawn) and
    /// waits for the images.
    pub fn render(
        &mut self,
        scene: &CameraScene,
        own: &AgentState,
        params: &CameraParams,
    ) -> Result<CameraImages, CameraError> {
        self.submit(scene, own, params)?.wait()
    }

    /// Renders into a free target set and starts copying it back; the returned frame gives the
    /// images when waited for, while this renderer goes on with the next frame.
    pub fn submit(
        &mut self,
        scene: &CameraScene,
        own: &AgentState,
        params: &CameraParams,
    ) -> Result<PendingFrame, CameraError> {
        let (w, h) = (params.width.max(1), params.height.max(1));
        let body = quat_of(own);
        let [ox, oy, oz] = params.offset;
        let eye = position_of(own) + body * Vec3::new(ox as f32, oy as f32, oz as f32);
        let look = body * Quat::from_rotation_y(params.pitch as f32);
        let forward = look * Vec3::X;
        let up = look * Vec3::Z;
        let aspect = w as f32 / h as f32;
        let vfov = 2.0 * ((params.hfov as f32 / 2.0).tan() / aspect).atan();
        let view_proj =
            Mat4::perspective_rh(vfov, aspect, NEAR, FAR) * Mat4::look_to_rh(eye, forward, up);
        let light = Vec3::new(-0.4, -0.3, -1.0).normalize();
        let globals = Globals {
            view_proj: view_proj.to_cols_array_2d(),
            eye: eye.extend(1.0).to_array(),
            forward: forward.extend(0.0).to_array(),
            light: light.extend(0.0).to_array(),
        };
        self.queue
            .write_buffer(&self.globals, 0, bytemuck::bytes_of(&globals));
        let instances = scene.instances(&own.agent_id);
        let instance_buf = wgpu::util::DeviceExt::create_buffer_init(
            &self.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("camera instances"),
                contents: bytemuck::cast_slice(&instances),
                usage: wgpu::BufferUsages::VERTEX,
            },
        );
        let free = self
            .pool
            .lock()
            .map_err(|_| CameraError::Readback("target pool poisoned".into()))?
            .get_mut(&(w, h))
            .and_then(Vec::pop);
        let t = free.unwrap_or_else(|| Targets::new(&self.device, w, h));
        let view = |tex: &wgpu::Texture| tex.create_view(&Default::default());
        let (colour_view, depth_view, class_view, z_view) = (
            view(&t.colour),
            view(&t.depth),
            view(&t.class),
            view(&t.zbuffer),
        );
        let mut encoder = self.device.create_command_encoder(&Default::default());
        {
            let attachment = |v, clear| {
                Some(wgpu::RenderPassColorAttachment {
                    view: v,
                    resolve_target: None,
                    depth_slice: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(clear),
                        store: wgpu::StoreOp::Store,
                    },
                })
            };
            let [r, g, b, a] = SKY_COLOUR;
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("camera"),
                color_attachments: &[
                    attachment(&colour_view, wgpu::Color { r, g, b, a }),
                    attachment(
                        &depth_view,
                        wgpu::Color {
                            r: f64::from(SKY_DEPTH),
                            g: 0.0,
                            b: 0.0,
                            a: 0.0,
                        },
                    ),
                    attachment(&class_view, wgpu::Color::TRANSPARENT),
                ],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &z_view,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_vertex_buffer(0, self.cube.slice(..));
            pass.set_vertex_buffer(1, instance_buf.slice(..));
            pass.draw(0..36, 0..instances.len() as u32);
        }
        let copy = |encoder: &mut wgpu::CommandEncoder,
                    tex: &wgpu::Texture,
                    buf: &wgpu::Buffer,
                    bpp: u32| {
            encoder.copy_texture_to_buffer(
                tex.as_image_copy(),
                wgpu::TexelCopyBufferInfo {
                    buffer: buf,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(padded_row(w * bpp)),
                        rows_per_image: Some(h),
                    },
                },
                wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
            );
        };
        // Only the targets asked for are copied and read back (a 1440x960 depth image is
        // 5.5 MB of copying per frame).
        copy(&mut encoder, &t.colour, &t.colour_buf, 4);
        if params.depth {
            copy(&mut encoder, &t.depth, &t.depth_buf, 4);
        }
        if params.semantic {
            copy(&mut encoder, &t.class, &t.class_buf, 1);
        }
        self.queue.submit([encoder.finish()]);

        let (tx, mapped) = std::sync::mpsc::channel();
        let mut maps = 0;
        for (wanted, buffer) in [
            (true, &t.colour_buf),
            (params.depth, &t.depth_buf),
            (params.semantic, &t.class_buf),
        ] {
            if wanted {
                let tx = tx.clone();
                buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
                maps += 1;
            }
        }
        Ok(PendingFrame {
            device: self.device.clone(),
            targets: Some(t),
            pool: self.pool.clone(),
            size: (w, h),
            depth: params.depth,
            semantic: params.semantic,
            mapped,
            maps,
        })
    }
}

/// Hands each row of a mapped read-back buffer, without the row padding, to `row`.
fn for_each_row(buffer: &wgpu::Buffer, row_bytes: u32, rows: u32, mut row: impl FnMut(&[u8])) {
    let padded = padded_row(row_bytes) as usize;
    let data = buffer.slice(..).get_mapped_range();
    for r in 0..rows as usize {
        let start = r * padded;
        row(&data[start..start + row_bytes as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::messages::{Pose as PoseMsg, Quat as QuatMsg, Vec3 as Vec3Msg};

    /// Ego at the origin facing +x, car_2 parked `ahead` m in front; nothing else.
    fn scenario() -> Scenario {
        let text = r#"
[scenario]
name = "camera"
dt = 0.05
[map]
ground_half_extents = [500.0, 500.0]
[[agents]]
id = "ego"
start = { x = 0.0, y = 0.0 }
[agents.controller]
kind = "external"
[[agents]]
id = "car_2"
start = { x = 20.0, y = 0.0 }
[agents.controller]
kind = "external"
"#;
        Scenario::from_str(text, "camera.toml").expect("scenario")
    }

    fn state(agent: &str, x: f64) -> AgentState {
        AgentState {
            agent_id: agent.into(),
            pose: PoseMsg {
                position: Vec3Msg { x, y: 0.0, z: 0.75 },
                orientation: QuatMsg::new(0.0, 0.0, 0.0, 1.0),
            },
            ..AgentState::default()
        }
    }

    /// A 160x120 camera, 90 degrees wide, 1.5 m above the ground at the car's centre.
    fn params(pitch_deg: f64) -> CameraParams {
        CameraParams {
            width: 160,
            height: 120,
            hfov: 90f64.to_radians(),
            offset: [0.0, 0.0, 0.75],
            pitch: pitch_deg.to_radians(),
            depth: true,
            semantic: true,
        }
    }

    fn renderer() -> Renderer {
        Renderer::new().expect("a wgpu adapter (lavapipe: apt-get install mesa-vulkan-drivers)")
    }

    fn pixel(img: &CameraImages, x: u32, y: u32) -> ([u8; 3], f32, u8) {
        let i = (y * img.width + x) as usize;
        (
            [img.rgb[3 * i], img.rgb[3 * i + 1], img.rgb[3 * i + 2]],
            img.depth[i],
            img.class[i],
        )
    }

    #[test]
    fn the_car_ahead_is_in_the_centre_in_its_colour_depth_and_class() {
        let mut r = renderer();
        let mut scene = CameraScene::new(&scenario());
        let ego = state("ego", 0.0);
        scene.place([ego.clone(), state("car_2", 20.0)].iter());
        let img = r.render(&scene, &ego, &params(0.0)).expect("render");
        assert_eq!((img.width, img.height), (160, 120));
        assert_eq!(img.rgb.len(), 160 * 120 * 3);
        // Just below the centre (the camera is at the car's roof height, 1.5 m; the car's box
        // spans 0..1.5 m): the car.
        let (rgb, depth, class) = pixel(&img, 80, 62);
        assert_eq!(class, CLASS_VEHICLE, "centre pixel is not the car");
        // The rear face is 20 - 2.25 = 17.75 m ahead of the camera.
        assert!((depth - 17.75).abs() < 0.05, "depth {depth}");
        // Its colour: car_2 is agent 1, blue; lit, so darker but blue dominates.
        let colour = scene.colour_of("car_2").expect("colour");
        assert!(
            colour[2] > colour[0] && rgb[2] > rgb[0] && rgb[2] > rgb[1],
            "rgb {rgb:?}"
        );
        // Left and right edges at that row are ground, not car.
        assert_eq!(pixel(&img, 2, 62).2, CLASS_GROUND);
        assert_eq!(pixel(&img, 157, 62).2, CLASS_GROUND);
        // Without the car, the centre is ground far away.
        scene.place([ego.clone()].iter());
        let empty = r.render(&scene, &ego, &params(0.0)).expect("render");
        assert_eq!(pixel(&empty, 80, 62).2, CLASS_GROUND);
    }

    /// The row where the sky ends: the first row (from the top) whose centre pixel is ground.
    fn horizon_row(img: &CameraImages) -> u32 {
        (0..img.height)
            .find(|&y| pixel(img, img.width / 2, y).2 == CLASS_GROUND)
            .expect("some ground")
    }

    #[test]
    fn the_horizon_splits_sky_and_ground_where_the_field_of_view_says() {
        let mut r = renderer();
        let mut scene = CameraScene::new(&scenario());
        let ego = state("ego", 0.0);
        scene.place([ego.clone()].iter());
        let level = r.render(&scene, &ego, &params(0.0)).expect("render");
        // Level camera: the horizon is the middle of the image (the ground's edge, 500 m away,
        // is a fraction of a pixel below it).
        let row = horizon_row(&level);
        assert!((59..=61).contains(&row), "level horizon at row {row}");
        let (sky, depth, class) = pixel(&level, 80, 30);
        assert_eq!((class, depth), (CLASS_SKY, SKY_DEPTH));
        assert!(sky[2] > sky[0], "sky is blue: {sky:?}");
        // Pitched down 10 degrees: the horizon moves up by f tan(10 deg) rows, f being the
        // focal length in pixels from the vertical field of view.
        let tilted = r.render(&scene, &ego, &params(10.0)).expect("render");
        let vfov = 2.0 * ((45f64.to_radians()).tan() / (160.0 / 120.0)).atan();
        let f = 60.0 / (vfov / 2.0).tan();
        let expected = 60.0 - f * 10f64.to_radians().tan();
        let row = f64::from(horizon_row(&tilted));
        assert!(
            (row - expected).abs() <= 1.5,
            "tilted horizon at {row}, expected {expected}"
        );
        // Ground depth below the horizon grows towards it.
        let near = pixel(&level, 80, 110).1;
        let far = pixel(&level, 80, 70).1;
        assert!(near < far, "depth {near} near vs {far} far");
        // A ground pixel's depth: camera 1.5 m up, the ray through row y meets the ground at
        // z-depth 1.5 f / (y + 0.5 - 60).
        let y = 100u32;
        let want = 1.5 * f / (f64::from(y) + 0.5 - 60.0);
        let got = f64::from(pixel(&level, 80, y).1);
        assert!(
            (got - want).abs() / want < 0.02,
            "ground depth {got}, want {want}"
        );
    }

    #[test]
    fn a_frame_renders_the_same_every_time() {
        let mut r = renderer();
        let mut scene = CameraScene::new(&scenario());
        let ego = state("ego", 0.0);
        scene.place([ego.clone(), state("car_2", 12.0)].iter());
        let a = r.render(&scene, &ego, &params(5.0)).expect("render");
        let b = r.render(&scene, &ego, &params(5.0)).expect("render");
        assert_eq!(a, b);
    }
}
