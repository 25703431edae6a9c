//! Same-host shared memory for large samples (docs/TRANSPORT.md, "Same-host shared memory for
//! large samples"): a convoy reader on the writer's host gets 1440x960 images whole through the
//! writer's ring, with a few hundred datagrams where UDP takes thousands per image (and the
//! same run with `CONVOY_SHM=off` sends them all); readers elsewhere keep ordinary DDS
//! (tests/e2e/large_samples.rs: a CycloneDDS reader, an rclpy one, a reader in another network
//! namespace). A writer and a reader killed with SIGKILL leave no ring behind once the run is
//! over.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use convoy_core::dds::shm::SHM_DIR;
use convoy_core::dds::udp_datagrams_sent;
use convoy_tests::files::fresh_dir;
use convoy_tests::{
    convoy_on, convoy_run, domain, repo_root, run_with_timeout, take_turn, watchdog, ChildGuard,
};

const IMAGES: u32 = 60;

/// `convoy bench images` of IMAGES 1440x960 images to a convoy reader with `CONVOY_SHM=shm`:
/// (images received whole, UDP datagrams the host sent meanwhile).
fn images(shm: &str) -> (u64, u64) {
    let before = udp_datagrams_sent().expect("/proc/net/snmp");
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain::SHM_LANE)
            .env("CONVOY_SHM", shm)
            .args(["bench", "images", "--json", "--payload", "image:1440x960"])
            // 100 a second: within what either path carries, so every image arrives whole on a
            // loaded machine too (at full speed the writer outruns a busy reader, whose
            // KEEP_LAST history then drops images, by either path).
            .args([
                "--rate",
                "100",
                "--count",
                &IMAGES.to_string(),
                "--reader",
                "convoy",
            ]),
        Duration::from_secs(150),
    );
    let after = udp_datagrams_sent().expect("/proc/net/snmp");
    assert!(
        ok,
        "bench images with CONVOY_SHM={shm} failed:\n{out}\n{err}"
    );
    let run: serde_json::Value = out
        .lines()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON result:\n{out}"));
    let whole = run["whole"]
        .as_u64()
        .unwrap_or_else(|| panic!("no 'whole' in {run}"));
    (whole, after - before)
}

#[test]
fn a_same_host_reader_gets_images_through_shared_memory() {
    watchdog("shared-memory images", Duration::from_secs(400));
    let _turn = take_turn();
    let (whole_shm, datagrams_shm) = images("on");
    let (whole_udp, datagrams_udp) = images("off");
    println!(
        "{IMAGES} images of 1440x960: shared memory {whole_shm} whole, {datagrams_shm} datagrams; \
         UDP {whole_udp} whole, {datagrams_udp} datagrams"
    );
    assert_eq!(
        (whole_shm, whole_udp),
        (u64::from(IMAGES), u64::from(IMAGES))
    );
    // Over loopback a 4 MB image is ~64 datagrams of 64 KB (~2,900 on a 1500-byte network);
    // through the ring only its descriptor and the acknowledgements travel (plus discovery).
    assert!(
        datagrams_udp > u64::from(IMAGES) * 50,
        "UDP sent only {datagrams_udp} datagrams for {IMAGES} images"
    );
    assert!(
        datagrams_shm * 8 < datagrams_udp,
        "shared memory sent {datagrams_shm} datagrams, UDP {datagrams_udp}"
    );
}

/// The rings of run `run` in /dev/shm.
fn rings_of(run: &str) -> Vec<PathBuf> {
    let prefix = format!("convoy-{run}-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(SHM_DIR)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Processes that map `ring` (its readers, and its writer).
fn mappers_of(ring: &Path) -> Vec<i32> {
    let wanted = ring.display().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let maps = std::fs::read_to_string(entry.path().join("maps")).unwrap_or_default();
        if maps.lines().any(|l| l.ends_with(&wanted)) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn a_killed_writer_and_reader_leave_no_ring_after_the_run() {
    watchdog("killed ring owners", Duration::from_secs(300));
    let _turn = take_turn();
    let dir = fresh_dir("shm", "kill");
    // camera_1440.toml with a small camera: a ring and a recorder reading it, cheaply.
    let text = std::fs::read_to_string(repo_root().join("launch/scenarios/camera_1440.toml"))
        .expect("camera_1440.toml");
    let small = text
        .replace("width = 1440", "width = 320")
        .replace("height = 960", "height = 240");
    assert_ne!(
        small, text,
        "camera_1440.toml's camera changed: update this test"
    );
    let scenario = dir.join("camera_small.toml");
    std::fs::write(&scenario, small).expect("write scenario");
    let run = "shmkilltest01";
    let mut convoy = ChildGuard::spawn(
        "convoy run",
        convoy_run(domain::SHM_KILL, &scenario)
            .env("CONVOY_RUN_ID", run)
            .args(["--duration", "20", "--record"])
            .arg(dir.join("run.mcap")),
    );
    // The camera's ring, and both processes mapping it: the sensor node and the recorder.
    let started = Instant::now();
    let (ring, pids) = loop {
        let rings = rings_of(run);
        if let Some(ring) = rings.first() {
            let pids = mappers_of(ring);
            if pids.len() >= 2 {
                break (ring.clone(), pids);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no ring of run {run} mapped by a writer and a reader: {rings:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for pid in &pids {
        // SAFETY: a plain kill(2) of a process this test's run started.
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    assert!(
        ring.exists(),
        "the ring went with its killed writer (nothing to test)"
    );
    let status = convoy.wait_for_exit(Duration::from_secs(120));
    assert!(
        status.is_some(),
        "the run did not end after its nodes were killed"
    );
    let left = rings_of(run);
    assert!(left.is_empty(), "the run left rings behind: {left:?}");
}
