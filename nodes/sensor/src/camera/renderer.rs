//! The renderer: device, pipeline and the per-frame draw and copy.

use super::adapter::{describe, pick_adapter, AdapterChoice, BACKENDS};
use super::gpu::*;
use super::pipelines::Pipelines;
use super::readback::{self, Batch, PendingFrame, Readback};
use super::scene::{position_of, quat_of, StaticMeshes, StaticPart};
use super::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

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
    pipelines: Pipelines,
    cube: wgpu::Buffer,
    /// The static surfaces of the scene last rendered and their vertex buffer, uploaded once.
    statics: Option<(Arc<StaticMeshes>, wgpu::Buffer)>,
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
        let pipelines = Pipelines::new(&device);
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
            pipelines,
            cube,
            statics: None,
            pool,
            recorded: None,
            batches: Some(batches),
            readback: Some(readback),
            adapter: describe(&info),
        })
    }

    /// Uploads the scene's static surfaces unless they are the ones already on the GPU.
    fn upload_statics(&mut self, scene: &CameraScene) {
        if let Some((meshes, _)) = &self.statics {
            if Arc::ptr_eq(meshes, &scene.meshes) {
                return;
            }
        }
        let vertices = wgpu::util::DeviceExt::create_buffer_init(
            &self.device,
            &wgpu::util::BufferInitDescriptor {
                label: Some("static surfaces"),
                contents: bytemuck::cast_slice(&scene.meshes.vertices),
                usage: wgpu::BufferUsages::VERTEX,
            },
        );
        self.statics = Some((Arc::clone(&scene.meshes), vertices));
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
        let mut t =
            free.unwrap_or_else(|| Targets::new(&self.device, &self.pipelines.layout, w, h));
        self.queue
            .write_buffer(&t.globals, 0, bytemuck::bytes_of(&globals));
        t.write_instances(&self.device, &self.queue, &instances);
        // The static surfaces in view, nearest first: a fragment behind what is already drawn
        // fails the depth test before it is shaded, which on a CPU rasterizer is most of the
        // cost of a frame. All of them go in one indexed draw, in that order (lavapipe pays
        // for each draw call in its one-threaded front end; the triangles and their order, so
        // the image, are those of a draw per surface).
        let indices = self.statics.as_ref().map_or_else(Vec::new, |(meshes, _)| {
            let mut visible: Vec<(f32, &StaticPart)> = meshes
                .parts
                .iter()
                .filter(|m| in_view(&view_proj, &m.bounds))
                .map(|m| (((m.bounds.0 + m.bounds.1) * 0.5).distance_squared(eye), m))
                .collect();
            visible.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut indices = Vec::with_capacity(visible.iter().map(|v| v.1.count as usize).sum());
            for (_, part) in visible {
                indices.extend(part.first..part.first + part.count);
            }
            indices
        });
        t.write_indices(&self.device, &self.queue, &indices);
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
            pass.set_bind_group(0, &t.bind_group, &[]);
            // The static surfaces first, then the boxes (the ground last).
            if let (Some((_, vertices)), Some(index_buffer), false) =
                (&self.statics, &t.indices, indices.is_empty())
            {
                pass.set_pipeline(self.pipelines.statics(colour_only));
                pass.set_vertex_buffer(0, vertices.slice(..));
                pass.set_index_buffer(index_buffer.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..indices.len() as u32, 0, 0..1);
            }
            pass.set_pipeline(self.pipelines.boxes(colour_only));
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
