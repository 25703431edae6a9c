#!/usr/bin/env python3
"""A Foxglove WebSocket client of `convoy view`: the independent reader of the live view.

Connects with the `websockets` package (subprotocol foxglove.sdk.v1: schemas come inline in the
advertisement; --subprotocols offers other names, e.g. only the older foxglove.websocket.v1, the
same protocol), checks the server's serverInfo, subscribes to every channel it is offered, builds protobuf message classes from
each advertised FileDescriptorSet with the `protobuf` package (descriptor_pool + message_factory,
nothing hand-decoded) and checks what it reads:

- /scene (foxglove.SceneUpdate): entity `ground`, an `agent/<id>` per expected agent, each with a
  cube of positive size and a text with its id, frame_id `world`;
- /map (foxglove.SceneUpdate, with --expect map): entities `map/<material>` in frame `world`,
  each of triangle lists whose indices point at their points, three per triangle;
- a foxglove.RawImage in rgb8: width * height * 3 == len(data), step == width * 3;
- a foxglove.PointCloud: fields x, y, z, intensity (float32), more than 0 points, frame_id the
  agent id in its topic;
- when advertised: /tf (world -> every expected agent's frame) and /clock (JSON frame,
  sim_time_ns, paused), waited for too; /assignments (JSON rows) checked when it comes.

--expect names what must come (default scene,image,points; a scenario without sensors:
scene,map). Prints one JSON summary on stdout. Exit status: 0 when everything checked out, 1 when
a check failed, 2 when the wanted messages did not all come within --timeout seconds.

    python tests/interop/view_client.py --url ws://127.0.0.1:8765 --agents ego,car_2 --timeout 60
    python tests/interop/view_client.py --url ws://127.0.0.1:8765 --agents ego --expect scene,map
    python tests/interop/view_client.py --url ws://127.0.0.1:8765 --subprotocols foxglove.websocket.v1
"""

import argparse
import asyncio
import base64
import json
import struct
import sys
import time

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from websockets.asyncio.client import connect

SUBPROTOCOL = "foxglove.sdk.v1"
# Names of the protocol whose advertisements carry their schemas inline (what this client reads).
INLINE_SCHEMA_SUBPROTOCOLS = ("foxglove.sdk.v1", "foxglove.websocket.v1")
MESSAGE_DATA = 0x01  # binary opcode: u8 opcode, u32 LE subscription id, u64 LE log time, payload
FLOAT32 = 7  # foxglove.PackedElementField.NumericType.FLOAT32


class CheckFailed(Exception):
    """A message was read but does not say what the live view promises."""


class Schemas:
    """Message classes of the advertised protobuf channels, from their FileDescriptorSets."""

    def __init__(self):
        self.pool = descriptor_pool.DescriptorPool()
        self.classes = {}

    def message_class(self, channel):
        name = channel["schemaName"]
        if name not in self.classes:
            files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
            for f in files.file:
                try:
                    self.pool.FindFileByName(f.name)  # shared files (Pose, Vector3, ...) once
                except KeyError:
                    self.pool.Add(f)
            descriptor = self.pool.FindMessageTypeByName(name)
            self.classes[name] = message_factory.GetMessageClass(descriptor)
        return self.classes[name]


