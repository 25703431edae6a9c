//! Same-host shared memory for large samples (docs/TRANSPORT.md, "Same-host shared memory for
//! large samples"): a convoy reader on the writer's host gets 1440x960 images whole through the
//! writer's ring, with a few hundred datagrams where UDP takes thousands per image (and the
//! same run with `CONVOY_SHM=off` sends them all); readers elsewhere keep ordinary DDS
//! (tests/e2e/large_samples.rs: a CycloneDDS reader, an rclpy one, a reader in another network
//! namespace). A writer and a reader killed with SIGKILL leave no ring behind once the run is
//! over.
//!
//! Bad input and faults (issue 39): readers that stop taking, and a reader process stopped
//! with SIGSTOP, cost the writer and the other readers nothing beyond the camera profile's
//! QoS, and get the newest images whole or count them lost, never torn (the ring's sequence
//! check; images whose every byte depends on their number, `convoy_tests::images`); garbage
//! datagrams on every port and descriptors naming foreign files leave the images whole; two
//! runs on one host and domain never open each other's rings. The readers that are stopped and
//! continued are `convoy-test-image-reader` processes (tests/bin/image_reader.rs). The last
//! tests hold the lane to promises it first broke (each fixed with its test).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use convoy_core::dds::shm::{host_key, SHM_DIR};
use convoy_core::dds::{udp_datagrams_sent, Node, Publisher, ReaderStats, Received, Subscriber};
use convoy_core::messages::{Image, Message, ShmSample};
use convoy_core::qos::QosSet;
use convoy_core::topics::{self, Topic};
use convoy_tests::files::fresh_dir;
use convoy_tests::garbage::{send_garbage, Garbage};
use convoy_tests::images::{is_whole, test_image, udp_ports_of, MARKER};
use convoy_tests::paced::{paced_writes, Write};
use convoy_tests::{
    convoy_on, convoy_run, domain, handshake, lines_until, repo_root, run_with_timeout, take_turn,
    wait_for_line, wait_until, watchdog, workspace_bin, ChildGuard,
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

#[test]
fn a_recorder_beside_a_reader_holds_every_image_whole() {
    watchdog("recorder beside a reader", Duration::from_secs(300));
    let _turn = take_turn();
    let dir = fresh_dir("shm", "recorder");
    let file = dir.join("images.mcap");
    let file_arg = file.to_str().expect("utf-8 path");
    // `bench images --record` runs `convoy record` in its own process beside the reader, waits
    // for both to match, then reads the MCAP file back and checks every recorded image's bytes.
    let (ok, out, err) = run_with_timeout(
        convoy_on(domain::SHM_RECORDER)
            .args(["bench", "images", "--json", "--payload", "image:1440x960"])
            .args(["--rate", "60", "--count", &IMAGES.to_string()])
            .args(["--record", file_arg, "--record-compression", "lz4"]),
        Duration::from_secs(200),
    );
    assert!(ok, "bench images --record failed:\n{out}\n{err}");
    let run: serde_json::Value = out
        .lines()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON result:\n{out}"));
    assert_eq!(
        run["whole"].as_u64(),
        Some(u64::from(IMAGES)),
        "{run}\n{err}"
    );
    assert_eq!(
        run["recorded"].as_u64(),
        Some(u64::from(IMAGES)),
        "the recorder's file: {run}\n{err}"
    );
    assert!(
        std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) > 0,
        "no recording at {}",
        file.display()
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

/// The camera stream of the fault tests: convoy's camera topic, so its QoS is a camera's (the
/// built-in sensor profile: RELIABLE with 100 ms max_blocking_time, KEEP_LAST 8, VOLATILE),
/// and the ring the writer makes holds 8 x 2 + 2 = 18 slots.
fn camera() -> Topic<Image> {
    topics::sensor("ego", "camera")
}

/// 640x480 rgb8: 900 KiB an image.
const WIDTH: u32 = 640;
const HEIGHT: u32 = 480;
/// The camera profile's reliable max_blocking_time: the longest a write may wait for readers.
const MAX_BLOCKING: Duration = Duration::from_millis(100);
/// 30 images a second: the ring's 18 slots then hold 600 ms of them, what a reader that keeps
/// taking may fall behind on a loaded machine and still get every one.
const IMAGE_PERIOD: Duration = Duration::from_millis(33);
/// A bound for discovery, matching and acknowledgements on a loaded machine.
const WAIT: Duration = Duration::from_secs(30);

/// The ring this process's writer of `topic` made (`convoy-<run>-<pid>-<topic>_<n>`); fails
/// the test if there is none: the images do not take the shared-memory lane.
fn own_ring(topic: &Topic<Image>) -> PathBuf {
    let mine = format!(
        "-{}-{}_",
        std::process::id(),
        topic.name().replace('/', "_")
    );
    let found = std::fs::read_dir(SHM_DIR).into_iter().flatten().flatten();
    found
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| n.starts_with("convoy-") && n.contains(&mine))
        })
        .unwrap_or_else(|| panic!("no ring of {} made by this process", topic.name()))
}

/// Image `seq` of the camera stream.
fn camera_image(seq: u64) -> Image {
    test_image(seq, WIDTH, HEIGHT)
}

fn node(domain: u32, id: &str) -> Node {
    Node::new(domain, id, Arc::new(QosSet::builtin())).expect("node")
}

/// The numbered images of `batch` as (seq, whole), handshake markers left out.
fn numbered(batch: Vec<Received<Image>>) -> Vec<(u64, bool)> {
    batch
        .into_iter()
        .filter(|s| s.value.header.seq != MARKER)
        .map(|s| (s.value.header.seq, is_whole(&s.value)))
        .collect()
}

