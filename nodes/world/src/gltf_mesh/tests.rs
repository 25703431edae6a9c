//! The glTF loader on small files written by the tests: placement, node transforms, buffers,
//! refused extensions, bad data (errors, never panics), materials and colours.
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
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
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
    let mirrored = embedded(&json, &bin).replace(r#""matrix":[1,0,0,0"#, r#""matrix":[-1,0,0,0"#);
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
        (Material::Vegetation, [0.1, 0.6, 0.1], 1, 4),           // Thing, by its material's name
        (Material::Vegetation, red, 2, 8),                       // PineTree, Part below HEDGES
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
