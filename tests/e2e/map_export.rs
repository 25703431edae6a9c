//! `convoy map export`: a scenario's world as Autoware's map folder, checked by readers convoy
//! did not write (tests/interop/lanelet2_check.py: the `lanelet2` package loads the Lanelet2
//! map with no errors, routes across Town01, and every lanelet's centre line lies within 5 cm
//! of the lane convoy drives; `pypcd4` reads the point cloud, whose points cover the roads at
//! their height). Bad input: a scenario without a map, an output folder that cannot be
//! written, a disk that fills up half way (nothing is left looking finished), and map features
//! the exporter cannot express (warnings naming road and lane).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use convoy_tests::files::fresh_dir;
use convoy_tests::{repo_root, run_with_timeout};

const LIMIT: Duration = Duration::from_secs(300);

/// Runs `convoy map export SCENARIO --out OUT ARGS...`: (succeeded, stdout, stderr).
fn export(scenario: &Path, out: &Path, args: &[&str]) -> (bool, String, String) {
    run_with_timeout(
        convoy_tests::convoy()
            .args(["map", "export"])
            .arg(scenario)
            .arg("--out")
            .arg(out)
            .args(args),
        LIMIT,
    )
}

/// `convoy map info FILE --lane-centres OUT`: convoy's own lane centres, for the check.
fn lane_centres(xodr: &Path, out: &Path) {
    let (ok, _, err) = run_with_timeout(
        convoy_tests::convoy()
            .args(["map", "info"])
            .arg(xodr)
            .arg("--lane-centres")
            .arg(out),
        LIMIT,
    );
    assert!(ok, "convoy map info {} failed: {err}", xodr.display());
}

/// The independent check of an export folder; returns its JSON summary.
fn check(export_dir: &Path, centres: &Path, args: &[&str]) -> serde_json::Value {
    let (ok, stdout, stderr) = run_with_timeout(
        Command::new(convoy_tests::ros_python())
            .arg(repo_root().join("tests/interop/lanelet2_check.py"))
            .arg(export_dir)
            .arg(centres)
            .args(args),
        LIMIT,
    );
    assert!(
        ok,
        "the export does not pass the check:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");
    let last = stdout.lines().last().unwrap_or("{}");
    serde_json::from_str(last).expect("the check's summary is JSON")
}

/// A scenario of one map file and one car on it.
fn scenario_of(dir: &Path, name: &str, xodr: &Path, start: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "[scenario]\nname = \"{name}\"\ndt = 0.05\n\n[map]\nopendrive = \"{}\"\n\n[[agents]]\nid \
         = \"car\"\nstart = {start}\ncontroller = {{ kind = \"lane_follow\", speed = 5.0 }}\n",
        xodr.display()
    );
    std::fs::write(&path, text).expect("write scenario");
    path
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn town01_exports_a_lanelet2_map_and_a_point_cloud_that_independent_readers_accept() {
    let dir = fresh_dir("map_export", "town");
    let out = dir.join("town01_map");
    // Spacing 0.3 m keeps the test quick; the default (0.2 m) only adds points.
    let (ok, stdout, stderr) = export(
        &repo_root().join("launch/scenarios/town.toml"),
        &out,
        &["--spacing", "0.3"],
    );
    assert!(ok, "export failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("lanelets"), "no summary:\n{stdout}");
    // Town01 is wider than 300 m: tiles with Autoware's metadata.
    assert_eq!(
        files_in(&out),
        [
            "lanelet2_map.osm",
            "map_projector_info.yaml",
            "pointcloud_map",
            "pointcloud_map_metadata.yaml"
        ]
    );
    let projector = std::fs::read_to_string(out.join("map_projector_info.yaml")).expect("yaml");
    assert!(
        projector.contains("projector_type: TransverseMercator") && projector.contains("49"),
        "Town01's geoReference (+lat_0=49 +lon_0=8) is not the projector:\n{projector}"
    );
    let centres = dir.join("centres.json");
    lane_centres(
        &repo_root().join("launch/maps/town01/Town01.xodr"),
        &centres,
    );
    let summary = check(&out, &centres, &["--route-across", "--spacing", "0.3"]);
    assert_eq!(summary["load_errors"], 0);
    assert!(summary["centre_max_m"].as_f64().is_some_and(|d| d <= 0.05));
    assert!(summary["route_lanelets"].as_u64().is_some_and(|n| n >= 5));
    assert!(summary["points"].as_u64().is_some_and(|n| n > 100_000));

    // Once more into the same folder as one file: the tiles of the first export go, so the
    // folder never holds two clouds that disagree.
    let (ok, _, stderr) = export(
        &repo_root().join("launch/scenarios/town.toml"),
        &out,
        &["--spacing", "0.5", "--tile", "0"],
    );
    assert!(ok, "second export failed:\n{stderr}");
    assert_eq!(
        files_in(&out),
        [
            "lanelet2_map.osm",
            "map_projector_info.yaml",
            "pointcloud_map.pcd"
        ]
    );
    check(&out, &centres, &["--spacing", "0.5"]);
}

/// esmini's parking_demo: spirals, crosswalk objects, a local frame. Two crosswalks have
/// four corners; the third is a line of two corners, which the exporter cannot express: a
/// warning names it.
#[test]
fn crosswalks_and_a_local_projector_come_from_the_file() {
    let dir = fresh_dir("map_export", "parking");
    let xodr = repo_root().join("launch/maps/esmini/parking_demo.xodr");
    let centres = dir.join("centres.json");
    lane_centres(&xodr, &centres);
    let lanes: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&centres).expect("centres")).expect("json");
    let first = &lanes["lanes"][0];
    let start = format!(
        "{{ road = \"{}\", lane = {}, s = 1.0 }}",
        first["road"].as_str().expect("road"),
        first["lane"]
    );
    let scenario = scenario_of(&dir, "parking", &xodr, &start);
    let out = dir.join("map");
    let (ok, stdout, stderr) = export(&scenario, &out, &["--json"]);
    assert!(ok, "export failed:\n{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(report["crosswalks"], 2, "{report}");
    assert!(
        stderr.contains("warning: crosswalk object '' (1): only four-cornered outlines"),
        "{stderr}"
    );
    assert_eq!(report["tiles"], 0, "a small map is one file: {report}");
    let osm = std::fs::read_to_string(out.join("lanelet2_map.osm")).expect("osm");
    assert_eq!(osm.matches("v=\"crosswalk\"").count(), 2);
    let projector = std::fs::read_to_string(out.join("map_projector_info.yaml")).expect("yaml");
    assert_eq!(projector, "projector_type: Local\n");
    // Road 1's lane 2 is a row of parking bays, its width pinching to zero between them: a
    // lanelet whose bounds touch is not one Lanelet2 can hold, so it is left out, by name.
    assert!(
        stderr.contains("warning: road '1' lane 2 (section 0): narrows to 0.00 m"),
        "{stderr}"
    );
    check(&out, &centres, &["--left-out", "1:0:2"]);
}