/// Readers that stop taking (a viewer that hangs) on the writer's host: their KEEP_LAST history
/// keeps the newest descriptors, and what the ring still holds of them is what they get. A
/// reader of the camera profile (KEEP_LAST 8) gets the newest 8 images, whole; a reader whose
/// history is deeper than the ring (64 against the 18 slots the writer's depth of 8 makes) gets
/// the newest images the ring still holds (18), whole, and counts every older one as lost (its
/// slot was reused: the ring's sequence check), never a torn or stale image. The writer writes
/// 40 images at 100 a second and no write waits for the readers.
#[test]
fn readers_that_stop_taking_get_the_newest_images_whole_and_count_overwritten_ones_lost() {
    watchdog("idle shared-memory readers", Duration::from_secs(120));
    let _turn = take_turn();
    let d = domain::SHM_IDLE_READERS;
    let (camera_node, shallow_node, deep_node) = (
        node(d, "test/camera"),
        node(d, "test/shallow"),
        node(d, "test/deep"),
    );
    let writer: Publisher<Image> = camera_node.publisher(&camera()).expect("publisher");
    let mut shallow: Subscriber<Image> = shallow_node.subscriber(&camera()).expect("subscriber");
    let mut deep: Subscriber<Image> = deep_node
        .deep_subscriber(&camera(), 64)
        .expect("deep subscriber");
    writer
        .wait_for_match(2, WAIT)
        .expect("both readers matched");
    let marker = test_image(MARKER, WIDTH, HEIGHT);
    handshake(&writer, &mut shallow, marker.clone(), WAIT);
    handshake(&writer, &mut deep, marker, WAIT);
    own_ring(&camera());
    let (shallow_stats, deep_stats) = (shallow.stats(), deep.stats());
    let (shallow_lost, deep_lost) = (
        ReaderStats::get(&shallow_stats.lost),
        ReaderStats::get(&deep_stats.lost),
    );

    // From here on neither reader takes until every image is written and acknowledged.
    const N: u64 = 40;
    let t0 = Instant::now();
    let writes = paced_writes(
        &writer,
        0..N,
        camera_image,
        Duration::from_millis(10),
        t0,
        t0 + WAIT,
    );
    let slowest = writes.iter().map(|w| w.took).max().unwrap_or_default();
    let failed: Vec<u64> = writes.iter().filter(|w| !w.ok).map(|w| w.seq).collect();
    assert_eq!(
        writes.len() as u64,
        N,
        "not every image was written in time"
    );
    assert!(failed.is_empty(), "writes that failed: {failed:?}");
    assert!(
        slowest <= MAX_BLOCKING * 2,
        "a write took {slowest:?}, past the profile's max_blocking_time (with slack)"
    );
    assert!(
        writer.wait_for_acknowledgments(WAIT),
        "the readers did not acknowledge the images"
    );

    let got_shallow = numbered(shallow.take(1024));
    let got_deep = numbered(deep.take(1024));
    let lost = |stats: &ReaderStats, before: u64| ReaderStats::get(&stats.lost) - before;
    let (lost_shallow, lost_deep) = (
        lost(&shallow_stats, shallow_lost),
        lost(&deep_stats, deep_lost),
    );
    eprintln!(
        "{N} images written (slowest write {slowest:?}); KEEP_LAST 8 reader got {got_shallow:?}, \
         lost {lost_shallow}; KEEP_LAST 64 reader got {got_deep:?}, lost {lost_deep}"
    );
    let newest = |n: u64| ((N - n)..N).map(|seq| (seq, true)).collect::<Vec<_>>();
    assert_eq!(got_shallow, newest(8), "the KEEP_LAST 8 reader's images");
    // The ring holds the writer's history twice over and two more: at least the newest 18 of
    // the deep reader's 40 are still there, whole; each of the others is counted lost once.
    let kept = got_deep.len() as u64;
    assert!(
        kept >= 18 && got_deep == newest(kept),
        "the KEEP_LAST 64 reader's images: not the newest, whole"
    );
    assert_eq!(
        kept + lost_deep,
        N,
        "the deep reader's images whose slots were reused are lost, each counted once"
    );
    assert_eq!(
        ReaderStats::get(&deep_stats.decode_errors)
            + ReaderStats::get(&shallow_stats.decode_errors),
        0,
        "decode errors"
    );
}

/// A reader process's `STATS`: (received, lost, decode errors).
type Counts = (u64, u64, u64);

/// The images a `convoy-test-image-reader` printed: (seq, whole) of each numbered one, and
/// its last `STATS` (received, lost, decode errors).
fn reader_lines(lines: &[String]) -> (Vec<(u64, bool)>, Option<Counts>) {
    let mut got = Vec::new();
    let mut stats = None;
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["GOT", seq, whole] => {
                let seq: u64 = seq.parse().expect("a sequence number");
                if seq != MARKER {
                    got.push((seq, *whole == "1"));
                }
            }
            ["STATS", received, lost, errors] => {
                let n = |s: &str| s.parse::<u64>().expect("a count");
                stats = Some((n(received), n(lost), n(errors)));
            }
            _ => {}
        }
    }
    (got, stats)
}

