"""Reads convoy's ROS 2 transforms (`/tf`, `/tf_static`) with an independent DDS: CycloneDDS's
Python binding, declaring tf2_msgs/TFMessage by hand with ROS 2's DDS names (no tf2_msgs wheel
exists on PyPI). Prints one JSON line per transform it saw, then {"done": ...}.

  tf_reader.py DOMAIN [--static-only] [--count N] [--timeout S]
"""

import argparse
import json
import time
from dataclasses import dataclass

from cyclonedds import idl
from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types


@dataclass
class Time(idl.IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: types.int32
    nanosec: types.uint32


@dataclass
class Header(idl.IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time
    frame_id: str


@dataclass
class Vector3(idl.IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: types.float64
    y: types.float64
    z: types.float64


@dataclass
class Quaternion(idl.IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: types.float64
    y: types.float64
    z: types.float64
    w: types.float64


@dataclass
class Transform(idl.IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3
    rotation: Quaternion


@dataclass
class TransformStamped(idl.IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header
    child_frame_id: str
    transform: Transform


@dataclass
class TFMessage(idl.IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: types.sequence[TransformStamped]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("domain", type=int)
    p.add_argument("--count", type=int, default=5, help="dynamic transforms to see")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()

    dp = DomainParticipant(args.domain)
    static_qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)),
                     Policy.Durability.TransientLocal, Policy.History.KeepLast(1))
    stream_qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)),
                     Policy.Durability.Volatile, Policy.History.KeepLast(100))
    static_reader = DataReader(dp, Topic(dp, "rt/tf_static", TFMessage), qos=static_qos)
    dynamic_reader = DataReader(dp, Topic(dp, "rt/tf", TFMessage), qos=stream_qos)
    print(json.dumps({"ready": True}), flush=True)

    seen_static = 0
    seen_dynamic = 0
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and (seen_static == 0 or seen_dynamic < args.count):
        for which, reader in (("static", static_reader), ("dynamic", dynamic_reader)):
            for msg in reader.take(N=64):
                for t in msg.transforms:
                    if which == "static":
                        seen_static += 1
                    else:
                        seen_dynamic += 1
                    print(json.dumps({
                        "tf": which,
                        "parent": t.header.frame_id,
                        "child": t.child_frame_id,
                        "stamp_ns": t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec,
                        "translation": [t.transform.translation.x, t.transform.translation.y,
                                        t.transform.translation.z],
                        "rotation": [t.transform.rotation.x, t.transform.rotation.y,
                                     t.transform.rotation.z, t.transform.rotation.w],
                    }), flush=True)
        time.sleep(0.02)
    print(json.dumps({"done": True, "static": seen_static, "dynamic": seen_dynamic}), flush=True)


if __name__ == "__main__":
    main()
