//! The renderer: device, pipeline and the per-frame draw and copy.

use super::gpu::*;
use super::readback::{self, Batch, PendingFrame, Readback};
use super::scene::{position_of, quat_of, MeshDraw};
use super::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

/// One static mesh on the GPU.
struct StaticBuffers {
    vertices: wgpu::Buffer,
    count: u32,
    instance: wgpu::Buffer,
    bounds: (Vec3, Vec3),
}

/// Whether any of the box `bounds` can be inside the view of `view_proj`: false when all eight
/// corners lie beyond one plane of the view frustum (a conservative test: a box near a corner
/// of the frustum may pass and be clipped by the GPU instead).
fn in_view(view_proj: &Mat4, bounds: &(Vec3, Vec3)) -> bool {
    let (lo, hi) = *bounds;
    let corners = (0..8).map(|i| {
        let p = Vec3::new(
            if i & 1 == 0 { lo.x } else { hi.x },
            if i & 2 == 0 { lo.y } else { hi.y },
            if i & 4 == 0 { lo.z } else { hi.z },
        );
        *view_proj * p.extend(1.0)
    });
    let mut outside = [true; 6];
    for c in corners {
        let tests = [
            c.x < -c.w,
            c.x > c.w,
            c.y < -c.w,
            c.y > c.w,
            c.z < 0.0,
            c.z > c.w,
        ];
        for (o, t) in outside.iter_mut().zip(tests) {
            *o &= t;
        }
    }
    !outside.iter().any(|o| *o)
}

/// The GPU side: device, pipeline, the cube, and targets per image size.
pub struct Renderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Writes colour, depth and class.
    pipeline: wgpu::RenderPipeline,
    /// Writes colour only (a camera without depth or semantic outputs).
    colour_pipeline: wgpu::RenderPipeline,
    /// The layout of each target set's globals.
    layout: wgpu::BindGroupLayout,
    cube: wgpu::Buffer,
    /// The static meshes of the scene last rendered, uploaded once: (the scene's meshes, and
    /// per mesh its vertex buffer, vertex count and instance buffer).
    statics: Option<(Arc<Vec<MeshDraw>>, Vec<StaticBuffers>)>,
    /// Free target sets by image size: a frame takes one, and gives it back once read.
    pool: TargetPool,
    /// The frames recorded since the last [`Renderer::flush`], in one command encoder.
    recorded: Option<Recorded>,
    /// To the read-back thread (None once it is told to stop).
    batches: Option<mpsc::Sender<Batch>>,
    readback: Option<std::thread::JoinHandle<()>>,
    /// The adapter, for logs: `name (backend, device type)` ("llvmpipe (LLVM ...) (Vulkan,
    /// Cpu)" on lavapipe).
    pub adapter: String,
}

/// Frames recorded for the next submission: every frame's draw in one encoder, then every
/// frame's copies in another (a copy waits until its target is drawn; meanwhile lavapipe bins
/// the next draw while the last is rasterized).
struct Recorded {
    draws: wgpu::CommandEncoder,
    copies: wgpu::CommandEncoder,
    frames: Vec<Readback>,
    flushed: Arc<AtomicBool>,
}

impl Drop for Renderer {
    /// Lets the read-back thread finish what was submitted, then joins it.
    fn drop(&mut self) {
        self.batches = None;
        if let Some(thread) = self.readback.take() {
            let _ = thread.join();
        }
    }
}

/// Which graphics adapter renders the cameras (`convoy-sensor --adapter`, a launch file's
/// sensor node `adapter`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AdapterChoice {
    /// A GPU when there is one, otherwise the CPU (Mesa's lavapipe).
    #[default]
    Auto,
    /// A hardware adapter (discrete, integrated or virtual GPU); none is an error.
    Gpu,
    /// The CPU: a software rasterizer such as lavapipe.
    Cpu,
}

impl AdapterChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterChoice::Auto => "auto",
            AdapterChoice::Gpu => "gpu",
            AdapterChoice::Cpu => "cpu",
        }
    }

    /// Whether an adapter of `kind` is one this choice takes.
    pub fn takes(self, kind: wgpu::DeviceType) -> bool {
        use wgpu::DeviceType as T;
        match self {
            AdapterChoice::Auto => true,
            AdapterChoice::Gpu => matches!(kind, T::DiscreteGpu | T::IntegratedGpu | T::VirtualGpu),
            AdapterChoice::Cpu => kind == T::Cpu,
        }
    }
}

impl std::fmt::Display for AdapterChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `name (backend, device type)`, as the node logs an adapter.
fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type)
}

