#!/usr/bin/env python3
"""Weak and strong scaling of a sharded run: the training-step sample with its batch left free,
run under `mpirun -n P` for each (batch, P), timed by the run itself (BLOCKFLOW_SHARD_TIMING=1:
the slowest rank's run and combine phases). One thread per process. Prints a table.

  python3 bench/mpi_scaling.py build/bin/blockflow [--batches 64,128] [--procs 1,2] [--repeat 3]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "samples", "mobilenet_block_train_step.json")
FETCHES = ["dw_pw", "dw_dw", "dx"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blockflow")
    ap.add_argument("--batches", default="64,128")
    ap.add_argument("--procs", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bf_mpi_scaling_")
    graph = json.load(open(SAMPLE))
    for node in graph["nodes"]:
        if node["op"] == "Placeholder":
            node["attrs"]["shape"][0] = -1
            node.pop("ui", None)
    # The Const files go along (a graph names files only inside its folder).
    shutil.copytree(os.path.join(os.path.dirname(SAMPLE), "mobilenet_block_train_step"),
                    os.path.join(work, "mobilenet_block_train_step"))
    path = os.path.join(work, "g.json")
    json.dump(graph, open(path, "w"))
    env = dict(os.environ, BLOCKFLOW_SHARD_TIMING="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rng = np.random.default_rng(0)
    print(f"{'batch':>6} {'P':>3} {'run ms':>8} {'combine ms':>11}")
    for batch in map(int, a.batches.split(",")):
        feeds = []
        for name, channels in (("x", 32), ("target", 64)):
            f = os.path.join(work, f"{name}_{batch}.npy")
            np.save(f, rng.standard_normal((batch, 28, 28, channels)).astype(np.float32))
            feeds += ["--feed", f"{name}={f}", "--shard", name]
        for p in map(int, a.procs.split(",")):
            best = None
            for _ in range(a.repeat):
                cmd = ["mpirun", "--oversubscribe", "-n", str(p), a.blockflow, "run", path,
                       "--threads", "1", *feeds]
                for fetch in FETCHES:
                    cmd += ["--fetch", fetch]
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"batch {batch} P={p} failed:\n{done.stderr}")
                times = dict(re.findall(r"(\w+)\s+([\d.]+) ms", done.stderr + done.stdout))
                run, combine = float(times["run"]), float(times["combine"])
                if best is None or run + combine < sum(best):
                    best = (run, combine)
            print(f"{batch:>6} {p:>3} {best[0]:>8.1f} {best[1]:>11.1f}", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
