#!/usr/bin/env python3
"""Times each (shape, op) of bench/shapes.json two ways, interleaved in one session:

  * `blockflow bench` on a one-block graph (the node's median kernel time in the steady state,
    plus the whole-graph run time and minor page faults per run), and
  * `bf_conv_bench` on the same kernel called directly (its output buffer reused).

and prints the ratio, the faults per run as a share of the output's 4 KB pages, and the
whole-graph overhead per node. The figures are read, never asserted: machines are noisy.

    /usr/bin/python3 bench/runtime_vs_kernel.py [--build build] [--threads 1] [--filter REGEX]
                                               [--rounds 2] [--json FILE]

Needs NumPy (Debian's python3-numpy) for the random feeds. Pin to one core with taskset for
1-thread figures on a busy machine; measure 2 threads only on a quiet one.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def graph_for(shape, op):
    """A one-block graph and its feeds (name -> array) for one suite entry."""
    x = np.random.default_rng(1).uniform(-1, 1, shape["input"]).astype(np.float32)
    w = np.random.default_rng(2).uniform(-1, 1, shape["filter"]).astype(np.float32)
    dy = np.random.default_rng(3).uniform(-1, 1, shape["output"]).astype(np.float32)
    attrs = {"strides": shape["strides"], "padding": shape["padding"]}

    def placeholder(node_id, array):
        return {"id": node_id, "op": "Placeholder",
                "attrs": {"dtype": "float32", "shape": list(array.shape)}}

    def sizes(node_id, values):
        return {"id": node_id, "op": "Const", "attrs": {"dtype": "int32", "value": list(values)}}

    if op in ("Conv2D", "DepthwiseConv2dNative"):
        nodes = [placeholder("x", x), placeholder("w", w),
                 {"id": "out", "op": op, "inputs": {"input": "x", "filter": "w"}, "attrs": attrs}]
        feeds = {"x": x, "w": w}
    elif op.endswith("BackpropInput"):
        nodes = [sizes("sizes", shape["input"]), placeholder("w", w), placeholder("dy", dy),
                 {"id": "out", "op": op,
                  "inputs": {"input_sizes": "sizes", "filter": "w", "out_backprop": "dy"},
                  "attrs": attrs}]
        feeds = {"w": w, "dy": dy}
    else:
        nodes = [placeholder("x", x), sizes("sizes", shape["filter"]), placeholder("dy", dy),
                 {"id": "out", "op": op,
                  "inputs": {"input": "x", "filter_sizes": "sizes", "out_backprop": "dy"},
                  "attrs": attrs}]
        feeds = {"x": x, "dy": dy}
    out_elements = {"Conv2D": dy.size, "DepthwiseConv2dNative": dy.size}.get(
        op, x.size if op.endswith("BackpropInput") else w.size)
    graph = {"format": "blockflow.graph", "version": 1, "nodes": nodes}
    return graph, feeds, out_elements * 4


def run_blockflow(exe, graph_path, feed_args, threads, repeat):
    cmd = [exe, "bench", graph_path, "--json", "--threads", str(threads), "--warmup", "3",
           "--repeat", str(repeat)] + feed_args
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    node = next(n for n in result["nodes"] if n["id"] == "out")
    return node["ms_median"], result


def run_kernel(exe, op, name, threads):
    cmd = [exe, "--threads", str(threads), "--benchmark_format=json",
           "--benchmark_filter=^" + re.escape(f"{op}/{name}/optimized") + "(/real_time)?$",
           "--benchmark_repetitions=5", "--benchmark_min_time=0.05"]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    medians = [b for b in result["benchmarks"] if b.get("aggregate_name") == "median"]
    bench = medians[0] if medians else result["benchmarks"][0]
    scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[bench["time_unit"]]
    return bench["real_time"] * scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--filter", default="", help="regex on 'op/shape'")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (min is kept)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--shapes", default=os.path.join(HERE, "shapes.json"))
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    blockflow = os.path.join(args.build, "bin", "blockflow")
    conv_bench = os.path.join(args.build, "bin", "bf_conv_bench")
    for exe in (blockflow, conv_bench):
        if not os.access(exe, os.X_OK):
            sys.exit(f"error: {exe} not found: build the project first (bash tools/setup.sh)")
    with open(args.shapes) as f:
        suite = json.load(f)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bf_rt_vs_kernel_") as tmp:
        for shape in suite["shapes"]:
            ops = list(shape["ops"]) + ([] if shape["kind"] == "depthwise" else ["Conv2D"])
            for op in ops:
                key = f"{op}/{shape['name']}"
                if args.filter and not re.search(args.filter, key):
                    continue
                graph, feeds, out_bytes = graph_for(shape, op)
                folder = os.path.join(tmp, shape["name"] + "_" + op)
                os.makedirs(folder)
                graph_path = os.path.join(folder, "g.json")
                with open(graph_path, "w") as f:
                    json.dump(graph, f)
                feed_args = []
                for name, array in feeds.items():
                    np.save(os.path.join(folder, name + ".npy"), array)
                    feed_args += ["--feed", f"{name}={os.path.join(folder, name + '.npy')}"]
                node_ms, kernel_ms, whole = [], [], None
                for _ in range(args.rounds):
                    ms, whole = run_blockflow(blockflow, graph_path, feed_args, args.threads,
                                              args.repeat)
                    node_ms.append(ms)
                    kernel_ms.append(run_kernel(conv_bench, op, shape["name"], args.threads))
                pages = max(1, out_bytes // 4096)
                row = {
                    "shape": shape["name"], "op": op,
                    "node_ms": min(node_ms), "kernel_ms": min(kernel_ms),
                    "ratio": min(node_ms) / min(kernel_ms),
                    "faults_per_run": whole["minor_faults_per_run"],
                    "fault_pct_of_output_pages": 100.0 * whole["minor_faults_per_run"] / pages,
                    "run_ms_median": whole["run_ms_median"],
                    "overhead_us_per_node": 1000.0 * (whole["run_ms_median"] - whole["total_ms_median"])
                    / max(1, len(whole["nodes"])),
                }
                rows.append(row)
                print(f"{row['shape']:<26} {op:<38} node {row['node_ms']:8.3f} ms  kernel "
                      f"{row['kernel_ms']:8.3f} ms  ratio {row['ratio']:5.2f}  faults/run "
                      f"{row['faults_per_run']:6.1f} ({row['fault_pct_of_output_pages']:5.2f}% of "
                      f"pages)  run overhead {row['overhead_us_per_node']:6.1f} us/node",
                      flush=True)
    if rows:
        ratios = [r["ratio"] for r in rows]
        geo = float(np.exp(np.mean(np.log(ratios))))
        print(f"\n{len(rows)} cases, {args.threads} thread(s): ratio geomean {geo:.3f}, "
              f"worst {max(ratios):.3f} ({rows[ratios.index(max(ratios))]['op']} on "
              f"{rows[ratios.index(max(ratios))]['shape']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
