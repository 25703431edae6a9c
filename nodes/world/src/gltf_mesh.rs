//! Static meshes from glTF 2.0 files (`.gltf` with external or embedded buffers, `.glb`), placed
//! in the world by the scenario's `meshes = [{ file, position, yaw, scale }]`.
//!
//! Only what physics, lidar and the camera use is read: triangle positions, node transforms and
//! each material's base colour. Textures, normals and animations are not, so there is no image
//! decoding and no `gltf::import` (which loads images too): buffers are resolved here, from the
//! GLB binary chunk, files beside the glTF and base64 `data:` URIs.
//!
//! A mesh file comes from whoever wrote the scenario, so bad input is an error naming the file,
//! never a panic. `gltf` 1.4.1 trusts offsets, strides and counts (its reader computes slice ends
//! unchecked and asserts strides), so every accessor is checked against its data before it is
//! read, and two inputs that panic inside `gltf` itself are refused before it sees them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gltf::accessor::{DataType, Dimensions};
use gltf::buffer::Source;
use gltf::json::validation::Checked;
use gltf::mesh::Mode;
use gltf::{Accessor, Document, Semantic};

use crate::surface::{Material, Surface, SurfaceMesh};

/// Where a mesh file stands in the world: the scenario's `meshes = [{ file, position, yaw, scale }]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Where the file's origin lands, metres (x east, y north, z up).
    pub position: [f64; 3],
    /// Turn about z, counter-clockwise, radians.
    pub yaw: f64,
    /// Uniform scale (glTF files are in metres, so usually 1).
    pub scale: f64,
}

/// Why a mesh file could not be loaded; every message starts with the file's path.
#[derive(Debug, thiserror::Error)]
pub enum GltfError {
    #[error("{}: cannot read: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a glTF 2.0 file: {source}", file.display())]
    Parse { file: PathBuf, source: gltf::Error },
    #[error("{}: needs extension {name}, which convoy cannot read ({hint})", file.display())]
    Extension {
        file: PathBuf,
        name: String,
        hint: &'static str,
    },
    #[error("{}: buffer {index} ('{uri}') cannot be read: {why}", file.display())]
    Buffer {
        file: PathBuf,
        index: usize,
        uri: String,
        why: String,
    },
    /// Data shorter than what refers to it: `what` is "buffer N" or "buffer view N", `user`
    /// "buffer view N" or "accessor N".
    #[error("{}: {what} is {len} bytes, {user} needs {need}", file.display())]
    Truncated {
        file: PathBuf,
        what: String,
        len: usize,
        user: String,
        need: u128,
    },
    /// Anything else the file gets wrong (accessor types, indices, the node tree, non-finite
    /// positions); `why` names the accessor, mesh or node.
    #[error("{}: {why}", file.display())]
    Invalid { file: PathBuf, why: String },
    #[error("{}: holds no triangles", file.display())]
    Empty { file: PathBuf },
}

const COMPRESSION: [&str; 3] = [
    "KHR_draco_mesh_compression",
    "EXT_meshopt_compression",
    "KHR_meshopt_compression",
];
/// Prefixes of extensions about looks only: a file may require them and still be read.
const LOOKS: [&str; 5] = [
    "KHR_materials_",
    "KHR_texture_",
    "EXT_texture_",
    "MSFT_texture_",
    "KHR_lights_",
];
const VEGETATION: [&str; 8] = [
    "tree", "grass", "plant", "bush", "hedge", "veg", "leaf", "leaves",
];

/// What convoy reads for positions and for indices (glTF 2.0 without KHR_mesh_quantization).
const POSITIONS: (Dimensions, &[DataType]) = (Dimensions::Vec3, &[DataType::F32]);
const INDICES: (Dimensions, &[DataType]) = (
    Dimensions::Scalar,
    &[DataType::U8, DataType::U16, DataType::U32],
);

/// Column-major like glTF (`m[column][row]`), in f64 so a city-sized file keeps its millimetres.
type Mat4 = [[f64; 4]; 4];
/// Triangles grouped by (class, colour bits): a BTreeMap, so the output order is stable.
type Groups = BTreeMap<(Material, [u32; 3]), SurfaceMesh>;

