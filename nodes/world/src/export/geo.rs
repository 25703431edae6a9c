//! Where the exported map sits on the Earth: the projector Autoware's map loader is told about
//! (`map_projector_info.yaml`) and the latitude and longitude written beside every Lanelet2
//! point's `local_x`/`local_y`.
//!
//! A map with a `<geoReference>` that gives `+lat_0` and `+lon_0` is a transverse Mercator
//! projection about that origin (what CARLA and most OpenDRIVE exporters write); anything else
//! is Autoware's `Local` projector, whose loader reads `local_x`/`local_y` and ignores the
//! latitude and longitude (written then about 0°N 0°E, so other tools still get a sane map).
//! The projection is Krüger's series to the fourth order: well under a millimetre within
//! hundreds of kilometres of the origin, far beyond any town.

/// WGS84 semi-major axis (m) and flattening.
const A: f64 = 6_378_137.0;
const F: f64 = 1.0 / 298.257_223_563;

/// How the exported map's frame relates to latitude and longitude.
#[derive(Debug, Clone, PartialEq)]
pub enum Projector {
    /// Autoware's `Local`: the map frame is all there is.
    Local,
    /// Transverse Mercator about this origin (degrees), scale 1 on the central meridian: the
    /// map frame's origin is the origin, x east, y north.
    TransverseMercator { lat0: f64, lon0: f64 },
}

impl Projector {
    /// The projector an OpenDRIVE `<geoReference>` PROJ string names, and a warning when it
    /// names one the exporter cannot express.
    pub fn from_proj(proj: Option<&str>) -> (Projector, Option<String>) {
        let Some(proj) = proj.map(str::trim).filter(|p| !p.is_empty()) else {
            return (Projector::Local, None);
        };
        let param = |key: &str| {
            proj.split_whitespace()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        };
        let kind = param("+proj").unwrap_or("tmerc");
        let lat = param("+lat_0").and_then(|v| v.parse::<f64>().ok());
        let lon = param("+lon_0").and_then(|v| v.parse::<f64>().ok());
        let extra_scale = param("+k")
            .or(param("+k_0"))
            .and_then(|v| v.parse::<f64>().ok());
        match (kind, lat, lon) {
            ("tmerc", Some(lat0), Some(lon0))
                if lat0.abs() <= 90.0
                    && lon0.abs() <= 180.0
                    && extra_scale.is_none_or(|k| (k - 1.0).abs() < 1e-12) =>
            {
                (Projector::TransverseMercator { lat0, lon0 }, None)
            }
            _ => (
                Projector::Local,
                Some(format!(
                    "geoReference '{proj}' is not a transverse Mercator with +lat_0 and +lon_0 \
                     (and scale 1): the map is exported with Autoware's Local projector"
                )),
            ),
        }
    }

    /// Latitude and longitude (degrees) of a point of the map frame.
    pub fn to_geo(&self, x: f64, y: f64) -> (f64, f64) {
        let (lat0, lon0) = match self {
            Projector::Local => (0.0, 0.0),
            Projector::TransverseMercator { lat0, lon0 } => (*lat0, *lon0),
        };
        let northing0 = tm_forward(lat0, lon0, lon0).1;
        tm_inverse(x, y + northing0, lon0)
    }

    /// `map_projector_info.yaml` as Autoware's map_projection_loader reads it.
    pub fn autoware_yaml(&self) -> String {
        match self {
            Projector::Local => "projector_type: Local\n".to_string(),
            Projector::TransverseMercator { lat0, lon0 } => format!(
                "projector_type: TransverseMercator\nvertical_datum: WGS84\nmap_origin:\n  \
                 latitude: {lat0}\n  longitude: {lon0}\n  altitude: 0.0\n"
            ),
        }
    }
}

/// Krüger's series coefficients for WGS84: (n, rectifying radius, alpha, beta).
fn series() -> (f64, f64, [f64; 3], [f64; 3]) {
    let n = F / (2.0 - F);
    let (n2, n3) = (n * n, n * n * n);
    let radius = A / (1.0 + n) * (1.0 + n2 / 4.0 + n2 * n2 / 64.0);
    let alpha = [
        n / 2.0 - 2.0 * n2 / 3.0 + 5.0 * n3 / 16.0,
        13.0 * n2 / 48.0 - 3.0 * n3 / 5.0,
        61.0 * n3 / 240.0,
    ];
    let beta = [
        n / 2.0 - 2.0 * n2 / 3.0 + 37.0 * n3 / 96.0,
        n2 / 48.0 + n3 / 15.0,
        17.0 * n3 / 480.0,
    ];
    (n, radius, alpha, beta)
}

