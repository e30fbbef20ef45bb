#!/usr/bin/env python3
"""Reads nb's outputs with Python's standard library, checks what a consumer
relies on, and prints them as plain JSON for the C++ tests.

  nbread.py trace FILE      the Chrome trace (.json, or .json.gz: one gzip member,
                            as catapult's inflater reads only the first): strict
                            JSON parse + layout checks
  nbread.py snapshot FILE   the memory snapshot: opcode whitelist (MemoryViz's
                            unpickler), pickle.load, segment/trace invariants

Exit status 0 and JSON on stdout when every check holds; otherwise status 1 and
one line per problem on stderr.
"""
import json
import pickle
import zlib
import pickletools
import sys

# Opcodes MemoryViz's JavaScript unpickler (pytorch.org/memory_viz, MemoryViz.js) accepts.
ALLOWED_OPCODES = {
    "PROTO", "FRAME", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "MARK", "APPEND",
    "APPENDS", "SETITEM", "SETITEMS", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "DICT", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "BININT",
    "BININT1", "BININT2", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE", "NONE",
    "SHORT_BINUNICODE", "BINUNICODE", "STOP",
}


def fail(problems):
    for p in problems:
        print(p, file=sys.stderr)
    sys.exit(1)


def no_constants(name):
    raise ValueError("non-standard JSON constant " + name)


def gunzip_one_member(path, raw):
    d = zlib.decompressobj(wbits=31)
    out = d.decompress(raw) + d.flush()
    if not d.eof:
        fail([f"{path}: the gzip stream does not end"])
    if d.unused_data:
        fail([f"{path}: more than one gzip member ({len(d.unused_data)} bytes after the first)"])
    return out


def read_trace(path):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".gz"):
        raw = gunzip_one_member(path, raw)
    problems = []
    try:
        text = raw.decode("utf-8")  # strict: invalid UTF-8 is a failure
        doc = json.loads(text, parse_constant=no_constants)
    except Exception as e:  # noqa: BLE001 - any parse failure is the finding
        fail([f"{path}: not valid JSON: {e}"])
    for key in ("schemaVersion", "deviceProperties", "baseTimeNanoseconds", "traceEvents"):
        if key not in doc:
            problems.append(f"missing top-level key {key}")
    for i, e in enumerate(doc.get("traceEvents", [])):
        for key in ("ph", "pid", "tid", "ts", "name"):
            if key not in e:
                problems.append(f"event {i} has no {key}: {e}")
        if e.get("ph") == "X":
            for key in ("dur", "cat"):
                if key not in e:
                    problems.append(f"event {i} has no {key}")
            if e.get("ts", 0) < 0:
                problems.append(f"event {i} has a negative ts")
    # Stacks are written once: every reference finds its stack.
    frames = doc.get("stackFrames", {})
    slices = {e["name"] for e in doc.get("traceEvents", []) if e.get("cat") == "call_stack"}
    for i, e in enumerate(doc.get("traceEvents", [])):
        if "sf" in e and str(e["sf"]) not in frames:
            problems.append(f"event {i}: sf {e['sf']} not in stackFrames")
        stack = e.get("args", {}).get("stack") if e.get("cat") != "call_stack" else None
        if stack is not None and f"stack {stack}" not in slices:
            problems.append(f"event {i}: no slice \"stack {stack}\"")
    for key, frame in frames.items():
        if "parent" in frame and frame["parent"] not in frames:
            problems.append(f"stackFrames {key}: parent {frame['parent']} missing")
    if problems:
        fail(problems)
    return doc


def check_snapshot(d):
    problems = []
    for key in ("segments", "device_traces"):
        if key not in d:
            problems.append(f"missing key {key}")
    for s in d.get("segments", []):
        blocks = s["blocks"]
        if sum(b["size"] for b in blocks) != s["total_size"]:
            problems.append(f"segment {s['address']:#x}: blocks do not sum to total_size")
        addr = s["address"]
        for b in blocks:
            if b["address"] != addr:
                problems.append(f"segment {s['address']:#x}: blocks not contiguous at {addr:#x}")
            addr = b["address"] + b["size"]
        if not 0 <= s["device"] < max(1, len(d.get("device_traces", []))):
            problems.append(f"segment {s['address']:#x}: device {s['device']} has no trace list")
    # MemoryViz's Allocator State History starts from the segments and undoes
    # the trace backwards: every undone alloc must find its block.
    for dev, trace in enumerate(d.get("device_traces", [])):
        live = {s["address"]: s["total_size"] for s in d["segments"] if s["device"] == dev}
        for e in reversed(trace):
            a = e["action"]
            if a == "segment_free" or a == "segment_unmap":
                live[e["addr"]] = e["size"]
            elif a == "segment_alloc" or a == "segment_map":
                if e["addr"] not in live:
                    problems.append(f"device {dev}: {a} at {e['addr']:#x} has no segment when replayed backwards")
                live.pop(e["addr"], None)
            for key in ("action", "size", "stream", "time_us", "frames"):
                if key not in e:
                    problems.append(f"device {dev}: entry without {key}: {e}")
            if a == "oom" and "device_free" not in e:
                problems.append(f"device {dev}: oom without device_free")
    return problems


def read_snapshot(path):
    with open(path, "rb") as f:
        raw = f.read()
    used = set()
    try:
        for op, _arg, _pos in pickletools.genops(raw):
            used.add(op.name)
    except Exception as e:  # noqa: BLE001
        fail([f"{path}: not a pickle: {e}"])
    bad = sorted(used - ALLOWED_OPCODES)
    if bad:
        fail([f"{path}: opcodes MemoryViz cannot read: {', '.join(bad)}"])
    d = pickle.loads(raw)
    problems = check_snapshot(d)
    if problems:
        fail(problems)
    d["_opcodes"] = sorted(used)
    return d


def to_json(obj):
    if isinstance(obj, tuple):
        return [to_json(x) for x in obj]
    if isinstance(obj, list):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    return obj


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("trace", "snapshot"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    what, path = sys.argv[1], sys.argv[2]
    doc = read_trace(path) if what == "trace" else read_snapshot(path)
    json.dump(to_json(doc), sys.stdout)


if __name__ == "__main__":
    main()
