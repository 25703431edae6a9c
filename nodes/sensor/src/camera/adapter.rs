//! Which graphics adapter renders the cameras: the choice (`--adapter auto|gpu|cpu`), how it
//! picks among the adapters wgpu finds, and how an adapter is named in logs.

use super::CameraError;

pub use convoy_core::node::AdapterChoice;

/// Whether an adapter of `kind` is one `choice` takes.
pub fn takes(choice: AdapterChoice, kind: wgpu::DeviceType) -> bool {
    use wgpu::DeviceType as T;
    match choice {
        AdapterChoice::Auto => true,
        AdapterChoice::Gpu => matches!(kind, T::DiscreteGpu | T::IntegratedGpu | T::VirtualGpu),
        AdapterChoice::Cpu => kind == T::Cpu,
    }
}

/// `name (backend, device type)`, as the node logs an adapter.
pub(super) fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type)
}

/// The adapter `choice` asks for: auto as wgpu ranks them (a GPU first); gpu the first
/// discrete, then integrated, then virtual GPU; cpu the first software one.
pub(super) fn pick_adapter(
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
        .filter(|a| takes(choice, a.get_info().device_type))
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
pub(super) const BACKENDS: wgpu::Backends = wgpu::Backends::VULKAN.union(wgpu::Backends::METAL);
