//! Seeded gaussian noise, reproducible per sensor.
//!
//! Each sensor draws from its own stream, derived from the scenario seed and a stream name
//! (e.g. "agent/sensor"), so adding, removing or reassigning one sensor never changes another
//! sensor's noise, and a rerun with the same seed reproduces every sample wherever the sensor
//! runs. The generator is splitmix64 (tiny, well mixed, no dependency) with Box-Muller for
//! normal deviates; none of this is cryptographic.

/// A deterministic noise stream.
#[derive(Debug, Clone)]
pub struct Noise {
    state: u64,
    /// Box-Muller makes deviates in pairs; the second waits here.
    spare: Option<f64>,
}

/// One splitmix64 step: advances `state` and returns a well-mixed 64-bit output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of the stream name: stable across runs, platforms and Rust versions (unlike
/// `std`'s hasher, whose output is not guaranteed).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

impl Noise {
    /// The stream `stream` (e.g. the sensor's "agent/sensor" id) of the run seeded `seed`.
    pub fn new(seed: u64, stream: &str) -> Self {
        // Mix seed and name through splitmix so nearby seeds or similar names still start far
        // apart.
        let mut s = seed;
        let a = splitmix64(&mut s);
        let mut t = fnv1a(stream) ^ a;
        let state = splitmix64(&mut t);
        Noise { state, spare: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.state)
    }

    /// Uniform in (0, 1]: never 0, so Box-Muller's logarithm stays finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A standard normal deviate.
    pub fn standard_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let r = (-2.0 * self.uniform().ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * self.uniform();
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }

    /// A normal deviate with standard deviation `sigma`. A sigma of zero (or a negative or
    /// non-finite one, which is a configuration slip, not a reason to emit NaN) gives exactly
    /// 0 and leaves the stream where it was, so noiseless sensors are exact.
    pub fn gaussian(&mut self, sigma: f64) -> f64 {
        if !(sigma.is_finite() && sigma > 0.0) {
            return 0.0;
        }
        sigma * self.standard_normal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Noise::new(42, "ego/imu");
        let mut b = Noise::new(42, "ego/imu");
        for _ in 0..1000 {
            assert_eq!(a.gaussian(1.0).to_bits(), b.gaussian(1.0).to_bits());
        }
    }

    #[test]
    fn different_stream_or_seed_differs() {
        let draw = |seed, s: &str| {
            let mut n = Noise::new(seed, s);
            (0..16).map(|_| n.gaussian(1.0)).collect::<Vec<_>>()
        };
        assert_ne!(draw(42, "ego/imu"), draw(42, "ego/gnss"));
        assert_ne!(draw(42, "ego/imu"), draw(43, "ego/imu"));
    }

    #[test]
    fn mean_and_std_within_tolerance() {
        let mut n = Noise::new(7, "ego/radar");
        let sigma = 2.5;
        let xs: Vec<f64> = (0..10_000).map(|_| n.gaussian(sigma)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        // Standard error of the mean is sigma/100 = 0.025; of the std about sigma/141.
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!((var.sqrt() - sigma).abs() < 0.1, "std {}", var.sqrt());
    }

    #[test]
    fn zero_sigma_is_exact() {
        let mut n = Noise::new(1, "x");
        assert_eq!(n.gaussian(0.0), 0.0);
        assert_eq!(n.gaussian(f64::NAN), 0.0);
        assert_eq!(n.gaussian(-1.0), 0.0);
    }

    #[test]
    fn uniform_in_range() {
        let mut n = Noise::new(3, "u");
        for _ in 0..10_000 {
            let u = n.uniform();
            assert!(u > 0.0 && u <= 1.0);
        }
    }
}
