"""Reads a convoy recording with the Python `mcap` package (Foxglove's reader, not convoy's code)
and prints what it holds as one JSON object, for tests/e2e/record.rs.

    mcap_read.py FILE                  report on FILE (see below)
    mcap_read.py --write-foreign FILE  write an MCAP file with a JSON channel and no convoy schema

The report reads FILE twice: once as a stream from its start (as a reader of a file that is
still being written, or was cut short, does: every record in order, until the file ends or a
record cannot be read), and once through its summary section (seeking to the end), which only a
finished file has. For each topic: message count and bytes, a digest of its payloads (order
does not matter), the schema and message encodings, the channel metadata, and, for the types
that carry one, the frame number decoded from the CDR payload (and whether the message's
publish time is the simulation time stamped in it).
"""

import hashlib
import json
import struct
import sys

from mcap.reader import make_reader
from mcap.records import Channel, Header, Message, Metadata, Schema
from mcap.stream_reader import StreamReader

SENSOR_TYPES = {
    "convoy::Image",
    "convoy::PointCloud",
    "convoy::Imu",
    "convoy::GnssFix",
    "convoy::Odometry",
    "convoy::RadarScan",
}


class Cdr:
    """A little-endian plain CDR reader over one payload (after its 4-byte header)."""

    def __init__(self, payload):
        if payload[:2] != b"\x00\x01":
            raise ValueError(f"not little-endian plain CDR: {payload[:4]!r}")
        self.data = payload[4:]
        self.at = 0

    def align(self, n):
        self.at += (-self.at) % n

    def u32(self):
        self.align(4)
        (v,) = struct.unpack_from("<I", self.data, self.at)
        self.at += 4
        return v

    def u64(self):
        self.align(8)
        (v,) = struct.unpack_from("<Q", self.data, self.at)
        self.at += 8
        return v

    def i64(self):
        self.align(8)
        (v,) = struct.unpack_from("<q", self.data, self.at)
        self.at += 8
        return v

    def string(self):
        n = self.u32()
        s = self.data[self.at : self.at + n - 1].decode()
        self.at += n
        return s


def frame_and_stamp(type_name, payload):
    """(frame, sim time in ns or None) of the types that carry a frame; None otherwise."""
    c = Cdr(payload)
    if type_name == "convoy::Tick":
        return c.u64(), c.i64()
    if type_name == "convoy::AgentState":
        c.string()
        return c.u64(), c.i64()
    if type_name == "convoy::FrameDone":
        c.string()
        return c.u64(), None
    if type_name in SENSOR_TYPES:
        c.string()
        c.string()
        return c.u64(), c.i64()
    return None


def report(path):
    out = {
        "header": None,
        "metadata": {},
        "topics": {},
        "stream_error": None,
        "summary": None,
        "summary_error": None,
    }
    schemas = {}
    channels = {}
    payloads = {}
    try:
        with open(path, "rb") as f:
            for record in StreamReader(f).records:
                if isinstance(record, Header):
                    out["header"] = {"profile": record.profile, "library": record.library}
                elif isinstance(record, Metadata):
                    out["metadata"][record.name] = dict(record.metadata)
                elif isinstance(record, Schema):
                    schemas[record.id] = record
                elif isinstance(record, Channel):
                    channels[record.id] = record
                    schema = schemas.get(record.schema_id)
                    out["topics"].setdefault(
                        record.topic,
                        {
                            "count": 0,
                            "bytes": 0,
                            "schema_name": schema.name if schema else None,
                            "schema_encoding": schema.encoding if schema else None,
                            "message_encoding": record.message_encoding,
                            "metadata": dict(record.metadata),
                            "frames": [],
                            "stamps_match": True,
                        },
                    )
                elif isinstance(record, Message):
                    channel = channels[record.channel_id]
                    topic = out["topics"][channel.topic]
                    topic["count"] += 1
                    topic["bytes"] += len(record.data)
                    payloads.setdefault(channel.topic, []).append(
                        hashlib.sha256(record.data).hexdigest()
                    )
                    decoded = frame_and_stamp(topic["metadata"].get("convoy.type"), record.data)
                    if decoded is not None:
                        frame, stamp = decoded
                        topic["frames"].append(frame)
                        if stamp is not None and stamp != record.publish_time:
                            topic["stamps_match"] = False
    except Exception as e:  # noqa: BLE001 - a file cut short ends the stream; say how
        out["stream_error"] = f"{type(e).__name__}: {e}"
    for topic, digests in payloads.items():
        out["topics"][topic]["digest"] = hashlib.sha256(
            "".join(sorted(digests)).encode()
        ).hexdigest()
    try:
        with open(path, "rb") as f:
            summary = make_reader(f).get_summary()
        if summary is not None and summary.statistics is not None:
            stats = summary.statistics
            out["summary"] = {
                "message_count": stats.message_count,
                "channel_message_counts": {
                    summary.channels[cid].topic: n
                    for cid, n in stats.channel_message_counts.items()
                },
            }
    except Exception as e:  # noqa: BLE001 - no summary in a file cut short
        out["summary_error"] = f"{type(e).__name__}: {e}"
    return out


def write_foreign(path):
    """An MCAP file as another tool writes it: a JSON channel, no convoy schema."""
    from mcap.writer import Writer

    with open(path, "wb") as f:
        writer = Writer(f)
        writer.start(profile="", library="tests/interop/mcap_read.py")
        schema = writer.register_schema(
            name="Point", encoding="jsonschema", data=b'{"type": "object"}'
        )
        channel = writer.register_channel(
            topic="/points", message_encoding="json", schema_id=schema
        )
        for i in range(3):
            writer.add_message(
                channel_id=channel,
                log_time=i,
                publish_time=i,
                data=json.dumps({"x": i}).encode(),
            )
        writer.finish()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--write-foreign":
        write_foreign(sys.argv[2])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(json.dumps(report(sys.argv[1])))


if __name__ == "__main__":
    main()