/// The adapter `choice` asks for: auto as wgpu ranks them (a GPU first); gpu the first
/// discrete, then integrated, then virtual GPU; cpu the first software one.
fn pick_adapter(
    instance: &wgpu::Instance,
    choice: AdapterChoice,
) -> Result<wgpu::Adapter, CameraError> {
    if choice == AdapterChoice::Auto {
        return pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
        }))
        .map_err(|e| CameraError::NoAdapter(e.to_string()));
    }
    let adapters = instance.enumerate_adapters(BACKENDS);
    let rank = |kind: wgpu::DeviceType| match kind {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        _ => 3,
    };
    let found: Vec<String> = adapters.iter().map(|a| describe(&a.get_info())).collect();
    adapters
        .into_iter()
        .filter(|a| choice.takes(a.get_info().device_type))
        .min_by_key(|a| rank(a.get_info().device_type))
        .ok_or_else(|| CameraError::NoAdapterOfKind {
            choice,
            found: if found.is_empty() {
                "no adapter at all".into()
            } else {
                found.join("; ")
            },
        })
}

/// Vulkan (lavapipe on machines without a GPU) and Metal.
const BACKENDS: wgpu::Backends = wgpu::Backends::VULKAN.union(wgpu::Backends::METAL);

impl Renderer {
    /// A renderer on the adapter wgpu ranks first (a GPU when there is one).
    pub fn new() -> Result<Renderer, CameraError> {
        Renderer::with_adapter(AdapterChoice::Auto)
    }