#[test]
fn bad_input_gives_clear_messages_and_never_a_file_that_looks_finished() {
    let dir = fresh_dir("map_export", "bad");
    // A scenario without a map.
    let out = dir.join("none");
    let (ok, _, err) = export(
        &repo_root().join("launch/scenarios/two_cars.toml"),
        &out,
        &[],
    );
    assert!(!ok, "a scenario without a map exported");
    assert!(
        err.contains("two_cars.toml") && err.contains("no OpenDRIVE map"),
        "{err}"
    );
    assert!(
        files_in(&out).is_empty(),
        "files left: {:?}",
        files_in(&out)
    );

    // An output folder that cannot be made (under a file).
    let file = dir.join("a_file");
    std::fs::write(&file, "x").expect("write");
    let (ok, _, err) = export(
        &repo_root().join("launch/scenarios/town.toml"),
        &file.join("map"),
        &["--spacing", "1"],
    );
    assert!(!ok, "exported under a file");
    assert!(
        err.contains("cannot write") && err.contains("a_file"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    // A disk that fills up half way: a 1 MiB tmpfs takes neither the Lanelet2 map (~1.7 MB)
    // nor the cloud; the error names the file, and nothing is left in the folder.
    let full = dir.join("full");
    std::fs::create_dir_all(&full).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&full)
        .status()
        .expect("mount");
    assert!(
        mounted.success(),
        "mount a small tmpfs (the tests run as root)"
    );
    let (ok, _, err) = export(
        &repo_root().join("launch/scenarios/town.toml"),
        &full,
        &["--spacing", "1"],
    );
    let left = files_in(&full);
    let _ = Command::new("umount").arg(&full).status();
    assert!(!ok, "exported onto a full disk");
    assert!(
        err.contains("cannot write") && (err.contains(".osm") || err.contains(".pcd")),
        "{err}"
    );
    assert!(left.is_empty(), "a failed export left {left:?}");

    // What the exporter cannot express: a geoReference that is not a transverse Mercator and
    // a lane width that steps between lane sections (hill.xodr: 3.5 m to 3.75 m at s = 150).
    let hill = std::fs::read_to_string(repo_root().join("nodes/world/tests/fixtures/hill.xodr"))
        .expect("hill.xodr");
    let utm = hill.replacen(
        "west=\"0\"/>",
        "west=\"0\"><geoReference><![CDATA[+proj=utm +zone=32 +datum=WGS84]]></geoReference>\
         </header>",
        1,
    );
    assert_ne!(utm, hill, "hill.xodr's header changed: update this test");
    let xodr = dir.join("hill_utm.xodr");
    std::fs::write(&xodr, utm).expect("write");
    let scenario = scenario_of(&dir, "hill", &xodr, "{ road = \"1\", lane = -1, s = 5.0 }");
    let out = dir.join("hill");
    let (ok, stdout, err) = export(&scenario, &out, &[]);
    assert!(ok, "export failed:\n{stdout}\n{err}");
    assert!(err.contains("warning: geoReference '+proj=utm"), "{err}");
    assert!(
        err.contains("warning: road '1' lane -1 (section 0) ends 0.25 m from where its successor road '1' lane -1 (section 1) starts"),
        "{err}"
    );
    assert!(files_in(&out).contains(&"lanelet2_map.osm".to_string()));
}
