#!/usr/bin/env python3
"""NumPy reads what `blockflow run --out` writes, and blockflow reads what NumPy writes.

    numpy_interop.py BLOCKFLOW SAMPLES_DIR

1. Every samples/*.json graph runs (Placeholders fed from their ui.feed files); each output
   file loads with np.load and matches the run's printed shape.
2. A graph of every dtype is fed arrays that NumPy wrote (C order, Fortran order, empty,
   float16, bfloat16 as '<u2' bits) and echoes them back bit for bit.
Prints 'N passed, N failed'; exits non-zero on any failure."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

blockflow, samples = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


with tempfile.TemporaryDirectory() as tmp:
    # 1. Sample outputs load in NumPy.
    for name in sorted(os.listdir(samples)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(samples, name)
        graph = json.load(open(path))
        args = [blockflow, "run", path, "--out", os.path.join(tmp, name)]
        for node in graph["nodes"]:
            feed = (node.get("ui") or {}).get("feed")
            if node["op"] == "Placeholder" and feed:
                args += ["--feed", f"{node['id']}={os.path.join(samples, feed)}"]
        p = subprocess.run(args, capture_output=True, text=True)
        check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr.strip()}")
        for line in p.stdout.splitlines()[1:]:
            cols = line.split()
            if len(cols) < 4 or not cols[3].startswith("["):
                continue
            node, port, shape = cols[0], int(cols[1]), cols[3]
            out = os.path.join(tmp, name, node + (f".{port}" if port else "") + ".npy")
            arr = np.load(out)
            expect = tuple(int(d) for d in shape.strip("[]").split(",") if d)
            check(arr.shape == expect, f"{name}: {out} has shape {arr.shape}, the run printed {shape}")

    # 2. NumPy-written feeds come back unchanged through Identity.
    rng = np.random.default_rng(3)
    feeds = {
        "f32_c": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "f32_fortran": np.asfortranarray(rng.standard_normal((3, 5)).astype(np.float32)),
        "f64_t": rng.standard_normal((4, 2)).T,  # a transpose: NumPy saves it in Fortran order
        "f16": rng.standard_normal((5,)).astype(np.float16),
        "bf16": (rng.standard_normal((2, 2)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16),
        "i32_empty": np.zeros((0, 3), np.int32),
        "i64": np.arange(6, dtype=np.int64).reshape(2, 3),
        "b": np.array([True, False, True]),
    }
    dtypes = {"f32_c": "float32", "f32_fortran": "float32", "f64_t": "float64", "f16": "float16",
              "bf16": "bfloat16", "i32_empty": "int32", "i64": "int64", "b": "bool"}
    nodes, args = [], []
    for key, arr in feeds.items():
        f = os.path.join(tmp, key + ".npy")
        np.save(f, arr)
        nodes.append({"id": key, "op": "Placeholder", "attrs": {"dtype": dtypes[key], "shape": list(arr.shape)}})
        nodes.append({"id": "echo/" + key, "op": "Identity", "inputs": {"input": key}})
        args += ["--feed", f"{key}={f}"]
    g = os.path.join(tmp, "echo.json")
    json.dump({"format": "blockflow.graph", "version": 1, "nodes": nodes}, open(g, "w"))
    out = os.path.join(tmp, "echo_out")
    p = subprocess.run([blockflow, "run", g, "--out", out] + args, capture_output=True, text=True)
    check(p.returncode == 0, f"echo graph: exit {p.returncode}: {p.stderr.strip()}")
    for key, arr in feeds.items():
        back = np.load(os.path.join(out, "echo", key + ".npy"))
        same = back.shape == arr.shape and back.dtype == arr.dtype and np.array_equal(
            np.ascontiguousarray(back).view(np.uint8), np.ascontiguousarray(arr).view(np.uint8))
        check(same, f"{key}: came back as {back.dtype}{back.shape}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