    /// A renderer on the adapter `choice` asks for.
    pub fn with_adapter(choice: AdapterChoice) -> Result<Renderer, CameraError> {
        // No validation layers (debug builds ask for them by default and warn when they are
        // not installed).
        let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
            backends: BACKENDS,
            flags: wgpu::InstanceFlags::empty(),
            ..Default::default()
        });
        let adapter = pick_adapter(&instance, choice)?;
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
        let make_pipeline = |entry: &str, targets: &[Option<wgpu::ColorTargetState>]| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
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
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    targets,
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
            })
        };
        let pipeline = make_pipeline(
            "fs_main",
            &[
                Some(COLOUR_FORMAT.into()),
                Some(DEPTH_OUT_FORMAT.into()),
                Some(CLASS_FORMAT.into()),
            ],
        );
        let colour_pipeline = make_pipeline("fs_colour", &[Some(COLOUR_FORMAT.into())]);
        let cube_vertices = cube();
        let cube = wgpu::util::DeviceExt::create_buffer_init(
            &device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("cube"),
                contents: bytemuck::cast_slice(&cube_vertices),
                usage: wgpu::BufferUsages::VERTEX,
            },
        );
        let pool = TargetPool::default();
        let (batches, to_read) = mpsc::channel();
        let readback = {
            let (device, pool) = (device.clone(), pool.clone());
            std::thread::Builder::new()
                .name("camera-readback".into())
                .spawn(move || readback::run(device, pool, to_read))
                .map_err(|e| {
                    CameraError::Device(format!("cannot start the read-back thread: {e}"))
                })?
        };
        Ok(Renderer {
            device,
            queue,
            pipeline,
            colour_pipeline,
            layout,
            cube,
            statics: None,
            pool,
            recorded: None,
            batches: Some(batches),
            readback: Some(readback),
            adapter: describe(&info),
        })
    }

    /// Uploads the scene's static meshes unless they are the ones already on the GPU.
    fn upload_statics(&mut self, scene: &CameraScene) {
        if let Some((meshes, _)) = &self.statics {
            if Arc::ptr_eq(meshes, &scene.meshes) {
                return;
            }
        }
        let buffer = |label, contents: &[u8]| {
            wgpu::util::DeviceExt::create_buffer_init(
                &self.device,
                &wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage: wgpu::BufferUsages::VERTEX,
                },
            )
        };
        let buffers = scene
            .meshes
            .iter()
            .map(|m| StaticBuffers {
                vertices: buffer("static mesh", bytemuck::cast_slice(&m.vertices)),
                count: m.vertices.len() as u32,
                instance: buffer("static mesh instance", bytemuck::bytes_of(&m.instance)),
                bounds: m.bounds,
            })
            .collect();
        self.statics = Some((Arc::clone(&scene.meshes), buffers));
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

    /// [`Renderer::record`] and [`Renderer::flush`]: one frame in a submission of its own.
    pub fn submit(
        &mut self,
        scene: &CameraScene,
        own: &AgentState,
        params: &CameraParams,
    ) -> Result<PendingFrame, CameraError> {
        let frame = self.record(scene, own, params)?;
        self.flush()?;
        Ok(frame)
    }

    /// Frames recorded and not yet flushed.
    pub fn recorded(&self) -> usize {
        self.recorded.as_ref().map_or(0, |r| r.frames.len())
    }

    /// Sends every frame recorded since the last flush to the device in one submission and
    /// starts reading them back (the read-back thread waits for that submission only); each
    /// frame's [`PendingFrame`] then gives its images. Returns how many frames went.
    pub fn flush(&mut self) -> Result<usize, CameraError> {
        let Some(Recorded {
            draws,
            copies,
            mut frames,
            flushed,
        }) = self.recorded.take()
        else {
            return Ok(0);
        };
        let start = Instant::now();
        let index = self.queue.submit([draws.finish(), copies.finish()]);
        let (tx, mapped) = mpsc::channel();
        let mut maps = 0;
        for frame in &frames {
            for buffer in frame.buffers() {
                let tx = tx.clone();
                buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
                maps += 1;
            }
        }
        let submitted = Instant::now();
        flushed.store(true, Ordering::Release);
        let count = frames.len();
        let share = (submitted - start) / count.max(1) as u32;
        for frame in &mut frames {
            frame.submit += share;
        }
        let batch = Batch {
            index,
            submitted,
            frames,
            mapped,
            maps,
        };
        self.batches
            .as_ref()
            .and_then(|b| b.send(batch).ok())
            .ok_or_else(|| CameraError::Readback("the read-back thread stopped".into()))?;
        Ok(count)
    }

    /// Records the draw of `scene` as the camera `params` on `own` sees it, and the copies of
    /// its targets, for the next [`Renderer::flush`]: the frames of several cameras go to the
    /// device in one submission. Each frame draws into a target set of its own (from the pool).
    pub fn record(
        &mut self,
        scene: &CameraScene,
        own: &AgentState,
        params: &CameraParams,
    ) -> Result<PendingFrame, CameraError> {
        let start = Instant::now();
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
        self.upload_statics(scene);
        let instances = scene.instances(&own.agent_id);
        let free = self
            .pool
            .lock()
            .map_err(|_| CameraError::Readback("target pool poisoned".into()))?
            .get_mut(&(w, h))
            .and_then(Vec::pop);
        let mut t = free.unwrap_or_else(|| Targets::new(&self.device, &self.layout, w, h));
        self.queue
            .write_buffer(&t.globals, 0, bytemuck::bytes_of(&globals));
        t.write_instances(&self.device, &self.queue, &instances);
        let recorded = self.recorded.get_or_insert_with(|| Recorded {
            draws: self.device.create_command_encoder(&Default::default()),
            copies: self.device.create_command_encoder(&Default::default()),
            frames: Vec::new(),
            flushed: Arc::default(),
        });
        let flushed = Arc::clone(&recorded.flushed);
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
            let all_attachments = [
                attachment(&t.colour_view, wgpu::Color { r, g, b, a }),
                attachment(
                    &t.depth_view,
                    wgpu::Color {
                        r: f64::from(SKY_DEPTH),
                        g: 0.0,
                        b: 0.0,
                        a: 0.0,
                    },
                ),
                attachment(&t.class_view, wgpu::Color::TRANSPARENT),
            ];
            let colour_only = !(params.depth || params.semantic);
            let mut pass = recorded
                .draws
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some("camera"),
                    color_attachments: if colour_only {
                        &all_attachments[..1]
                    } else {
                        &all_attachments[..]
                    },
                    depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                        view: &t.z_view,
                        depth_ops: Some(wgpu::Operations {
                            load: wgpu::LoadOp::Clear(1.0),
                            store: wgpu::StoreOp::Discard,
                        }),
                        stencil_ops: None,
                    }),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                });
            pass.set_pipeline(if colour_only {
                &self.colour_pipeline
            } else {
                &self.pipeline
            });
            pass.set_bind_group(0, &t.bind_group, &[]);
            // The static meshes in view first, nearest first, then the boxes (the ground
            // last): a fragment behind what is already drawn fails the depth test before it is
            // shaded, which on a CPU rasterizer is most of the cost of a frame.
            if let Some((_, meshes)) = &self.statics {
                let mut visible: Vec<(f32, &StaticBuffers)> = meshes
                    .iter()
                    .filter(|m| in_view(&view_proj, &m.bounds))
                    .map(|m| (((m.bounds.0 + m.bounds.1) * 0.5).distance_squared(eye), m))
                    .collect();
                visible.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (_, mesh) in visible {
                    pass.set_vertex_buffer(0, mesh.vertices.slice(..));
                    pass.set_vertex_buffer(1, mesh.instance.slice(..));
                    pass.draw(0..mesh.count, 0..1);
                }
            }
            if let (Some(buffer), false) = (&t.instances, instances.is_empty()) {
                pass.set_vertex_buffer(0, self.cube.slice(..));
                pass.set_vertex_buffer(1, buffer.slice(..));
                pass.draw(0..36, 0..instances.len() as u32);
            }
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
        copy(&mut recorded.copies, &t.colour, &t.colour_buf, 4);
        if params.depth {
            copy(&mut recorded.copies, &t.depth, &t.depth_buf, 4);
        }
        if params.semantic {
            copy(&mut recorded.copies, &t.class, &t.class_buf, 1);
        }
        let (to, readout) = mpsc::channel();
        recorded.frames.push(Readback {
            targets: t,
            size: (w, h),
            depth: params.depth,
            semantic: params.semantic,
            submit: start.elapsed(),
            to,
        });
        Ok(PendingFrame {
            size: (w, h),
            readout,
            flushed,
        })
    }
}
