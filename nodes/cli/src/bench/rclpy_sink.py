# convoy bench images: a stock rclpy subscriber (the reader side of `--reader rclpy`).
# Run by the bench as `python -c <this> DOMAIN TOPIC image|cloud reliable|best-effort DEPTH
# COUNT BYTES`; prints READY once it sees the writer, RECV <seq> <latency_us> <whole> per
# sample, DONE at exit (after COUNT samples, or 3 s after stdin closes). A sample whose
# frame_id is 2^64-1 is a warm-up: the first one makes the sink print READY.
import sys
import threading
import time

try:
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy, HistoryPolicy, DurabilityPolicy
    from sensor_msgs.msg import Image, PointCloud2
except ImportError as e:
    sys.stderr.write(
        f"rclpy reader: {e}: this python ({sys.executable}) needs rclpy and sensor_msgs; "
        "scripts/ros-venv.sh makes .venv with them (then --python .venv/bin/python)\n")
    sys.exit(2)

GRACE_S = 3.0
WARMUP_SEQ = 2**64 - 1


def main():
    domain, topic, kind, reliability, depth, count, size = sys.argv[1:8]
    depth, count, size = int(depth), int(count), int(size)
    row = bytes((i * 7) & 0xFF for i in range(256))
    base = row * ((size + 256) // 256 + 1)

    def expected(seq):
        k = ((seq * 31) % 256) * 183 % 256
        return base[k:k + size]

    rclpy.init(domain_id=int(domain))
    node = rclpy.create_node("convoy_bench_sink")
    qos = QoSProfile(
        reliability=ReliabilityPolicy.RELIABLE if reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT,
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        durability=DurabilityPolicy.VOLATILE,
    )
    received = [0]
    ready = [False]
    out = sys.stdout

    def on_sample(msg):
        now = time.time_ns()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        try:
            seq = int(msg.header.frame_id)
        except ValueError:
            seq = -1
        if seq == WARMUP_SEQ:
            if not ready[0]:
                out.write("READY\n")
                out.flush()
                ready[0] = True
            return
        whole = seq >= 0 and bytes(msg.data) == expected(seq)
        out.write(f"RECV {seq} {(now - stamp) / 1000.0:.1f} {1 if whole else 0}\n")
        received[0] += 1

    node.create_subscription(Image if kind == "image" else PointCloud2, topic, on_sample, qos)

    writer_done = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        writer_done.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    done_at = None
    while received[0] < count:
        if writer_done.is_set():
            done_at = done_at or time.monotonic()
            if time.monotonic() - done_at > GRACE_S:
                break
        rclpy.spin_once(node, timeout_sec=0.05)
        out.flush()
    out.write("DONE\n")
    out.flush()
    node.destroy_node()
    rclpy.shutdown()


main()