/// A `convoy-test-image-reader` of the camera on domain `d`, once it has matched a writer; the
/// lines of its stdout and stderr.
fn image_reader(d: u32) -> (ChildGuard, std::sync::mpsc::Receiver<String>) {
    let mut reader = ChildGuard::spawn(
        "image reader",
        Command::new(workspace_bin("convoy-test-image-reader"))
            .args([&d.to_string(), camera().name()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = reader.all_lines();
    wait_for_line(&lines, WAIT, "the reader process ready", |l| l == "READY");
    (reader, lines)
}

/// Writes handshake images until `live` (if any) and the reader process printing `from_reader`
/// have each taken one (matched both ways, the ring mapped), then waits until they are
/// acknowledged; returns how many the reader process printed.
fn handshake_both(
    writer: &Publisher<Image>,
    mut live: Option<&mut Subscriber<Image>>,
    from_reader: &std::sync::mpsc::Receiver<String>,
) -> usize {
    let (mut at_live, mut at_reader) = (usize::from(live.is_none()), 0);
    let pace = Duration::from_millis(20);
    wait_until("a handshake image at every reader", WAIT, || {
        let _ = writer.write(test_image(MARKER, WIDTH, HEIGHT));
        if let Some(live) = live.as_deref_mut() {
            at_live += live.take_wait(64, pace).len();
        }
        // Up to 20 ms for the reader process's next line: the handshake's pace.
        let lines = from_reader.recv_timeout(pace).into_iter();
        at_reader += lines
            .chain(from_reader.try_iter())
            .filter(|l| l.starts_with("GOT "))
            .count();
        at_live > 0 && at_reader > 0
    });
    assert!(
        writer.wait_for_acknowledgments(WAIT),
        "handshake not acknowledged"
    );
    at_reader
}

/// How long the stopped-reader test writes before the reader process is stopped, while it is
/// stopped (within its participant's 5 s lease: the writer keeps it matched and must not wait
/// for it), and after it is continued.
const BEFORE_STOP: Duration = Duration::from_secs(1);
const STOPPED_FOR: Duration = Duration::from_secs(3);
const CONTINUED_FOR: Duration = Duration::from_secs(2);
/// By when the writer has stopped waiting for the stopped reader: its 200 ms of patience
/// (vendored rustdds change 36), the check after it, and slack for a loaded machine.
const STOPPED_READER_NOTICED: Duration = Duration::from_millis(600);

/// A same-host reader process that is stopped (SIGSTOP: it takes nothing, acknowledges nothing,
/// and stays matched) costs the writer and the other readers nothing beyond the QoS promise:
/// the camera writes 640x480 images at 30 a second into its ring throughout; a write returns
/// within max_blocking_time (only writes in the moment the reader stops may wait that out);
/// another reader that keeps taking gets every image written, whole and in order. Continued,
/// the stopped reader gets images again, each one whole and in order, none older than the ring
/// still holds (what its history kept of the time it was stopped is either still in its slot
/// or counted lost, never stale or torn), up to the last one written.
#[test]
fn a_stopped_same_host_reader_stalls_neither_the_writer_nor_another_reader() {
    watchdog("stopped shared-memory reader", Duration::from_secs(120));
    let _turn = take_turn();
    let d = domain::SHM_STOPPED_READER;
    let (camera_node, live_node) = (node(d, "test/camera"), node(d, "test/live"));
    let writer: Publisher<Image> = camera_node.publisher(&camera()).expect("publisher");
    // The live reader's history is deep (64) so that it loses nothing by falling behind itself
    // for a moment on a busy machine: every image it misses is the writer's doing.
    let mut live: Subscriber<Image> = live_node
        .deep_subscriber(&camera(), 64)
        .expect("live reader");
    let (mut stopped, from_stopped) = image_reader(d);
    writer
        .wait_for_match(2, WAIT)
        .expect("both readers matched");
    let at_stopped = handshake_both(&writer, Some(&mut live), &from_stopped);
    let _ = live.take(1024);
    let ring = own_ring(&camera());
    let pid = stopped.child.id() as i32;
    assert!(
        mappers_of(&ring).contains(&pid),
        "the reader process does not read the camera's ring"
    );

    let done = Arc::new(AtomicBool::new(false));
    let live = drain(live, Arc::clone(&done));
    let period = IMAGE_PERIOD;
    let t0 = Instant::now();
    let mut writes = paced_writes(&writer, 0.., camera_image, period, t0, t0 + BEFORE_STOP);
    let mut lines: Vec<String> = from_stopped.try_iter().collect();
    let frozen = stopped.freeze();
    let stopped_at = t0.elapsed();
    let next = writes.last().map_or(0, |w| w.seq + 1);
    writes.extend(paced_writes(
        &writer,
        next..,
        camera_image,
        period,
        t0,
        Instant::now() + STOPPED_FOR,
    ));
    // What it printed before it was stopped has come through by now (3 s later).
    lines.extend(from_stopped.try_iter());
    let (before, _) = reader_lines(&lines);
    let last_before_continue = writes.last().map_or(0, |w| w.seq);
    drop(frozen);
    let continued_at = t0.elapsed();
    let next = last_before_continue + 1;
    writes.extend(paced_writes(
        &writer,
        next..,
        camera_image,
        period,
        t0,
        Instant::now() + CONTINUED_FOR,
    ));
    let acknowledged = writer.wait_for_acknowledgments(WAIT);
    done.store(true, Ordering::Relaxed);
    let got_live = live.join().expect("live reader thread");
    // The reader process's last lines: its final STATS once its stdin closes.
    stopped.child.stdin.take();
    let rest = lines_until(&from_stopped, WAIT, "the reader process done", |l| {
        l == "DONE"
    });
    lines.extend(rest);
    let (got_stopped, stats) = reader_lines(&lines);
    let after: Vec<(u64, bool)> = got_stopped[before.len()..].to_vec();

    let slowest = writes.iter().map(|w| w.took).max().unwrap_or_default();
    let failed: Vec<&Write> = writes.iter().filter(|w| !w.ok).collect();
    let written: Vec<u64> = writes.iter().filter(|w| w.ok).map(|w| w.seq).collect();
    let wrote_stopped = writes
        .iter()
        .filter(|w| w.at >= stopped_at && w.at < continued_at)
        .count();
    eprintln!(
        "{} writes ({wrote_stopped} while the reader was stopped, {:?}..{:?}), {} failed, \
         slowest {slowest:?}; live reader got {}; stopped reader got {} before, then {:?}; \
         its stats (received, lost, decode errors): {stats:?}",
        writes.len(),
        stopped_at,
        continued_at,
        failed.len(),
        got_live.len(),
        before.len(),
        after.iter().map(|(seq, _)| seq).collect::<Vec<_>>(),
    );

    // The writer kept its rate (a write every 33 ms) and each write returned within
    // max_blocking_time (with slack for a loaded machine); only in the moment the reader
    // stopped could one fail, having waited that long.
    let due = (STOPPED_FOR.as_secs_f64() / period.as_secs_f64()) as usize;
    assert!(
        wrote_stopped * 10 >= due * 9,
        "{wrote_stopped} writes while the reader was stopped, {due} due"
    );
    assert!(
        slowest <= MAX_BLOCKING * 2,
        "a write took {slowest:?}, past max_blocking_time ({MAX_BLOCKING:?})"
    );
    let late: Vec<u64> = failed
        .iter()
        .filter(|w| w.at < stopped_at || w.at > stopped_at + STOPPED_READER_NOTICED)
        .map(|w| w.seq)
        .collect();
    assert!(
        late.is_empty() && failed.len() <= 5,
        "failed writes: {} in all, these not while the reader was stopping: {late:?}",
        failed.len()
    );
    assert!(acknowledged, "the images were not acknowledged");
    // The live reader: every image written, whole, in order.
    let live_seqs: Vec<u64> = got_live.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(live_seqs, written, "the live reader's images");
    let torn: Vec<u64> = got_live
        .iter()
        .filter(|(_, w)| !w)
        .map(|(s, _)| *s)
        .collect();
    assert!(torn.is_empty(), "torn images at the live reader: {torn:?}");
    // The stopped reader: whole images only, in order, before and after, up to the newest.
    let torn: Vec<u64> = got_stopped
        .iter()
        .filter(|(_, w)| !w)
        .map(|(s, _)| *s)
        .collect();
    assert!(
        torn.is_empty(),
        "torn images at the stopped reader: {torn:?}"
    );
    let seqs: Vec<u64> = got_stopped.iter().map(|(seq, _)| *seq).collect();
    assert!(
        seqs.windows(2).all(|p| p[0] < p[1]),
        "the stopped reader's images out of order: {seqs:?}"
    );
    assert!(
        !before.is_empty(),
        "the reader got nothing before it was stopped"
    );
    assert_eq!(
        after.last().map(|(seq, _)| *seq),
        written.last().copied(),
        "the continued reader did not get the newest image"
    );
    // Nothing older than the ring holds (18 slots) once it is continued: whatever it took of
    // its history then was either still in its slot, whole, or counted lost, never stale. The
    // image right after its last printed one may have been read before the stop and printed
    // after it (stopped between checking an image and printing it): that one is not from
    // after the stop.
    let last_printed_before = before.last().map(|(seq, _)| *seq);
    let printed_late = after
        .first()
        .is_some_and(|(seq, _)| last_printed_before.map(|b| b + 1) == Some(*seq));
    let first_after = after
        .get(usize::from(printed_late))
        .map_or(0, |(seq, _)| *seq);
    assert!(
        first_after + 18 > last_before_continue,
        "the continued reader got image {first_after}, {last_before_continue} being written"
    );
    let (received, _lost, errors) = stats.expect("the reader's STATS");
    assert_eq!(errors, 0, "decode errors at the stopped reader");
    let printed = at_stopped + lines.iter().filter(|l| l.starts_with("GOT ")).count();
    assert_eq!(
        received, printed as u64,
        "the reader's own count of what it received"
    );
}

/// Takes from `reader` on a thread of its own until `done` is set and nothing more comes;
/// returns each numbered image's (seq, whole).
fn drain(
    mut reader: Subscriber<Image>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u64, bool)>> {
    std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            let batch = reader.take_wait(64, Duration::from_millis(20));
            if batch.is_empty() && done.load(Ordering::Relaxed) {
                return got;
            }
            got.extend(numbered(batch));
        }
    })
}

