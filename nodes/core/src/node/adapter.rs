//! Which graphics adapter a sensor node renders its cameras on: one type for the sensor node's
//! `--adapter`, a launch file's sensor node `adapter`, `convoy run --adapter` and `convoy bench
//! sensors --adapter` (the sensor node decides what each choice takes among the adapters it
//! finds).

/// `auto`, `gpu` or `cpu`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum AdapterChoice {
    /// A GPU when there is one, otherwise the CPU (Mesa's lavapipe).
    #[default]
    Auto,
    /// A hardware adapter (discrete, integrated or virtual GPU); none is an error.
    Gpu,
    /// The CPU: a software rasterizer such as lavapipe.
    Cpu,
}

impl AdapterChoice {
    /// The value `convoy-sensor --adapter` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterChoice::Auto => "auto",
            AdapterChoice::Gpu => "gpu",
            AdapterChoice::Cpu => "cpu",
        }
    }
}

impl std::fmt::Display for AdapterChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