/// Easting and northing (m) of (lat, lon) in degrees about central meridian `lon0`, scale 1.
pub fn tm_forward(lat: f64, lon: f64, lon0: f64) -> (f64, f64) {
    let (n, radius, alpha, _) = series();
    let phi = lat.to_radians();
    let lambda = (lon - lon0).to_radians();
    let k = 2.0 * n.sqrt() / (1.0 + n);
    let t = (phi.sin().atanh() - k * (k * phi.sin()).atanh()).sinh();
    let xi = t.atan2(lambda.cos());
    let eta = (lambda.sin() / (1.0 + t * t).sqrt()).atanh();
    let (mut e, mut nn) = (eta, xi);
    for (j, a) in alpha.iter().enumerate() {
        let m = 2.0 * (j as f64 + 1.0);
        e += a * (m * xi).cos() * (m * eta).sinh();
        nn += a * (m * xi).sin() * (m * eta).cosh();
    }
    (radius * e, radius * nn)
}

/// Latitude and longitude (degrees) of easting and northing about central meridian `lon0`.
pub fn tm_inverse(easting: f64, northing: f64, lon0: f64) -> (f64, f64) {
    let (n, radius, _, beta) = series();
    let xi = northing / radius;
    let eta = easting / radius;
    let (mut x, mut e) = (xi, eta);
    for (j, b) in beta.iter().enumerate() {
        let m = 2.0 * (j as f64 + 1.0);
        x -= b * (m * xi).sin() * (m * eta).cosh();
        e -= b * (m * xi).cos() * (m * eta).sinh();
    }
    let chi = (x.sin() / e.cosh()).asin();
    // Conformal latitude to geodetic: a few Newton steps of the forward relation.
    let k = 2.0 * n.sqrt() / (1.0 + n);
    let target = chi.tan().asinh();
    let mut phi = chi;
    for _ in 0..6 {
        let value = phi.sin().atanh() - k * (k * phi.sin()).atanh() - target;
        let e2 = k * k;
        let derivative = (1.0 - e2) / ((1.0 - e2 * phi.sin().powi(2)) * phi.cos());
        phi -= value / derivative;
    }
    let lambda = e.sinh().atan2(x.cos());
    (phi.to_degrees(), lon0 + lambda.to_degrees())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transverse_mercator_round_trips_within_a_millimetre() {
        let projector = Projector::TransverseMercator {
            lat0: 49.0,
            lon0: 8.0,
        };
        let northing0 = tm_forward(49.0, 8.0, 8.0).1;
        for (x, y) in [(0.0, 0.0), (400.0, -330.0), (-5000.0, 12000.0)] {
            let (lat, lon) = projector.to_geo(x, y);
            let (e, n) = tm_forward(lat, lon, 8.0);
            assert!(
                (e - x).abs() < 1e-3 && (n - northing0 - y).abs() < 1e-3,
                "{x} {y}"
            );
        }
        // One degree of latitude is about 111.2 km at 49 degrees north.
        let (lat, lon) = projector.to_geo(0.0, 111_200.0);
        assert!(
            (lat - 50.0).abs() < 0.01 && (lon - 8.0).abs() < 1e-9,
            "{lat} {lon}"
        );
    }

    #[test]
    fn geo_references_are_read_or_refused_with_a_reason() {
        let (p, warning) = Projector::from_proj(Some("+lat_0=4.9e+1 +lon_0=8.0e+0"));
        assert_eq!(
            p,
            Projector::TransverseMercator {
                lat0: 49.0,
                lon0: 8.0
            }
        );
        assert!(warning.is_none());
        let (p, warning) = Projector::from_proj(Some("+proj=utm +zone=32 +datum=WGS84"));
        assert_eq!(p, Projector::Local);
        assert!(warning.is_some_and(|w| w.contains("+proj=utm")));
        assert_eq!(Projector::from_proj(None), (Projector::Local, None));
    }
}