/// Loads every triangle primitive of the default scene (or all scenes' nodes if none is default)
/// with node transforms applied, converted from glTF's Y-up (x right, y up, z towards the viewer)
/// to convoy's Z-up world ((x, y, z)_gltf -> (x, -z, y)), then scaled by `placement.scale`, turned
/// by `placement.yaw` about z and moved by `placement.position`.
///
/// One [`Surface`] per (material class, colour) group, in a stable order. The colour is the glTF
/// material's base colour factor, or the class colour for the default material and white
/// (textured) ones. The class is [`Material::Vegetation`] when the mesh's, the material's, the
/// node's or a node above's name says so (tree, grass, plant, bush, hedge, veg, leaf, leaves;
/// "street" does not count as "tree"), else [`Material::Building`].
pub fn load(path: &Path, placement: &Placement) -> Result<Vec<Surface>, GltfError> {
    let file = path.to_path_buf();
    let bytes = std::fs::read(path).map_err(|source| GltfError::Read {
        file: file.clone(),
        source,
    })?;
    let (document, blob) = parse(&file, &bytes)?;
    let buffers = read_buffers(&file, &document, blob)?;
    let mut groups = Groups::new();
    // The roots: the default scene's, else every scene's, each once.
    let scenes: Vec<_> = document
        .default_scene()
        .map_or(document.scenes().collect(), |s| vec![s]);
    let mut once = BTreeSet::new();
    let roots = scenes
        .iter()
        .flat_map(|s| s.nodes())
        .filter(|n| once.insert(n.index()));
    // An explicit stack, not recursion: a deep node chain must not overflow the thread's stack.
    let world = placement_matrix(placement);
    let mut stack: Vec<_> = roots.map(|n| (n, world, false)).collect();
    stack.reverse();
    let mut seen = vec![false; document.nodes().len()];
    while let Some((node, parent, vegetation_above)) = stack.pop() {
        // glTF's nodes form a strict tree: a cycle would loop forever, a shared child doubles.
        match seen.get_mut(node.index()) {
            Some(seen) if !*seen => *seen = true,
            _ => {
                return Err(invalid(
                    &file,
                    format!("node {} is in the tree twice", node.index()),
                ))
            }
        }
        let local = node
            .transform()
            .matrix()
            .map(|column| column.map(f64::from));
        let matrix = mul(&parent, &local);
        let vegetation = vegetation_above || is_vegetation(node.name());
        if let Some(mesh) = node.mesh() {
            add_mesh(&file, &buffers, &mesh, &matrix, vegetation, &mut groups)?;
        }
        let children: Vec<_> = node.children().collect();
        stack.extend(children.into_iter().rev().map(|c| (c, matrix, vegetation)));
    }
    if groups.is_empty() {
        return Err(GltfError::Empty { file });
    }
    let surface = |((material, colour), mesh): ((Material, [u32; 3]), _)| Surface {
        material,
        colour: colour.map(f32::from_bits),
        mesh,
    };
    Ok(groups.into_iter().map(surface).collect())
}