/// The pids of `parent`'s child processes (field 4 of /proc/PID/stat).
fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // "pid (comm) state ppid ...": the command may hold spaces, the part after ')' not.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// A `convoy bench images --reader convoy` run in the background: the writer (this process)
/// and its sink (its child), with their output's lines.
struct BenchRun {
    bench: ChildGuard,
    lines: std::sync::mpsc::Receiver<String>,
}

impl BenchRun {
    /// `convoy --domain D bench images --json` of `count` images of `payload` (e.g.
    /// "image:1440x960") at `rate` a second to a convoy reader, with `env` added.
    fn start(d: u32, env: &[(&str, &str)], payload: &str, rate: u32, count: u32) -> BenchRun {
        let mut bench = ChildGuard::spawn(
            "bench images",
            convoy_on(d)
                .envs(env.iter().copied())
                .args(["bench", "images", "--json", "--reader", "convoy"])
                .args(["--payload", payload, "--timeout", "60"])
                .args(["--rate", &rate.to_string(), "--count", &count.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let lines = bench.all_lines();
        BenchRun { bench, lines }
    }

    /// The writer's ring (named by its run `run` and pid) once its sink maps it too; and the
    /// sink's pid.
    fn ring_in_use(&self, run: &str) -> (PathBuf, u32) {
        let writer = self.bench.child.id();
        let mine = format!("-{writer}-");
        let mut found = None;
        wait_until("the bench's ring mapped by its sink", WAIT, || {
            let ring = rings_of(run)
                .into_iter()
                .find(|r| r.to_string_lossy().contains(&mine));
            let sink = children_of(writer).into_iter().next();
            if let (Some(ring), Some(sink)) = (ring, sink) {
                if mappers_of(&ring).contains(&(sink as i32)) {
                    found = Some((ring, sink));
                }
            }
            found.is_some()
        });
        found.expect("found")
    }

    /// Waits for the bench to end; its output, and its one JSON result (sent, received, whole).
    fn finish(mut self, limit: Duration) -> (String, (u64, u64, u64)) {
        let status = self.bench.wait_for_exit(limit);
        let output: Vec<String> = self.lines.try_iter().collect();
        let output = output.join("\n");
        assert!(
            status.is_some_and(|s| s.success()),
            "bench images did not finish well ({status:?}):\n{output}"
        );
        let result: serde_json::Value = output
            .lines()
            .find(|l| l.starts_with('{'))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no JSON result:\n{output}"));
        let n = |k: &str| {
            result[k]
                .as_u64()
                .unwrap_or_else(|| panic!("no {k} in {result}"))
        };
        (output, (n("sent"), n("received"), n("whole")))
    }
}

/// Files this test put under /dev/shm, removed when it ends, pass or fail.
struct ShmFiles(Vec<PathBuf>);

impl Drop for ShmFiles {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir(path));
        }
    }
}

