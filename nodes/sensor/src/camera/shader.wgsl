struct Globals {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    forward: vec4<f32>,
    light: vec4<f32>,
};
@group(0) @binding(0) var<uniform> g: Globals;

// Every face is flat (a box face, a flat-shaded map triangle): its light is the same at each
// of its vertices, so it is worked out once per vertex instead of once per pixel (lavapipe
// shades pixels on the CPU, and that is most of a frame's cost).
struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) lit: vec3<f32>,
    @location(2) @interpolate(flat) class_id: u32,
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
    let diffuse = max(dot(n, -g.light.xyz), 0.0);
    var out: VsOut;
    out.clip = g.view_proj * world;
    out.world = world.xyz;
    out.lit = colour.rgb * (0.35 + 0.65 * diffuse);
    out.class_id = class_id;
    return out;
}

// The world's static surfaces, all in one draw: in the world frame already (no model
// transform), each vertex with its surface's colour and class. The same light as vs_main's
// with an identity model, so a surface looks as it did drawn as an instance.
@vertex
fn vs_static(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) colour: vec4<f32>,
    @location(3) class_id: u32,
) -> VsOut {
    let n = normalize(normal);
    let diffuse = max(dot(n, -g.light.xyz), 0.0);
    var out: VsOut;
    out.clip = g.view_proj * vec4<f32>(position, 1.0);
    out.world = position;
    out.lit = colour.rgb * (0.35 + 0.65 * diffuse);
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
    var out: FsOut;
    out.colour = vec4<f32>(in.lit, 1.0);
    out.depth = dot(in.world - g.eye.xyz, g.forward.xyz);
    out.class_id = in.class_id;
    return out;
}

// The colour image alone (a camera without depth or semantic outputs): one target to write,
// which on a CPU rasterizer is a good part of a frame's cost.
@fragment
fn fs_colour(in: VsOut) -> @location(0) vec4<f32> {
    return vec4<f32>(in.lit, 1.0);
}