/// Parses, checks extensions, then validates: `gltf`'s own validation refuses every required
/// extension (convoy turns on none of its extension features) with a message that says little.
fn parse(file: &Path, bytes: &[u8]) -> Result<(Document, Option<Vec<u8>>), GltfError> {
    let bad = |source| GltfError::Parse {
        file: file.into(),
        source,
    };
    // gltf subtracts the 12-byte header from a GLB's declared length unchecked (a panic).
    let declared = bytes
        .strip_prefix(b"glTF")
        .and_then(|b| b.get(4..8)?.try_into().ok());
    if let Some(length) = declared.map(u32::from_le_bytes).filter(|&l| l < 12) {
        let error = gltf::binary::Error::Length {
            length,
            length_read: bytes.len(),
        };
        return Err(bad(gltf::Error::Binary(error)));
    }
    let gltf = gltf::Gltf::from_slice_without_validation(bytes).map_err(bad)?;
    let mut json = gltf.document.into_json();
    let extension = |name: &String, hint| GltfError::Extension {
        file: file.into(),
        name: name.clone(),
        hint,
    };
    // Refused even when only used: meshopt's fallback buffers usually hold no data, and a mesh
    // half read is worse than a clear error.
    let mut used = json.extensions_used.iter().chain(&json.extensions_required);
    if let Some(name) = used.find(|name| COMPRESSION.contains(&name.as_str())) {
        let hint = "Draco and meshopt compression are not supported: export the mesh uncompressed";
        return Err(extension(name, hint));
    }
    // Any other required extension might change the triangles (quantized positions, instancing).
    let mut required = json.extensions_required.iter();
    if let Some(name) = required.find(|name| !LOOKS.iter().any(|p| name.starts_with(p))) {
        return Err(extension(name, "export the mesh without it"));
    }
    if json
        .extensions_used
        .iter()
        .any(|e| e == "EXT_mesh_gpu_instancing")
    {
        let why =
            "EXT_mesh_gpu_instancing is not read: an instanced mesh appears once, at its node";
        tracing::warn!("{}: {why}", file.display());
    }
    // gltf's validation indexes each primitive's POSITION accessor before checking it exists.
    let positions = json.meshes.iter().flat_map(|m| &m.primitives);
    let mut positions =
        positions.filter_map(|p| p.attributes.get(&Checked::Valid(Semantic::Positions)));
    if let Some(a) = positions.find(|a| a.value() >= json.accessors.len()) {
        return Err(invalid(
            file,
            format!("POSITION accessor {a} does not exist"),
        ));
    }
    json.extensions_required.clear(); // what is left there was judged harmless above
    let document = Document::from_json(json).map_err(bad)?;
    Ok((document, gltf.blob))
}

/// Each buffer's bytes, at least as many as its declared `byteLength`.
fn read_buffers(
    file: &Path,
    document: &Document,
    mut blob: Option<Vec<u8>>,
) -> Result<Vec<Vec<u8>>, GltfError> {
    let folder = file.parent().unwrap_or(Path::new("."));
    let mut buffers = Vec::new();
    for buffer in document.buffers() {
        let index = buffer.index();
        let (uri, data) = match buffer.source() {
            // Only the first buffer may be the GLB's binary chunk (glTF 2.0, 4.4.3.3).
            Source::Bin if index == 0 => (
                "GLB binary chunk",
                blob.take().ok_or("there is none".into()),
            ),
            Source::Bin => ("", Err("it has no uri".to_string())),
            Source::Uri(uri) => (uri, read_uri(folder, uri)),
        };
        let uri = uri.chars().take(80).collect(); // not a whole data: URI in a message
        let error = |why| GltfError::Buffer {
            file: file.into(),
            index,
            uri,
            why,
        };
        match data {
            Err(why) => return Err(error(why)),
            Ok(data) if data.len() < buffer.length() => {
                let (len, declared) = (data.len(), buffer.length());
                return Err(error(format!(
                    "it holds {len} bytes, fewer than its byteLength {declared}"
                )));
            }
            Ok(data) => buffers.push(data),
        }
    }
    Ok(buffers)
}