/// A ring header (docs/TRANSPORT.md: magic, version, slot count, slot size, owner pid in a
/// 4096-byte page) for `slots` slots of `size` bytes, followed by them filled with `fill`.
fn ring_file(slots: u64, size: u64, owner: u32, fill: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [
        u64::from_le_bytes(*b"CNVYSHM1"),
        1,
        slots,
        size,
        u64::from(owner),
    ] {
        out.extend(word.to_le_bytes());
    }
    out.resize(4096, 0);
    for _ in 0..slots {
        // The slot's sequence (2: the first write, stable) and length, then its bytes.
        out.extend(2u64.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend(std::iter::repeat_n(fill, size as usize));
    }
    out
}

/// A descriptor writer that is not convoy's: another program on the host announcing itself as
/// a ring lane (the USER_DATA entry convoy's lanes carry) on `topic`/shm, writing descriptors
/// of its own making.
struct Forger {
    /// Kept for the writer's lifetime.
    _participant: rustdds::DomainParticipant,
    writer: rustdds::no_key::DataWriter<ShmSample>,
}

impl Forger {
    fn new(d: u32, topic: &str) -> Forger {
        use rustdds::policy::{History, Reliability};
        let participant = rustdds::DomainParticipant::new(d as u16).expect("participant");
        let host = host_key().expect("a host key");
        let qos = rustdds::QosPolicyBuilder::new()
            .reliability(Reliability::Reliable {
                max_blocking_time: rustdds::Duration::from_secs(1),
            })
            .history(History::KeepLast { depth: 64 })
            .build()
            .with_user_data(format!("shm=ring:{host};").into_bytes());
        let topic = format!("{topic}/shm");
        let dds_topic = participant
            .create_topic(
                topic,
                ShmSample::TYPE_NAME.to_string(),
                &qos,
                rustdds::TopicKind::NoKey,
            )
            .expect("topic");
        let publisher = participant.create_publisher(&qos).expect("publisher");
        let writer = publisher
            .create_datawriter_no_key_cdr::<ShmSample>(&dds_topic, Some(qos.clone()))
            .expect("writer");
        Forger {
            _participant: participant,
            writer,
        }
    }

    /// Waits until this writer has discovered a descriptor reader it matches.
    fn wait_for_reader(&self) {
        wait_until("a descriptor reader matching the forger", WAIT, || {
            self.writer.matched_readers() > 0
        });
    }

    /// Writes `descriptors`.
    fn send(&self, descriptors: &[ShmSample]) {
        for d in descriptors {
            self.writer.write(d.clone(), None).expect("forged write");
        }
    }
}

/// Garbage and foreign files do not stop the lane. The camera writes 640x480 images at 30 a
/// second for 6 s through its ring to a reader process; meanwhile garbage datagrams (noise, and
/// RTPS headers with garbled submessages) go to every UDP port of the writer's and the reader's
/// processes and to the domain's multicast groups, and another program announcing itself as a
/// ring lane sends descriptors naming what is not a ring: files that are not convoy's, paths
/// out of /dev/shm, files named like the writer's rings that hold noise or too little, a header
/// whose sizes lie, a header whose slots no image decodes from, a directory, and the real ring
/// with a slot out of range. The reader refuses each (a decode error, logged with what it
/// named) and goes on (a stale descriptor of the real ring counts as lost); it gets every image
/// written, whole and in order, the writer's writes never wait, and the foreign files are left
/// where they were.
#[test]
fn garbage_datagrams_and_foreign_rings_leave_the_images_whole() {
    watchdog(
        "garbage and the shared-memory lane",
        Duration::from_secs(120),
    );
    let _turn = take_turn();
    let d = domain::SHM_GARBAGE;
    let camera_node = node(d, "test/camera");
    let writer: Publisher<Image> = camera_node.publisher(&camera()).expect("publisher");
    let (mut reader, from_reader) = image_reader(d);
    writer.wait_for_match(1, WAIT).expect("the reader matched");
    let handshakes = handshake_both(&writer, None, &from_reader);
    let me = std::process::id();
    let topic_part = camera().name().replace('/', "_");
    let ring = own_ring(&camera());
    let ring_name = ring
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .expect("a ring name");

    // Files named like the writer's rings (its run, its live pid: no sweep removes them).
    let run_part = ring_name
        .split(&format!("-{me}-"))
        .next()
        .unwrap_or_default();
    let like = |n: &str| format!("{run_part}-{me}-{topic_part}_{n}");
    let files = ShmFiles(
        ["71", "72", "73", "74", "75"]
            .iter()
            .map(|n| Path::new(SHM_DIR).join(like(n)))
            .collect(),
    );
    let mut noise = Garbage(7);
    std::fs::write(&files.0[0], noise.bytes(64 * 1024)).expect("noise file");
    std::fs::write(&files.0[1], b"CNVYSHM1").expect("short file");
    // A header whose slot count and size do not make the file's length.
    let mut lying = ring_file(2, 1024, me, 0);
    lying[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&files.0[2], lying).expect("lying header");
    // A header that holds, its slots stable: 0xff, which no Image decodes from.
    std::fs::write(&files.0[3], ring_file(2, 1024, me, 0xff)).expect("undecodable ring");
    std::fs::create_dir(&files.0[4]).expect("a directory");
    let descriptor = |ring: &str, slot: u32, seq: u64| ShmSample {
        ring: ring.to_string(),
        slot,
        seq,
        len: 1024,
        payload: Vec::new(),
    };
    // Each a decode error at the reader.
    let forged = [
        descriptor("passwd", 0, 2),
        descriptor("../../etc/passwd", 0, 2),
        descriptor("convoy-x/../../../etc/passwd", 0, 2),
        descriptor(&like("71"), 0, 2),
        descriptor(&like("72"), 0, 2),
        descriptor(&like("73"), 0, 2),
        descriptor(&like("74"), 1, 2),
        descriptor(&like("75"), 0, 2),
        descriptor(&ring_name, 9999, 2),
    ];

    let mut ports = udp_ports_of(me);
    ports.extend(udp_ports_of(reader.child.id()));
    assert!(!ports.is_empty(), "no UDP ports found");
    let stop = Arc::new(AtomicBool::new(false));
    let garbage = send_garbage(d, ports.clone(), Arc::clone(&stop));
    let forger = Forger::new(d, camera().name());
    forger.wait_for_reader();

    let period = IMAGE_PERIOD;
    let t0 = Instant::now();
    let (writes, mut lines) = std::thread::scope(|scope| {
        let writes =
            scope.spawn(|| paced_writes(&writer, 0.., camera_image, period, t0, t0 + WRITING));
        // A stale descriptor of the real ring (its slot 0 never held an odd sequence when
        // stable), until the reader has counted one lost: the forger is matched both ways.
        let mut lines = Vec::new();
        wait_until("a forged descriptor at the reader", WAIT, || {
            forger.send(&[descriptor(&ring_name, 0, 1)]);
            lines.extend(from_reader.recv_timeout(Duration::from_millis(100)));
            lines.extend(from_reader.try_iter());
            reader_lines(&lines).1.is_some_and(|(_, lost, _)| lost > 0)
        });
        // One at a time, each refused before the next: a burst would overflow the reader's
        // KEEP_LAST 8 descriptor history, which the camera's own descriptors share.
        let refused = |lines: &[String]| lines.iter().filter(|l| l.contains(REFUSED)).count();
        for (i, forged) in forged.iter().enumerate() {
            forger.send(std::slice::from_ref(forged));
            wait_until(
                &format!("forged descriptor {forged:?} refused"),
                WAIT,
                || {
                    lines.extend(from_reader.recv_timeout(Duration::from_millis(100)));
                    refused(&lines) > i
                },
            );
        }
        (writes.join().expect("writer thread"), lines)
    });
    stop.store(true, Ordering::Relaxed);
    let datagrams = garbage.join().expect("garbage thread");
    assert!(writer.wait_for_acknowledgments(WAIT), "not acknowledged");
    reader.child.stdin.take();
    lines.extend(lines_until(&from_reader, WAIT, "the reader done", |l| {
        l == "DONE"
    }));
    let status = reader.wait_for_exit(WAIT);
    let (got, stats) = reader_lines(&lines);
    let (received, lost, errors) = stats.expect("the reader's STATS");
    let slowest = writes.iter().map(|w| w.took).max().unwrap_or_default();
    let written: Vec<u64> = writes.iter().filter(|w| w.ok).map(|w| w.seq).collect();
    eprintln!(
        "{datagrams} garbage datagrams to ports {ports:?} and the multicast groups; {} writes, \
         slowest {slowest:?}; the reader got {} images, received {received}, lost {lost}, \
         decode errors {errors}",
        writes.len(),
        got.len()
    );
    assert!(datagrams > 1000, "only {datagrams} garbage datagrams sent");
    assert!(
        status.is_some_and(|s| s.success()),
        "the reader process did not end well: {status:?}"
    );
    assert_eq!(written.len(), writes.len(), "writes that failed");
    assert!(
        slowest <= MAX_BLOCKING * 2,
        "a write took {slowest:?}, past max_blocking_time ({MAX_BLOCKING:?})"
    );
    let seqs: Vec<u64> = got.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, written, "the reader's images");
    let torn: Vec<u64> = got.iter().filter(|(_, w)| !w).map(|(s, _)| *s).collect();
    assert!(torn.is_empty(), "torn images: {torn:?}");
    // Each forged descriptor refused once, named in the log by what it named.
    let refusals: Vec<&String> = lines.iter().filter(|l| l.contains(REFUSED)).collect();
    let named = |what: &str| refusals.iter().filter(|l| l.contains(what)).count();
    for name in [
        "'passwd', not a convoy ring",
        "'../../etc/passwd', not a convoy ring",
        "'convoy-x/../../../etc/passwd', not a convoy ring",
        &format!("{}: not a convoy ring", like("71")),
        &format!("{}: not a convoy ring", like("72")),
        &format!("{}: not a convoy ring", like("73")),
        "not a valid convoy::Image",
        &format!("{}: ", like("75")),
        &format!("{ring_name}: slot 9999 out of the ring's 18"),
    ] {
        assert_eq!(named(name), 1, "refusals naming {name}:\n{refusals:#?}");
    }
    assert_eq!(refusals.len(), forged.len(), "refusals:\n{refusals:#?}");
    assert_eq!(
        errors,
        forged.len() as u64,
        "decode errors: one per refused descriptor"
    );
    let printed = handshakes + lines.iter().filter(|l| l.starts_with("GOT ")).count();
    assert_eq!(received, printed as u64, "the reader's own count");
    for file in &files.0 {
        assert!(file.exists(), "{} was removed", file.display());
    }
}