class Summary:
    """What was read, and the checks of it."""

    def __init__(self, agents, expect=("scene", "image", "points")):
        self.expected_agents = agents
        self.expect = set(expect)
        self.channels = {}  # channel id -> advertised channel
        self.counts = {}  # topic -> messages read
        self.scene = None  # the first complete SceneUpdate's findings
        self.image = None
        self.points = None
        self.map = None  # the newest /map's findings
        self.tf_children = set()
        self.clock = None
        self.assignments = None
        self.other_images = {}
        self.scene_agents_seen = []
        self.subprotocol = None  # the one the server chose
        self.server_info = None  # name and capabilities of its serverInfo

    def complete(self):
        return not self.missing()

    def advertised(self, topic):
        return any(ch["topic"] == topic for ch in self.channels.values())

    def missing(self):
        """What is still awaited: a scene, an rgb8 image, a point cloud; and, when advertised,
        a /tf with every expected agent and a /clock."""
        wanted = (("scene", "scene", self.scene), ("image", "rgb8 image", self.image),
                  ("points", "point cloud", self.points), ("map", "/map", self.map))
        missing = [name for key, name, v in wanted if key in self.expect and v is None]
        if "scene" in self.expect and self.scene is None and self.expected_agents:
            missing[0] = (f"a scene with agents {self.expected_agents} "
                          f"(last seen: {self.scene_agents_seen})")
        if self.server_info is None:
            missing.append("serverInfo")
        if self.advertised("/tf") and not set(self.expected_agents) <= self.tf_children:
            missing.append(f"/tf to {self.expected_agents} (seen: {sorted(self.tf_children)})")
        if self.advertised("/clock") and self.clock is None:
            missing.append("/clock")
        return missing

    def as_json(self):
        return {
            "channels": sorted(ch["topic"] for ch in self.channels.values()),
            "messages": self.counts,
            "scene": self.scene,
            "image": self.image,
            "other_images": self.other_images,
            "points": self.points,
            "map": self.map,
            "tf_children": sorted(self.tf_children),
            "clock": self.clock,
            "assignments": self.assignments,
            "subprotocol": self.subprotocol,
            "server_info": self.server_info,
        }

    # --- the checks, one per kind of message --------------------------------------------------

    def on_scene(self, msg):
        ids = [e.id for e in msg.entities]
        agents = sorted(i[len("agent/"):] for i in ids if i.startswith("agent/"))
        if self.scene is not None or not agents:
            return
        # The first update with every expected agent: all its entities must be well formed.
        self.scene_agents_seen = agents
        if any(a not in agents for a in self.expected_agents):
            return  # not all there yet: wait (a timeout names what was seen)
        for e in msg.entities:
            if e.frame_id != "world":
                raise CheckFailed(f"/scene entity {e.id} in frame '{e.frame_id}', not 'world'")
            if not e.id.startswith("agent/"):
                continue
            if not e.cubes:
                raise CheckFailed(f"/scene entity {e.id} has no cube")
            size = e.cubes[0].size
            if min(size.x, size.y, size.z) <= 0:
                raise CheckFailed(f"/scene entity {e.id} cube size {size}")
            agent = e.id[len("agent/"):]
            if agent not in [t.text for t in e.texts]:
                raise CheckFailed(f"/scene entity {e.id} has no text '{agent}'")
        obstacles = [i for i in ids if i.startswith("obstacle/")]
        ground = [e for e in msg.entities if e.id == "ground" and e.cubes]
        ground_top = None
        if ground:
            cube = ground[0].cubes[0]
            ground_top = cube.pose.position.z + cube.size.z / 2
        self.scene = {"entities": len(ids), "agents": agents, "obstacles": len(obstacles),
                      "ground": "ground" in ids, "ground_top": ground_top}

    def on_map(self, msg, size):
        entities = {}
        bounds = [float("inf"), float("inf"), float("-inf"), float("-inf")]
        for e in msg.entities:
            if e.frame_id != "world":
                raise CheckFailed(f"/map entity {e.id} in frame '{e.frame_id}', not 'world'")
            if not e.id.startswith("map/"):
                raise CheckFailed(f"/map entity {e.id} is not map/<material>")
            if e.id in entities:
                raise CheckFailed(f"/map entity {e.id} twice in one update")
            triangles = 0
            for t in e.triangles:
                n = len(t.points)
                if not t.indices or len(t.indices) % 3:
                    raise CheckFailed(f"/map entity {e.id}: {len(t.indices)} indices, not 3 per triangle")
                if max(t.indices) >= n:
                    raise CheckFailed(f"/map entity {e.id}: index {max(t.indices)} past its {n} points")
                if t.color.a <= 0:
                    raise CheckFailed(f"/map entity {e.id}: a triangle list with no colour")
                triangles += len(t.indices) // 3
                for p in t.points:
                    bounds = [min(bounds[0], p.x), min(bounds[1], p.y),
                              max(bounds[2], p.x), max(bounds[3], p.y)]
            if triangles == 0:
                raise CheckFailed(f"/map entity {e.id} has no triangles")
            entities[e.id] = triangles
        self.map = {"entities": entities, "triangles": sum(entities.values()), "bytes": size,
                    "bounds": [round(b, 1) for b in bounds]}

    def on_image(self, topic, msg):
        if msg.encoding != "rgb8":
            # depth (32FC1), classes (mono8): rows of `step` bytes
            if len(msg.data) != msg.step * msg.height:
                raise CheckFailed(f"{topic}: {len(msg.data)} bytes, step {msg.step} x height {msg.height}")
            self.other_images[topic] = {"width": msg.width, "height": msg.height,
                                        "encoding": msg.encoding}
            return
        if msg.width == 0 or msg.height == 0:
            raise CheckFailed(f"{topic}: empty image {msg.width}x{msg.height}")
        if msg.width * msg.height * 3 != len(msg.data):
            raise CheckFailed(f"{topic}: {len(msg.data)} bytes for {msg.width}x{msg.height} rgb8")
        if msg.step != msg.width * 3:
            raise CheckFailed(f"{topic}: step {msg.step} for width {msg.width} rgb8")
        if self.image is None:
            self.image = {"topic": topic, "width": msg.width, "height": msg.height,
                          "encoding": msg.encoding, "frame_id": msg.frame_id,
                          "bytes": len(msg.data)}

    def on_points(self, topic, msg):
        fields = {f.name: f for f in msg.fields}
        for name in ("x", "y", "z", "intensity"):
            if name not in fields:
                raise CheckFailed(f"{topic}: no field {name} in {sorted(fields)}")
            if fields[name].type != FLOAT32:
                raise CheckFailed(f"{topic}: field {name} of type {fields[name].type}, not FLOAT32")
        if msg.point_stride < 16 or len(msg.data) % msg.point_stride:
            raise CheckFailed(f"{topic}: {len(msg.data)} bytes in points of {msg.point_stride}")
        count = len(msg.data) // msg.point_stride
        agent = topic.strip("/").split("/")[0]
        if msg.frame_id != agent:
            raise CheckFailed(f"{topic}: frame_id '{msg.frame_id}', not '{agent}'")
        if count == 0:
            return  # an empty scan is allowed; wait for one with points
        # The first point's coordinates are finite numbers.
        off = fields["x"].offset
        x, = struct.unpack_from("<f", msg.data, off)
        if x != x:
            raise CheckFailed(f"{topic}: first point's x is NaN")
        if self.points is None:
            self.points = {"topic": topic, "count": count, "stride": msg.point_stride,
                           "frame_id": msg.frame_id}

    def on_tf(self, msg):
        for t in msg.transforms:
            if t.parent_frame_id != "world":
                raise CheckFailed(f"/tf: {t.parent_frame_id} -> {t.child_frame_id}, not from world")
            self.tf_children.add(t.child_frame_id)

    def on_json(self, topic, data):
        value = json.loads(data)
        if topic == "/clock":
            for key in ("frame", "sim_time_ns", "paused"):
                if key not in value:
                    raise CheckFailed(f"/clock without '{key}': {value}")
            self.clock = value
        elif topic == "/assignments":
            if not isinstance(value.get("rows"), list):
                raise CheckFailed(f"/assignments without rows: {value}")
            self.assignments = {"rows": len(value["rows"])}