fn read_uri(folder: &Path, uri: &str) -> Result<Vec<u8>, String> {
    if let Some(data) = uri.strip_prefix("data:") {
        let (_, text) = data
            .split_once(";base64,")
            .ok_or("a data: URI that is not base64")?;
        return decode_base64(text).ok_or("its base64 is malformed".into());
    }
    if uri.contains("://") {
        return Err("convoy reads only files beside the glTF and data: URIs".into());
    }
    let path = folder.join(percent_decode(uri).ok_or("its percent-encoding is malformed")?);
    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Appends a mesh's triangle primitives, through `matrix`, to their (class, colour) groups.
fn add_mesh(
    file: &Path,
    buffers: &[Vec<u8>],
    mesh: &gltf::Mesh,
    matrix: &Mat4,
    vegetation_above: bool,
    groups: &mut Groups,
) -> Result<(), GltfError> {
    let label = mesh
        .name()
        .map_or(mesh.index().to_string(), |n| format!("'{n}'"));
    let error = |why: String| invalid(file, format!("mesh {label}: {why}"));
    for primitive in mesh.primitives() {
        let mode = primitive.mode();
        let Some(positions) = primitive.get(&Semantic::Positions) else {
            tracing::warn!(
                "{}: mesh {label}: skipping a primitive without positions",
                file.display()
            );
            continue;
        };
        if !matches!(
            mode,
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            tracing::warn!(
                "{}: mesh {label}: skipping {mode:?}, convoy reads triangles",
                file.display()
            );
            continue;
        }
        check_accessor(file, buffers, &positions, POSITIONS)?;
        let reader = primitive.reader(|buffer| buffers.get(buffer.index()).map(Vec::as_slice));
        let local: Vec<[f32; 3]> = reader
            .read_positions()
            .map(Iterator::collect)
            .unwrap_or_default();
        let count = u32::try_from(local.len()).map_err(|_| error("too many vertices".into()))?;
        let indices: Vec<u32> = match primitive.indices() {
            Some(accessor) => {
                check_accessor(file, buffers, &accessor, INDICES)?;
                reader
                    .read_indices()
                    .map(|i| i.into_u32().collect())
                    .unwrap_or_default()
            }
            None => (0..count).collect(),
        };
        if let Some(i) = indices.iter().find(|&&i| i >= count) {
            return Err(error(format!("index {i} is beyond its {count} vertices")));
        }
        let vertices: Vec<_> = local
            .iter()
            .map(|p| apply(matrix, p.map(f64::from)))
            .collect();
        if vertices.iter().flatten().any(|c| !c.is_finite()) {
            return Err(error("a vertex position is not finite".into()));
        }
        // A mirroring transform turns front faces back: glTF says to swap the winding then.
        let mirrored = det3(matrix) < 0.0;
        let triangles = triangles(mode, &indices).into_iter();
        let triangles = triangles.filter(|[a, b, c]| a != b && b != c && a != c); // degenerate
        let triangles = triangles.map(|[a, b, c]| if mirrored { [a, c, b] } else { [a, b, c] });
        let part = SurfaceMesh {
            vertices,
            triangles: triangles.collect(),
        };
        if part.is_empty() {
            continue;
        }
        let material = primitive.material();
        let named = is_vegetation(mesh.name()) || is_vegetation(material.name());
        let class = if vegetation_above || named {
            Material::Vegetation
        } else {
            Material::Building
        };
        let [r, g, b, _] = material.pbr_metallic_roughness().base_color_factor();
        // White is the default material's colour and what textured materials carry (their colour
        // is in a texture convoy does not decode): the class colour stands in for both.
        let plain = material.index().is_none() || [r, g, b] == [1.0; 3];
        let colour = if plain || ![r, g, b].iter().all(|c| c.is_finite()) {
            class.colour()
        } else {
            [r, g, b].map(|c| c.clamp(0.0, 1.0) + 0.0) // + 0.0: -0.0 and 0.0 group together
        };
        let group = groups.entry((class, colour.map(f32::to_bits))).or_default();
        if u32::try_from(group.vertices.len() + part.vertices.len()).is_err() {
            return Err(error("too many vertices of one material and colour".into()));
        }
        group.append(&part);
    }
    Ok(())
}

/// Checks an accessor before `gltf`'s reader sees it: its type, and that it lies inside its view
/// and its view inside its buffer.
fn check_accessor(
    file: &Path,
    buffers: &[Vec<u8>],
    accessor: &Accessor,
    (dimensions, types): (Dimensions, &[DataType]),
) -> Result<(), GltfError> {
    let a = accessor.index();
    let (d, t) = (accessor.dimensions(), accessor.data_type());
    let why = if accessor.sparse().is_some() {
        Some("is sparse, which convoy does not read".to_string())
    } else if d != dimensions || !types.contains(&t) || accessor.normalized() {
        Some(format!(
            "holds {d:?} of {t:?}, where convoy reads {dimensions:?} of {types:?}"
        ))
    } else if accessor.count() == 0 {
        Some("is empty".to_string())
    } else {
        None
    };
    if let Some(why) = why {
        return Err(invalid(file, format!("accessor {a} {why}")));
    }
    let Some(view) = accessor.view() else {
        return Ok(()); // neither a view nor sparse: validation has refused that already
    };
    let (size, v, b) = (accessor.size(), view.index(), view.buffer().index());
    let stride = view.stride().unwrap_or(size);
    if stride < size {
        let why =
            format!("accessor {a} has {size}-byte elements, buffer view {v} a stride of {stride}");
        return Err(invalid(file, why));
    }
    let len = buffers.get(b).map_or(0, Vec::len);
    // In u128, where these sums of u64s cannot overflow, so a message says the true need.
    let wide = |n: usize| n as u128;
    let in_view =
        (wide(accessor.count()) - 1) * wide(stride) + wide(size) + wide(accessor.offset());
    let fits = |what: String, len: usize, user: String, need: u128| {
        if need <= wide(len) {
            return Ok(());
        }
        let file = file.into();
        Err(GltfError::Truncated {
            file,
            what,
            len,
            user,
            need,
        })
    };
    let start = wide(view.offset());
    let end = start + wide(view.length());
    fits(
        format!("buffer {b}"),
        len,
        format!("accessor {a}"),
        start + in_view,
    )?;
    fits(format!("buffer {b}"), len, format!("buffer view {v}"), end)?;
    fits(
        format!("buffer view {v}"),
        view.length(),
        format!("accessor {a}"),
        in_view,
    )
}

/// Triangles of a triangle list, strip or fan (glTF 2.0, 3.7.2.1).
fn triangles(mode: Mode, indices: &[u32]) -> Vec<[u32; 3]> {
    match (mode, indices.split_first()) {
        (Mode::TriangleStrip, _) => (indices.windows(3).enumerate())
            .map(|(i, w)| {
                if i % 2 == 0 {
                    [w[0], w[1], w[2]]
                } else {
                    [w[0], w[2], w[1]]
                }
            })
            .collect(),
        (Mode::TriangleFan, Some((&first, rest))) => {
            rest.windows(2).map(|w| [w[0], w[1], first]).collect()
        }
        (Mode::TriangleFan, None) => Vec::new(),
        _ => indices
            .chunks_exact(3)
            .map(|t| [t[0], t[1], t[2]])
            .collect(),
    }
}

/// Whether a name says vegetation; "street" is taken out first, or every street lamp is a tree.
fn is_vegetation(name: Option<&str>) -> bool {
    let name = name
        .unwrap_or_default()
        .to_lowercase()
        .replace("street", " ");
    VEGETATION.iter().any(|word| name.contains(word))
}

/// Position * yaw * scale * (Y-up to Z-up); the columns are where glTF's x, y, z axes land.
fn placement_matrix(p: &Placement) -> Mat4 {
    let (sin, cos, s) = (p.yaw.sin(), p.yaw.cos(), p.scale);
    let [x, y, z] = p.position;
    [
        [s * cos, s * sin, 0.0, 0.0],
        [0.0, 0.0, s, 0.0],
        [s * sin, -s * cos, 0.0, 0.0],
        [x, y, z, 1.0],
    ]
}

fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    std::array::from_fn(|c| std::array::from_fn(|r| (0..4).map(|k| a[k][r] * b[c][k]).sum()))
}

fn apply(m: &Mat4, [x, y, z]: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|r| m[0][r] * x + m[1][r] * y + m[2][r] * z + m[3][r])
}

fn det3(m: &Mat4) -> f64 {
    m[0][0] * (m[1][1] * m[2][2] - m[2][1] * m[1][2])
        - m[1][0] * (m[0][1] * m[2][2] - m[2][1] * m[0][2])
        + m[2][0] * (m[0][1] * m[1][2] - m[1][1] * m[0][2])
}

fn invalid(file: &Path, why: String) -> GltfError {
    GltfError::Invalid {
        file: file.into(),
        why,
    }
}

/// Standard or URL-safe base64, padding optional (`gltf` decodes data URIs only in `import`).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut bits, mut held) = (0u32, 0u32);
    for c in text.trim_end_matches('=').bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        (bits, held) = ((bits << 6) | u32::from(value), held + 6);
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    Some(out)
}

/// Buffer file names in URIs are percent-encoded ("my%20city.bin").
fn percent_decode(uri: &str) -> Option<String> {
    let mut out = Vec::with_capacity(uri.len());
    let mut bytes = uri.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let mut hex = || char::from(bytes.next()?).to_digit(16);
            out.push((hex()? * 16 + hex()?) as u8);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests;