/// What convoy logs of a sample it drops as undecodable (and why).
const REFUSED: &str = "dropped a sample that does not decode";

/// How long the garbage test's camera writes.
const WRITING: Duration = Duration::from_secs(6);

/// The convoy rings under /dev/shm that process `pid` maps (their file names).
fn rings_mapped_by(pid: u32) -> BTreeSet<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let prefix = format!("{SHM_DIR}/convoy-");
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| path.starts_with(&prefix))
        .filter_map(|path| path.rsplit('/').next().map(str::to_string))
        .collect()
}

/// Two runs on one host and one domain at once, each with its own run id and each sending
/// 1440x960 images at 30 a second on the same topic (`convoy bench images`, writer and convoy
/// reader): the runs' partitions keep their DDS traffic apart, and the run id in a ring's name
/// keeps their rings apart, so each reader maps its own run's ring only, never the other's,
/// and gets every image of its run whole. No ring of either run is left afterwards.
#[test]
fn two_runs_at_once_never_open_each_others_rings() {
    watchdog("two runs' rings", Duration::from_secs(180));
    let _turn = take_turn();
    let d = domain::SHM_TWO_RUNS;
    const COUNT: u64 = 90;
    let runs = ["shmtworunsA", "shmtworunsB"];
    let benches = runs.map(|run| {
        BenchRun::start(
            d,
            &[("CONVOY_RUN_ID", run)],
            "image:1440x960",
            30,
            COUNT as u32,
        )
    });
    let in_use: Vec<(PathBuf, u32)> = benches
        .iter()
        .zip(runs)
        .map(|(bench, run)| bench.ring_in_use(run))
        .collect();
    let writers: Vec<u32> = benches.iter().map(|b| b.bench.child.id()).collect();
    let sinks: Vec<u32> = in_use.iter().map(|(_, sink)| *sink).collect();
    // What each writer and reader maps, sampled until both runs are over.
    let mut mapped: Vec<BTreeSet<String>> = vec![BTreeSet::new(); 4];
    let mut benches = benches;
    wait_until("both runs over", Duration::from_secs(120), || {
        for (seen, pid) in mapped.iter_mut().zip(writers.iter().chain(&sinks)) {
            seen.extend(rings_mapped_by(*pid));
        }
        benches
            .iter_mut()
            .all(|b| matches!(b.bench.child.try_wait(), Ok(Some(_))))
    });
    let [a, b] = benches;
    let results = [a.finish(WAIT), b.finish(WAIT)];
    let names: Vec<String> = in_use
        .iter()
        .map(|(ring, _)| {
            ring.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .expect("a ring name")
        })
        .collect();
    eprintln!("rings {names:?}; mapped by the writers and readers: {mapped:?}");
    for (i, run) in runs.iter().enumerate() {
        let (output, counts) = &results[i];
        assert_eq!(
            *counts,
            (COUNT, COUNT, COUNT),
            "run {run}: images sent, received and whole:\n{output}"
        );
        assert!(
            names[i].starts_with(&format!("convoy-{run}-{}-", writers[i])),
            "run {run}'s ring is {}",
            names[i]
        );
        let own = BTreeSet::from([names[i].clone()]);
        assert_eq!(mapped[i], own, "run {run}'s writer mapped other rings");
        assert_eq!(mapped[2 + i], own, "run {run}'s reader mapped other rings");
        let left = rings_of(run);
        assert!(left.is_empty(), "run {run} left rings behind: {left:?}");
    }
    // The same topic, the same ring name but for the run id and the pid.
    let topic_part = |name: &str| name.splitn(4, '-').nth(3).map(str::to_string);
    assert_eq!(topic_part(&names[0]), topic_part(&names[1]));
}