async def follow(url, summary, deadline, subprotocols=(SUBPROTOCOL,)):
    schemas = Schemas()
    subscriptions = {}  # subscription id -> channel
    next_id = 1
    async with connect(url, subprotocols=list(subprotocols), max_size=None,
                       open_timeout=10) as ws:
        summary.subprotocol = ws.subprotocol
        if ws.subprotocol not in subprotocols or ws.subprotocol not in INLINE_SCHEMA_SUBPROTOCOLS:
            raise CheckFailed(f"server chose subprotocol {ws.subprotocol!r} "
                              f"when offered {list(subprotocols)}")
        while not summary.complete():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=left)
            except asyncio.TimeoutError:
                return False
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg.get("op") == "serverInfo":
                    if not isinstance(msg.get("name"), str) or not isinstance(
                            msg.get("capabilities"), list):
                        raise CheckFailed(f"serverInfo without name or capabilities: {msg}")
                    summary.server_info = {"name": msg["name"],
                                           "capabilities": sorted(msg["capabilities"])}
                elif msg.get("op") == "advertise":
                    subs = []
                    for ch in msg["channels"]:
                        summary.channels[ch["id"]] = ch
                        subscriptions[next_id] = ch
                        subs.append({"id": next_id, "channelId": ch["id"]})
                        next_id += 1
                    await ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))
                elif msg.get("op") == "unadvertise":
                    for cid in msg["channelIds"]:
                        summary.channels.pop(cid, None)
                continue
            if not frame or frame[0] != MESSAGE_DATA:
                continue
            sub_id, _log_time = struct.unpack_from("<IQ", frame, 1)
            payload = frame[13:]
            ch = subscriptions.get(sub_id)
            if ch is None:
                continue
            topic = ch["topic"]
            summary.counts[topic] = summary.counts.get(topic, 0) + 1
            if ch["encoding"] == "json":
                summary.on_json(topic, payload)
                continue
            if ch["encoding"] != "protobuf":
                continue
            msg = schemas.message_class(ch).FromString(payload)
            schema = ch["schemaName"]
            if schema == "foxglove.SceneUpdate" and topic == "/map":
                summary.on_map(msg, len(payload))
            elif schema == "foxglove.SceneUpdate":
                summary.on_scene(msg)
            elif schema == "foxglove.RawImage":
                summary.on_image(topic, msg)
            elif schema == "foxglove.PointCloud":
                summary.on_points(topic, msg)
            elif schema == "foxglove.FrameTransforms":
                summary.on_tf(msg)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="ws://127.0.0.1:8765")
    parser.add_argument("--agents", default="", help="comma-separated agent ids /scene must have")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait in all")
    parser.add_argument("--expect", default="scene,image,points",
                        help="what must come, of scene, image, points, map (comma-separated)")
    parser.add_argument("--subprotocols", default=SUBPROTOCOL,
                        help="the subprotocols to offer, comma-separated, of "
                        f"{', '.join(INLINE_SCHEMA_SUBPROTOCOLS)}")
    args = parser.parse_args()
    agents = [a for a in args.agents.split(",") if a]
    expect = [e for e in args.expect.split(",") if e]
    unknown = set(expect) - {"scene", "image", "points", "map"}
    if unknown:
        parser.error(f"--expect: unknown {sorted(unknown)}")
    subprotocols = [p.strip() for p in args.subprotocols.split(",") if p.strip()]
    if not subprotocols or set(subprotocols) - set(INLINE_SCHEMA_SUBPROTOCOLS):
        parser.error(f"--subprotocols: offer some of {INLINE_SCHEMA_SUBPROTOCOLS}")
    summary = Summary(agents, expect)
    deadline = time.monotonic() + args.timeout
    status, error = 0, None
    try:
        done = asyncio.run(follow(args.url, summary, deadline, subprotocols))
        if not done:
            status, error = 2, f"timed out after {args.timeout} s waiting for {summary.missing()}"
    except CheckFailed as e:
        status, error = 1, str(e)
    except (OSError, asyncio.TimeoutError) as e:
        status, error = 2, f"cannot connect to {args.url}: {e!r}"
    except Exception as e:  # a closed connection, an undecodable message: a failure, said so
        status, error = 1, f"{type(e).__name__}: {e}"
    out = summary.as_json()
    out["ok"] = status == 0
    if error:
        out["error"] = error
        print(f"view_client: {error}", file=sys.stderr)
    print(json.dumps(out, sort_keys=True))
    sys.exit(status)


if __name__ == "__main__":
    main()
