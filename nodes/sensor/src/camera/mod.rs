//! Camera: off-screen wgpu rendering of the scenario's world — the ground, the map's static
//! boxes, the world's road surfaces (coloured by lane type), painted road marks and meshes (in
//! their base colours), and every agent's box in a colour of its own, under one directional
//! light — from a camera mounted on its agent. One pass writes three targets: colour (rgb8), depth along the
//! optical axis (32-bit float metres) and semantic class ids; the targets are copied into
//! read-back buffers that are reused from frame to frame.
//!
//! [`CameraScene`] is the data (boxes as instances of one unit cube, built from the scenario,
//! agents moved to each frame's states); [`Renderer`] owns the GPU objects and renders a
//! [`CameraParams`] view of a scene: [`Renderer::record`] each camera of a frame, then
//! [`Renderer::flush`] sends them to the device in one submission, and the renderer's read-back
//! thread hands each [`PendingFrame`] its images. It works on any wgpu adapter, Mesa's lavapipe
//! (CPU) included, picked by [`AdapterChoice`]; with none, creating it fails with what to
//! install. Rendering uses no randomness, so a frame renders the same every time on a given
//! backend, alone or with others in a submission.

use std::collections::BTreeMap;

use convoy_core::messages::AgentState;
use convoy_core::scenario::{Scenario, SensorSpec};
use glam::{Mat4, Quat, Vec3};

/// Semantic class ids written to the class target (one list for every node: convoy-world's).
pub use convoy_world::surface::{
    CLASS_BUILDING, CLASS_GROUND, CLASS_LANE_MARKING, CLASS_OTHER, CLASS_ROAD, CLASS_SIDEWALK,
    CLASS_SKY, CLASS_STATIC, CLASS_VEHICLE,
};

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
    #[error(
        "--adapter {choice}: no {} adapter for the camera; found: {found}{}",
        match choice { AdapterChoice::Cpu => "CPU (software)", _ => "hardware (GPU)" },
        match choice {
            AdapterChoice::Cpu => " (install Mesa's Vulkan drivers for lavapipe: apt-get install \
                                  mesa-vulkan-drivers libvulkan1)",
            _ => " (use --adapter auto or cpu to render on the CPU)",
        }
    )]
    NoAdapterOfKind {
        choice: AdapterChoice,
        found: String,
    },
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

mod adapter;
mod gpu;
mod pipelines;
mod readback;
mod renderer;
mod scene;
#[cfg(test)]
mod tests;

pub use adapter::{takes, AdapterChoice};
pub use readback::{PendingFrame, RawImages, ReadTimes};
pub use renderer::Renderer;
pub use scene::CameraScene;

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
