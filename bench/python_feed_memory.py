#!/usr/bin/env python3
"""Feeding a 100 MB array copies nothing: peak RSS before and after a run that feeds it.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_feed_memory.py [--mb 100]

A Placeholder -> Identity graph and a Placeholder -> Sum graph are fed one float32 array of the
given size (written once, so its pages are resident). The process's peak resident set
(resource.getrusage ru_maxrss) is read before and after each run: a copy of the feed would raise
the peak by its size, as the last row shows with a strided feed, which is copied once. The
Identity result is checked to be the fed memory itself.
"""

import argparse
import json
import resource
import sys

import numpy as np

import blockflow


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KB


def session(nodes):
    g = blockflow.Graph.from_json(
        json.dumps({"format": "blockflow.graph", "version": 1, "nodes": nodes})
    )
    return blockflow.Session(g)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100)
    args = parser.parse_args()
    n = int(args.mb * 1e6 / 4)
    placeholder = {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [n]}}
    identity = session([placeholder, {"id": "y", "op": "Identity", "inputs": {"input": "x"}}])
    total = session([
        placeholder,
        {"id": "axis", "op": "Const", "attrs": {"dtype": "int32", "shape": [1], "value": [0]}},
        {"id": "s", "op": "Sum", "inputs": {"input": "x", "axis": "axis"}},
    ])
    x = np.ones(n, np.float32)  # written: resident
    rows = []
    for name, s, fetch in (("Identity", identity, "y"), ("Sum", total, "s")):
        before = peak_mb()
        out = s.run(fetch, {"x": x})
        after = peak_mb()
        if name == "Identity":
            assert out.__array_interface__["data"][0] == x.__array_interface__["data"][0]
        rows.append((name, before, after))
        del out
    # For scale, last (the peak only grows): a strided view of the same size is copied once.
    wide = np.ones(2 * n, np.float32)
    strided = wide[::2]
    before = peak_mb()
    out = identity.run("y", {"x": strided})
    rows.append(("Identity, strided feed (copied once)", before, peak_mb()))
    del out
    print("feed: float32[%d] = %.1f MB" % (n, x.nbytes / 1e6))
    print("%-38s %16s %16s %10s" % ("graph", "peak_rss_before", "peak_rss_after", "growth"))
    for name, before, after in rows:
        print("%-38s %13.1f MB %13.1f MB %7.1f MB" % (name, before, after, after - before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
