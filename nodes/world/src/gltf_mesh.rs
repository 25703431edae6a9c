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
mod tests {
    use super::*;
    use std::f64::consts::FRAC_PI_2;

    const IDENTITY: Placement = Placement {
        position: [0.0; 3],
        yaw: 0.0,
        scale: 1.0,
    };
    /// A unit square on glTF's ground (y up), one corner lifted; wound counter-clockwise seen
    /// from above.
    const QUAD: [[f32; 3]; 4] = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 0.5, -1.0],
        [0.0, 0.0, -1.0],
    ];
    const ONE_MESH: &str = r#""scene":0,"scenes":[{"nodes":[0]}],"nodes":[{"mesh":0}],
        "meshes":[{"primitives":[{"attributes":{"POSITION":0},"indices":1}]}]"#;

    /// A glTF document with accessor 0 (positions) and 1 (u16 indices) in buffer 0, whose JSON
    /// has the placeholder `BUFFER` where its uri goes, and the buffer's bytes.
    fn asset(positions: &[[f32; 3]], indices: &[u16], rest: &str) -> (String, Vec<u8>) {
        let mut bin: Vec<u8> = positions
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (at, n, m) = (bin.len(), positions.len(), indices.len());
        bin.extend(indices.iter().flat_map(|i| i.to_le_bytes()));
        bin.resize(bin.len().next_multiple_of(4), 0);
        let lo: [f32; 3] =
            std::array::from_fn(|i| positions.iter().map(|p| p[i]).fold(f32::MAX, f32::min));
        let hi: [f32; 3] =
            std::array::from_fn(|i| positions.iter().map(|p| p[i]).fold(f32::MIN, f32::max));
        let json = format!(
            r#"{{"asset":{{"version":"2.0"}},"buffers":[{{"byteLength":{}BUFFER}}],
            "bufferViews":[{{"buffer":0,"byteLength":{at}}},{{"buffer":0,"byteOffset":{at},"byteLength":{}}}],
            "accessors":[{{"bufferView":0,"componentType":5126,"count":{n},"type":"VEC3","min":{lo:?},"max":{hi:?}}},
                {{"bufferView":1,"componentType":5123,"count":{m},"type":"SCALAR"}}],{rest}}}"#,
            bin.len(),
            m * 2
        );
        (json, bin)
    }

    /// The document as a .gltf with its buffer embedded as a base64 data URI.
    fn embedded(json: &str, bin: &[u8]) -> String {
        json.replace(
            "BUFFER",
            &format!(
                r#","uri":"data:application/octet-stream;base64,{}""#,
                base64(bin)
            ),
        )
    }

    fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
        let mut text = json.replace("BUFFER", "").into_bytes();
        text.resize(text.len().next_multiple_of(4), b' ');
        let total = (12 + 8 + text.len() + 8 + bin.len()) as u32;
        let mut out = b"glTF".to_vec();
        out.extend(
            [2, total, text.len() as u32]
                .iter()
                .flat_map(|v| v.to_le_bytes()),
        );
        out.extend(b"JSON".iter().chain(&text));
        out.extend((bin.len() as u32).to_le_bytes());
        out.extend(b"BIN\0".iter().chain(bin));
        out
    }

    fn base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                let c = if i <= chunk.len() {
                    ALPHABET[(n >> (18 - 6 * i) & 63) as usize]
                } else {
                    b'='
                };
                out.push(char::from(c));
            }
        }
        out
    }

    /// A folder of the calling test's own: tests run in parallel.
    fn scratch(test: &str) -> PathBuf {
        std::env::temp_dir().join(format!("convoy-gltf-{}-{test}", std::process::id()))
    }

    fn write(test: &str, name: &str, contents: &[u8]) -> PathBuf {
        std::fs::create_dir_all(scratch(test)).unwrap();
        let path = scratch(test).join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Writes `contents` as `name` in the test's folder, loads it and removes the folder.
    fn load_bytes(
        test: &str,
        name: &str,
        contents: &[u8],
        at: &Placement,
    ) -> Result<Vec<Surface>, GltfError> {
        let result = load(&write(test, name, contents), at);
        std::fs::remove_dir_all(scratch(test)).unwrap();
        result
    }

    fn load_text(test: &str, json: &str) -> Result<Vec<Surface>, GltfError> {
        load_bytes(test, "mesh.gltf", json.as_bytes(), &IDENTITY)
    }

    fn assert_close(got: &[[f64; 3]], want: &[[f64; 3]]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                g.iter().zip(w).all(|(g, w)| (g - w).abs() < 1e-6),
                "{got:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn a_quad_is_turned_up_scaled_yawed_and_moved() {
        let (json, bin) = asset(&QUAD, &[0, 1, 2, 0, 2, 3], ONE_MESH);
        let placement = Placement {
            position: [10.0, 20.0, 30.0],
            yaw: FRAC_PI_2,
            scale: 2.0,
        };
        let surfaces = load_bytes(
            "quad",
            "quad.gltf",
            embedded(&json, &bin).as_bytes(),
            &placement,
        )
        .unwrap();
        assert_eq!(surfaces.len(), 1);
        let surface = &surfaces[0];
        assert_eq!(
            (surface.material, surface.colour),
            (Material::Building, Material::Building.colour())
        );
        // glTF (x, y, z) -> (x, -z, y); x2; east turns north; + (10, 20, 30).
        let want = [
            [10.0, 20.0, 30.0],
            [10.0, 22.0, 30.0],
            [8.0, 22.0, 31.0],
            [8.0, 20.0, 30.0],
        ];
        assert_close(&surface.mesh.vertices, &want);
        assert_eq!(surface.mesh.triangles, vec![[0, 1, 2], [0, 2, 3]]);
    }

    #[test]
    fn a_glb_reads_its_binary_chunk() {
        let (json, bin) = asset(&QUAD, &[0, 1, 2, 0, 2, 3], ONE_MESH);
        let surfaces = load_bytes("glb", "quad.glb", &glb(&json, &bin), &IDENTITY).unwrap();
        let want = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.5],
            [0.0, 1.0, 0.0],
        ];
        assert_close(&surfaces[0].mesh.vertices, &want);
    }

    #[test]
    fn node_transforms_apply_down_the_tree() {
        // No default scene: every scene's nodes. The parent turns +90° about glTF's up and
        // lifts by 1; the child moves +1 along x by a column-major matrix.
        let rest = r#""scenes":[{"nodes":[0]}],"nodes":[
            {"name":"Group","rotation":[0,0.70710677,0,0.70710677],"translation":[0,1,0],"children":[1]},
            {"matrix":[1,0,0,0, 0,1,0,0, 0,0,1,0, 1,0,0,1],"mesh":0}],
            "meshes":[{"primitives":[{"attributes":{"POSITION":0},"indices":1}]}]"#;
        let (json, bin) = asset(
            &[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]],
            &[0, 1, 2],
            rest,
        );
        let surfaces = load_text("tree", &embedded(&json, &bin)).unwrap();
        assert_close(
            &surfaces[0].mesh.vertices,
            &[[0.0, 1.0, 1.0], [0.0, 2.0, 1.0], [-1.0, 1.0, 1.0]],
        );
        assert_eq!(surfaces[0].mesh.triangles, vec![[0, 1, 2]]);

        // A mirroring node keeps the faces' front up by swapping the winding.
        let mirrored =
            embedded(&json, &bin).replace(r#""matrix":[1,0,0,0"#, r#""matrix":[-1,0,0,0"#);
        assert_eq!(
            load_text("mirror", &mirrored).unwrap()[0].mesh.triangles,
            vec![[0, 2, 1]]
        );

        let cycle = embedded(&json, &bin).replace(r#""mesh":0}]"#, r#""mesh":0,"children":[0]}]"#);
        let error = load_text("cycle", &cycle).unwrap_err().to_string();
        assert!(error.contains("node 0 is in the tree twice"), "{error}");
    }

    #[test]
    fn a_missing_external_buffer_is_named() {
        let (json, _) = asset(&QUAD, &[0, 1, 2], ONE_MESH);
        let json = json.replace("BUFFER", r#","uri":"no%20such.bin""#);
        let error = load_bytes("missing", "city.gltf", json.as_bytes(), &IDENTITY);
        let error = error.unwrap_err().to_string();
        let path = scratch("missing").join("city.gltf");
        assert!(
            error.starts_with(&format!(
                "{}: buffer 0 ('no%20such.bin') cannot be read: ",
                path.display()
            )),
            "{error}"
        );
        assert!(error.contains("no such.bin"), "{error}");

        // A .bin beside the file is read.
        let (json, bin) = asset(&QUAD, &[0, 1, 2], ONE_MESH);
        write("external", "city bin.bin", &bin);
        let json = json.replace("BUFFER", r#","uri":"city%20bin.bin""#);
        assert_eq!(
            load_text("external", &json).unwrap()[0]
                .mesh
                .triangles
                .len(),
            1
        );
    }

    #[test]
    fn compression_and_geometry_extensions_are_refused() {
        let (json, bin) = asset(&QUAD, &[0, 1, 2], ONE_MESH);
        let with = |field: &str, name: &str| {
            embedded(&json, &bin).replacen('{', &format!(r#"{{"{field}":["{name}"],"#), 1)
        };
        let error = load_text(
            "draco",
            &with("extensionsRequired", "KHR_draco_mesh_compression"),
        )
        .unwrap_err();
        assert!(matches!(error, GltfError::Extension { .. }), "{error}");
        let error = error.to_string();
        assert!(error.contains("needs extension KHR_draco_mesh_compression, which convoy cannot read (Draco and meshopt compression are not supported: export the mesh uncompressed)"), "{error}");
        let error = load_text(
            "meshopt",
            &with("extensionsUsed", "EXT_meshopt_compression"),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("needs extension EXT_meshopt_compression"),
            "{error}"
        );
        let error = load_text(
            "quantized",
            &with("extensionsRequired", "KHR_mesh_quantization"),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("needs extension KHR_mesh_quantization"),
            "{error}"
        );
        // One about looks only is fine.
        assert!(load_text("unlit", &with("extensionsRequired", "KHR_materials_unlit")).is_ok());
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let (json, bin) = asset(&QUAD, &[0, 1, 2, 0, 2, 3], ONE_MESH);
        let text = embedded(&json, &bin);
        let cases = [
            // More vertices than the buffer holds (60 bytes: 48 of positions, 12 of indices).
            (
                text.replace(r#""count":4,"type":"VEC3""#, r#""count":10,"type":"VEC3""#),
                "buffer 0 is 60 bytes, accessor 0 needs 120",
            ),
            (
                text.replace(r#""count":4,"#, r#""count":18446744073709551615,"#),
                "accessor 0 needs 221360928884514619380",
            ),
            (
                text.replace(r#""count":4,"#, r#""count":5,"#),
                "buffer view 0 is 48 bytes, accessor 0 needs 60",
            ),
            (
                text.replace(r#""byteLength":48}"#, r#""byteLength":96}"#),
                "buffer 0 is 60 bytes, buffer view 0 needs 96",
            ),
            (
                json.replace(
                    "BUFFER",
                    &format!(r#","uri":"data:;base64,{}""#, base64(&bin[..40])),
                ),
                "holds 40 bytes, fewer than its byteLength 60",
            ),
            (
                text.replace(r#""byteLength":48}"#, r#""byteLength":48,"byteStride":4}"#),
                "a stride of 4",
            ),
            (
                text.replace(r#""count":4,"#, r#""count":0,"#),
                "accessor 0 is empty",
            ),
            (text.replace("5126", "5121"), "accessor 0 holds Vec3 of U8"),
            (
                text.replace(r#""POSITION":0"#, r#""POSITION":7"#),
                "POSITION accessor 7 does not exist",
            ),
            (
                text.replace(r#""indices":1"#, r#""indices":0"#),
                "accessor 0 holds Vec3 of F32",
            ),
            (
                text.replace(r#""nodes":[0]"#, r#""nodes":[9]"#),
                "not a glTF 2.0 file",
            ),
            (
                // Not JSON at all.
                text.replace("\"min\":[0.0, 0.0, -1.0]", "\"min\":[0.0, 0.0, NaN]"),
                "not a glTF 2.0 file",
            ),
        ];
        for (i, (json, want)) in cases.iter().enumerate() {
            let Err(error) = load_text(&format!("bad{i}"), json) else {
                panic!("case {i} loaded")
            };
            let error = error.to_string();
            assert!(error.contains(want), "case {i}: {error}");
        }
        // Indices beyond the vertices, and a NaN position.
        let (json, bin) = asset(&QUAD, &[0, 1, 4], ONE_MESH);
        let error = load_text("index", &embedded(&json, &bin))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("mesh 0: index 4 is beyond its 4 vertices"),
            "{error}"
        );
        let (json, bin) = asset(
            &[[0.0; 3], [1.0, 0.0, f32::NAN], [0.0, 0.0, 1.0]],
            &[0, 1, 2],
            ONE_MESH,
        );
        let json = json
            .replace("NaN", "0.0")
            .replace(r#""primitives""#, r#""name":"Wall","primitives""#);
        let error = load_text("nan", &embedded(&json, &bin))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("mesh 'Wall': a vertex position is not finite"),
            "{error}"
        );
        // A GLB whose header declares less than the header itself.
        let mut bytes = glb(&json, &bin);
        bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
        let error = load_bytes("header", "short.glb", &bytes, &IDENTITY)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a glTF 2.0 file"), "{error}");
        for cut in [0, 3, 12, 20, 40] {
            assert!(load_bytes("cut", "cut.glb", &glb(&json, &bin)[..cut], &IDENTITY).is_err());
        }
    }

    #[test]
    fn names_decide_vegetation_and_colours_group() {
        let rest = r#""scene":0,"scenes":[{"nodes":[0,1,2,3,4,5,6]}],
            "materials":[{"name":"Brick","pbrMetallicRoughness":{"baseColorFactor":[0.8,0.1,0.1,1]}},
                {"name":"Leaves","pbrMetallicRoughness":{"baseColorFactor":[0.1,0.6,0.1,1]}},
                {"name":"Textured","pbrMetallicRoughness":{"baseColorFactor":[1,1,1,1]}}],
            "meshes":[{"name":"Wall","primitives":[{"attributes":{"POSITION":0},"indices":1,"material":0}]},
                {"name":"Box","primitives":[{"attributes":{"POSITION":0},"indices":1,"material":1}]},
                {"name":"Pole","primitives":[{"attributes":{"POSITION":0},"indices":1}]},
                {"name":"PineTree","primitives":[{"attributes":{"POSITION":0},"indices":1,"material":0}]},
                {"name":"Roof","primitives":[{"attributes":{"POSITION":0},"indices":1,"material":2}]}],
            "nodes":[{"name":"House","mesh":0},{"name":"Garage","mesh":0},{"name":"Thing","mesh":1},
                {"name":"Street_Lamp","mesh":2},{"name":"X","mesh":3},{"name":"Shed","mesh":4},
                {"name":"HEDGES","children":[7]},{"name":"Part","mesh":0}]"#;
        let (json, bin) = asset(&QUAD, &[0, 1, 2], rest);
        let surfaces = load_text("groups", &embedded(&json, &bin)).unwrap();
        let red = [0.8, 0.1, 0.1];
        let got: Vec<_> = surfaces
            .iter()
            .map(|s| {
                (
                    s.material,
                    s.colour,
                    s.mesh.triangles.len(),
                    s.mesh.vertices.len(),
                )
            })
            .collect();
        let want = vec![
            (Material::Building, Material::Building.colour(), 2, 8), // Street_Lamp (not a tree), Shed
            (Material::Building, red, 2, 8),                         // House, Garage
            (Material::Vegetation, [0.1, 0.6, 0.1], 1, 4), // Thing, by its material's name
            (Material::Vegetation, red, 2, 8),             // PineTree, Part below HEDGES
        ];
        let mut got_sorted = got.clone();
        got_sorted.sort_by(|a, b| (a.0, a.1.map(f32::to_bits)).cmp(&(b.0, b.1.map(f32::to_bits))));
        assert_eq!(got, got_sorted, "groups come in a stable order");
        for w in &want {
            assert!(got.contains(w), "{w:?} not in {got:?}");
        }
        assert_eq!(got.len(), want.len());
        assert_eq!(surfaces[1].mesh.triangles, vec![[0, 1, 2], [4, 5, 6]]);
    }

    #[test]
    fn strips_and_fans_become_triangles_and_points_are_skipped() {
        let rest = r#""scene":0,"scenes":[{"nodes":[0]}],"nodes":[{"mesh":0}],
            "meshes":[{"primitives":[{"attributes":{"POSITION":0},"mode":5},
                {"attributes":{"POSITION":0},"mode":6},{"attributes":{"POSITION":0},"mode":0}]}]"#;
        let (json, bin) = asset(&QUAD, &[], rest);
        let surfaces = load_text("strip", &embedded(&json, &bin)).unwrap();
        assert_eq!(
            surfaces[0].mesh.triangles,
            vec![[0, 1, 2], [1, 3, 2], [5, 6, 4], [6, 7, 4]]
        );

        let points = json
            .replace(r#""mode":5"#, r#""mode":0"#)
            .replace(r#""mode":6"#, r#""mode":1"#);
        let error = load_text("points", &embedded(&points, &bin)).unwrap_err();
        assert!(matches!(error, GltfError::Empty { .. }));
        assert!(
            error.to_string().ends_with("mesh.gltf: holds no triangles"),
            "{error}"
        );
    }

    #[test]
    fn base64_and_percent_decoding() {
        for n in 0..8 {
            let bytes: Vec<u8> = (0..n).map(|i| 251 - 37 * i).collect();
            assert_eq!(decode_base64(&base64(&bytes)), Some(bytes.clone()));
            assert_eq!(
                decode_base64(base64(&bytes).trim_end_matches('=')),
                Some(bytes)
            );
        }
        assert_eq!(decode_base64("a b"), None);
        assert_eq!(
            percent_decode("a%20b%C3%A9.bin").as_deref(),
            Some("a bé.bin")
        );
        assert_eq!(percent_decode("bad%2"), None);
    }
}
