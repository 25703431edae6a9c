//! A scenario's `[map]`: the ground plane, static boxes, and the files convoy-world builds the
//! rest of the world from (an OpenDRIVE road network, glTF meshes).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {
    /// Half extents (x, y) of the flat ground plane centred on the origin.
    #[serde(default = "default_ground")]
    pub ground_half_extents: [f64; 2],
    /// Static boxes and walls.
    #[serde(default)]
    pub boxes: Vec<BoxSpec>,
    /// An ASAM OpenDRIVE road network (.xodr), relative to the scenario file.
    #[serde(default)]
    pub opendrive: Option<String>,
    /// Static glTF meshes (.gltf, .glb), relative to the scenario file.
    #[serde(default)]
    pub meshes: Vec<MeshSpec>,
}

/// A glTF file placed in the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeshSpec {
    pub file: String,
    /// Where the file's origin goes, metres.
    #[serde(default)]
    pub position: [f64; 3],
    /// Rotation about z, radians (counter-clockwise).
    #[serde(default)]
    pub yaw: f64,
    /// Uniform scale.
    #[serde(default = "unit_scale")]
    pub scale: f64,
}

fn default_ground() -> [f64; 2] {
    [500.0, 500.0]
}

impl Default for MapSpec {
    fn default() -> Self {
        MapSpec {
            ground_half_extents: default_ground(),
            boxes: Vec::new(),
            opendrive: None,
            meshes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    pub center: [f64; 3],
    pub half_extents: [f64; 3],
    /// Rotation about z, radians.
    #[serde(default)]
    pub yaw: f64,
}

fn unit_scale() -> f64 {
    1.0
}
