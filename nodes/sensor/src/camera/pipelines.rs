//! The render pipelines: boxes (instances of the unit cube) and the world's static surfaces
//! (one draw), each writing colour, depth and class or colour alone.

use super::gpu::*;

/// Vertex layouts and fragment outputs of every pipeline the renderer draws with.
pub(super) struct Pipelines {
    /// The globals' layout (one uniform buffer per target set).
    pub(super) layout: wgpu::BindGroupLayout,
    boxes: wgpu::RenderPipeline,
    boxes_colour: wgpu::RenderPipeline,
    statics: wgpu::RenderPipeline,
    statics_colour: wgpu::RenderPipeline,
}

impl Pipelines {
    pub(super) fn new(device: &wgpu::Device) -> Pipelines {
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
        let box_vertex = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3];
        let box_instance = wgpu::vertex_attr_array![
            2 => Float32x4, 3 => Float32x4, 4 => Float32x4, 5 => Float32x4,
            6 => Float32x4, 7 => Uint32
        ];
        let box_buffers = [
            wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &box_vertex,
            },
            wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<InstanceRaw>() as u64,
                step_mode: wgpu::VertexStepMode::Instance,
                attributes: &box_instance,
            },
        ];
        let static_vertex = wgpu::vertex_attr_array![
            0 => Float32x3, 1 => Float32x3, 2 => Float32x4, 3 => Uint32
        ];
        let static_buffers = [wgpu::VertexBufferLayout {
            array_stride: std::mem::size_of::<StaticVertex>() as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &static_vertex,
        }];
        let all_targets = [
            Some(COLOUR_FORMAT.into()),
            Some(DEPTH_OUT_FORMAT.into()),
            Some(CLASS_FORMAT.into()),
        ];
        let make =
            |vertex_entry: &str, buffers: &[wgpu::VertexBufferLayout<'_>], colour_only: bool| {
                let (fragment_entry, targets) = if colour_only {
                    ("fs_colour", &all_targets[..1])
                } else {
                    ("fs_main", &all_targets[..])
                };
                device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some("camera"),
                    layout: Some(&pipeline_layout),
                    vertex: wgpu::VertexState {
                        module: &shader,
                        entry_point: Some(vertex_entry),
                        compilation_options: Default::default(),
                        buffers,
                    },
                    fragment: Some(wgpu::FragmentState {
                        module: &shader,
                        entry_point: Some(fragment_entry),
                        compilation_options: Default::default(),
                        targets,
                    }),
                    primitive: wgpu::PrimitiveState {
                        // Neither the cube's nor a map's winding is relied on: both faces are
                        // drawn.
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
        Pipelines {
            boxes: make("vs_main", &box_buffers, false),
            boxes_colour: make("vs_main", &box_buffers, true),
            statics: make("vs_static", &static_buffers, false),
            statics_colour: make("vs_static", &static_buffers, true),
            layout,
        }
    }

    /// The boxes' pipeline: colour alone, or colour, depth and class.
    pub(super) fn boxes(&self, colour_only: bool) -> &wgpu::RenderPipeline {
        if colour_only {
            &self.boxes_colour
        } else {
            &self.boxes
        }
    }

    /// The static surfaces' pipeline: colour alone, or colour, depth and class.
    pub(super) fn statics(&self, colour_only: bool) -> &wgpu::RenderPipeline {
        if colour_only {
            &self.statics_colour
        } else {
            &self.statics
        }
    }
}
