"""Reads a run's TensorBoard event files without any of allot's code and checks them against
its metrics.jsonl.

The records are TFRecord frames (length, masked CRC-32C of the length, data, masked CRC-32C of
the data), each an Event of TensorBoard's schema (tensorboard_event.proto, compiled by protoc
into a temporary module and decoded by the protobuf runtime). Checked:
  - every frame's CRCs, and that no bytes trail the last frame;
  - the first event of each file is its file_version ("brain.Event:2");
  - every finite scalar of every metrics.jsonl record is in the events once, at the record's
    step, with the record's value as a 32-bit float; non-finite (null) ones are absent;
  - the events hold nothing else: no scalar, tag or step that metrics.jsonl lacks.

  python3 tensorboard_reader.py RUN_DIR PROTO_MODULE_DIR
"""
import glob
import json
import math
import os
import struct
import sys


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frames(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            sys.exit(f"FAIL: {path}: {len(data) - at} trailing bytes at offset {at}")
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        if masked(crc32c(data[at:at + 8])) != length_crc:
            sys.exit(f"FAIL: {path}: bad length CRC at offset {at}")
        body = data[at + 12:at + 12 + length]
        if len(body) != length or at + 16 + length > len(data):
            sys.exit(f"FAIL: {path}: frame at offset {at} is cut short")
        (body_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        if masked(crc32c(body)) != body_crc:
            sys.exit(f"FAIL: {path}: bad data CRC at offset {at}")
        yield body
        at += 16 + length


def main():
    run_dir, module_dir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, module_dir)
    import tensorboard_event_pb2 as pb

    files = sorted(glob.glob(os.path.join(run_dir, "tb", "events.out.tfevents.*")))
    if not files:
        sys.exit(f"FAIL: no event file in {run_dir}/tb")
    events = {}  # (step, tag) -> float
    for path in files:
        first = True
        for body in frames(path):
            ev = pb.Event()
            ev.ParseFromString(body)
            if first:
                if ev.WhichOneof("what") != "file_version" or ev.file_version != "brain.Event:2":
                    sys.exit(f"FAIL: {path}: the first event is not file_version brain.Event:2")
                first = False
                continue
            if ev.WhichOneof("what") != "summary":
                sys.exit(f"FAIL: {path}: an event at step {ev.step} holds {ev.WhichOneof('what')}")
            for v in ev.summary.value:
                if v.WhichOneof("value") != "simple_value":
                    sys.exit(f"FAIL: {path}: tag {v.tag} at step {ev.step} is not a scalar")
                key = (ev.step, v.tag)
                if key in events:
                    sys.exit(f"FAIL: {path}: tag {v.tag} at step {ev.step} written twice")
                events[key] = v.simple_value

    expected = {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line_no, line in enumerate(f, 1):
            record = json.loads(line)
            step = record["step"]
            for tag, value in record.items():
                if tag in ("step", "time") or value is None:
                    continue
                if not math.isfinite(value):
                    sys.exit(f"FAIL: metrics.jsonl:{line_no}: {tag} is not finite but not null")
                key = (step, tag)
                if key in expected:
                    sys.exit(f"FAIL: metrics.jsonl:{line_no}: step {step} {tag} appears twice")
                expected[key] = struct.unpack("<f", struct.pack("<f", value))[0]

    missing = sorted(set(expected) - set(events))
    extra = sorted(set(events) - set(expected))
    wrong = sorted(k for k in set(expected) & set(events) if expected[k] != events[k])
    for name, keys in (("missing from the events", missing), ("only in the events", extra)):
        if keys:
            sys.exit(f"FAIL: {len(keys)} scalars {name}, e.g. step {keys[0][0]} {keys[0][1]}")
    if wrong:
        k = wrong[0]
        sys.exit(f"FAIL: {len(wrong)} scalars differ, e.g. step {k[0]} {k[1]}: "
                 f"metrics.jsonl {expected[k]!r}, events {events[k]!r}")
    steps = {k[0] for k in expected}
    print(f"ok: {len(files)} event file(s), {len(events)} scalars over {len(steps)} steps "
          "equal metrics.jsonl")


if __name__ == "__main__":
    main()
