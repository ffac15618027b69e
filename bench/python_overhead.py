#!/usr/bin/env python3
"""Per-run overhead of the Python module over the C++ Session, on tiny graphs where the run is
all overhead: a one-Const graph (fetch its value) and a fed Placeholder -> Identity graph.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--cpp build/bin/bf_session_bench]

Times Session.run with timeit (best of several repeats, microseconds per run) and, when the C++
benchmark program is given or found, runs its OneConst/run and TinyGraph/run cases (Google
Benchmark, the same graphs, one thread) and prints both with their difference. The goal is at
most 5 us above C++. On a busy machine pin it: taskset -c 1 ...
"""

import argparse
import json
import os
import subprocess
import sys
import timeit

import numpy as np

import blockflow

ONE_CONST = {"id": "c", "op": "Const", "attrs": {"dtype": "float32", "shape": [4], "value": 1}}
TINY = [
    {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [4]}},
    {"id": "y", "op": "Identity", "inputs": {"input": "x"}},
]


def graph(nodes):
    return blockflow.Graph.from_json(
        json.dumps({"format": "blockflow.graph", "version": 1, "nodes": nodes})
    )


def python_us(stmt, number, repeat):
    """Best microseconds per call of `stmt` over `repeat` rounds of `number` calls."""
    stmt()  # plan made, buffers pooled
    best = min(timeit.repeat(stmt, number=number, repeat=repeat))
    return best / number * 1e6


def cpp_us(binary):
    """C++ figures (microseconds per Session::Run) by benchmark name, or {}."""
    if not binary or not os.path.exists(binary):
        return {}
    out = subprocess.run(
        [binary, "--benchmark_filter=^(OneConst|TinyGraph)/run$", "--benchmark_format=json",
         "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true"],
        capture_output=True, text=True, check=True).stdout
    figures = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "min" or (b.get("aggregate_name") == "median"
                                                 and b["run_name"] not in figures):
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
            figures[b["run_name"]] = b["real_time"] * scale
    return figures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_cpp = os.path.join(here, "..", "build", "bin", "bf_session_bench")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpp", default=default_cpp, help="the bf_session_bench program")
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    one_const = blockflow.Session(graph([ONE_CONST]), threads=1)
    tiny = blockflow.Session(graph(TINY), threads=1)
    x = np.arange(4, dtype=np.float32)
    feeds = {"x": x}
    py = {
        "OneConst/run": python_us(lambda: one_const.run("c"), args.number, args.repeat),
        "TinyGraph/run": python_us(lambda: tiny.run("y", feeds), args.number, args.repeat),
    }
    cpp = cpp_us(args.cpp)
    print("%-16s %12s %12s %12s" % ("graph", "python_us", "cpp_us", "overhead_us"))
    for name, us in py.items():
        c = cpp.get(name)
        print("%-16s %12.2f %12s %12s" % (
            name, us, "%.2f" % c if c is not None else "-", "%.2f" % (us - c) if c else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