// Faults of the lane these tests found, fixed with them: each test below states the promise and
// what broke it before.

/// A descriptor naming a FIFO under /dev/shm (any local user can make one, named like a ring)
/// must be refused like any other file that is not a ring (docs/TRANSPORT.md: "a descriptor
/// naming anything but a plain `convoy-*` file under /dev/shm is refused"), and the reader go
/// on. Before, `RingReader::open` opened it with a plain `File::open`, which blocks until some
/// process opens the FIFO for writing: the reader's `take` never returned.
#[test]
fn a_descriptor_naming_a_fifo_is_refused_and_the_reader_goes_on() {
    watchdog("a FIFO named by a descriptor", Duration::from_secs(120));
    let _turn = take_turn();
    let d = domain::SHM_FIFO;
    let camera_node = node(d, "test/camera");
    let writer: Publisher<Image> = camera_node.publisher(&camera()).expect("publisher");
    let (_reader, from_reader) = image_reader(d);
    writer.wait_for_match(1, WAIT).expect("the reader matched");
    handshake_both(&writer, None, &from_reader);
    let me = std::process::id();
    let name = format!("convoy-fifo-{me}-fifo_1");
    let fifo = ShmFiles(vec![Path::new(SHM_DIR).join(&name)]);
    let path = std::ffi::CString::new(fifo.0[0].to_string_lossy().as_bytes()).expect("a path");
    // SAFETY: mkfifo(3) of a fresh path of this test's own.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let forger = Forger::new(d, camera().name());
    forger.wait_for_reader();
    let descriptor = ShmSample {
        ring: name.clone(),
        slot: 0,
        seq: 2,
        len: 64,
        payload: Vec::new(),
    };
    let mut lines = Vec::new();
    wait_until("the FIFO refused", WAIT, || {
        forger.send(std::slice::from_ref(&descriptor));
        lines.extend(from_reader.recv_timeout(Duration::from_millis(200)));
        lines
            .iter()
            .any(|l| l.contains(REFUSED) && l.contains(&name))
    });
    // And the reader still takes images.
    wait_until("an image after the FIFO", WAIT, || {
        writer.write(test_image(7, WIDTH, HEIGHT)).is_ok()
            && from_reader
                .recv_timeout(Duration::from_millis(100))
                .is_ok_and(|l| l == "GOT 7 1")
    });
}

