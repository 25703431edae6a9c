//! The renderer: device, pipeline and the per-frame draw and copy.

use super::gpu::*;
use super::readback::PendingFrame;
use super::scene::{position_of, quat_of, MeshDraw};
use super::*;

use std::sync::Arc;

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
    globals: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    cube: wgpu::Buffer,
    /// The static meshes of the scene last rendered, uploaded once: (the scene's meshes, and
    /// per mesh its vertex buffer, vertex count and instance buffer).
    statics: Option<(Arc<Vec<MeshDraw>>, Vec<StaticBuffers>)>,
    /// Free target sets by image size: a frame takes one, and gives it back once read.
    pool: TargetPool,
    /// The adapter's name, for logs ("llvmpipe" on lavapipe).
    pub adapter: String,
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
        Ok(Renderer {
            device,
            queue,
            pipeline,
            colour_pipeline,
            globals,
            bind_group,
            cube,
            statics: None,
            pool: TargetPool::default(),
            adapter: format!("{} ({:?})", info.name, info.backend),
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
        self.upload_statics(scene);
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
            let all_attachments = [
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
            ];
            let colour_only = !(params.depth || params.semantic);
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("camera"),
                color_attachments: if colour_only {
                    &all_attachments[..1]
                } else {
                    &all_attachments[..]
                },
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
            pass.set_pipeline(if colour_only {
                &self.colour_pipeline
            } else {
                &self.pipeline
            });
            pass.set_bind_group(0, &self.bind_group, &[]);
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