/// A reader that falls behind its KEEP_LAST history counts what was overwritten in
/// `ReaderStats::lost`, the same through the ring as over UDP (where this reader counts 32).
/// Before, the lane's descriptors had a reader of their own whose gaps were counted in its own
/// stats, which no caller sees: the images' stats said 0.
#[test]
fn a_reader_behind_its_history_counts_the_overwritten_images_lost() {
    watchdog("history overwrites counted", Duration::from_secs(120));
    let _turn = take_turn();
    let d = domain::SHM_HISTORY_LOST;
    let (camera_node, reader_node) = (node(d, "test/camera"), node(d, "test/reader"));
    let writer: Publisher<Image> = camera_node.publisher(&camera()).expect("publisher");
    let mut reader: Subscriber<Image> = reader_node.subscriber(&camera()).expect("subscriber");
    writer.wait_for_match(1, WAIT).expect("matched");
    handshake(
        &writer,
        &mut reader,
        test_image(MARKER, WIDTH, HEIGHT),
        WAIT,
    );
    let stats = reader.stats();
    let before = ReaderStats::get(&stats.lost);
    const N: u64 = 40;
    let t0 = Instant::now();
    let writes = paced_writes(
        &writer,
        0..N,
        camera_image,
        Duration::from_millis(10),
        t0,
        t0 + WAIT,
    );
    assert!(writes.iter().all(|w| w.ok), "writes failed");
    assert!(writer.wait_for_acknowledgments(WAIT), "not acknowledged");
    let got = numbered(reader.take(1024));
    let newest: Vec<(u64, bool)> = (N - 8..N).map(|seq| (seq, true)).collect();
    assert_eq!(got, newest, "the reader's images");
    assert_eq!(
        ReaderStats::get(&stats.lost) - before,
        N - 8,
        "images overwritten in the reader's history, counted lost"
    );
}

/// Two writers of one topic in one process (two nodes of a process, as in these tests) each
/// write through a ring of their own. Before, both lanes named their first ring
/// `convoy-<run>-<pid>-<topic>_1`, so the second writer's first write failed ("File exists").
#[test]
fn two_writers_of_one_topic_in_one_process_both_write() {
    watchdog("two writers of one topic", Duration::from_secs(120));
    let _turn = take_turn();
    let d = domain::SHM_TWO_WRITERS;
    let (a, b, r) = (
        node(d, "test/camera-a"),
        node(d, "test/camera-b"),
        node(d, "test/reader"),
    );
    let writers: [Publisher<Image>; 2] =
        [&a, &b].map(|n| n.publisher(&camera()).expect("publisher"));
    let reader: Subscriber<Image> = r.subscriber(&camera()).expect("subscriber");
    for writer in &writers {
        writer.wait_for_match(1, WAIT).expect("matched");
    }
    reader.wait_for_match(2, WAIT).expect("matched");
    for (seq, writer) in writers.iter().enumerate() {
        let written = writer.write(test_image(seq as u64, WIDTH, HEIGHT));
        assert!(written.is_ok(), "writer {seq}: {written:?}");
    }
}

/// A /dev/shm too small for a writer's ring (a container's default is 64 MiB; a 1440x960
/// camera's ring is 18 slots of 4 MB) must cost the lane, not the writer: the images go over
/// DDS instead (inside their descriptors), every one whole. Before, the ring file was made
/// sparse (`set_len`) and its pages allocated as the writer wrote into the mapping, so the
/// writer died of SIGBUS when tmpfs ran out. Here `convoy bench images` (writer and reader) runs in a mount namespace of
/// its own with an 8 MiB /dev/shm, against a 640x480 ring of 16 MiB (needs root, as the
/// namespace tests do).
#[test]
fn a_dev_shm_too_small_for_the_ring_leaves_the_writer_running() {
    watchdog("small /dev/shm", Duration::from_secs(120));
    let _turn = take_turn();
    let convoy = workspace_bin("convoy");
    let d = domain::SHM_SMALL_DEV_SHM.to_string();
    let private_shm = "mount --make-rprivate / && mount -t tmpfs -o size=8m tmpfs /dev/shm \
                       && exec \"$0\" \"$@\"";
    let (ok, out, err) = run_with_timeout(
        Command::new("unshare")
            .args(["--mount", "sh", "-c", private_shm])
            .arg(&convoy)
            .args([
                "--domain", &d, "bench", "images", "--json", "--reader", "convoy",
            ])
            .args([
                "--payload",
                "image:640x480",
                "--rate",
                "30",
                "--count",
                "60",
            ])
            .args(["--timeout", "30"])
            .env_remove("CONVOY_DOMAIN")
            .env_remove("CONVOY_QOS"),
        Duration::from_secs(90),
    );
    assert!(
        ok,
        "bench images with an 8 MiB /dev/shm failed:\n{out}\n{err}"
    );
    let whole = out
        .lines()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["whole"].as_u64());
    assert_eq!(whole, Some(60), "images whole:\n{out}\n{err}");
}
