"""End-to-end tests of `blockflow run --shard` under mpirun, on one machine.

Each case runs a graph once as a single process and then under `mpirun -n P`, and compares
every output file. Usage:

    mpi_run_test.py BLOCKFLOW SAMPLES_DIR MPIRUN CASE

CASE is one of: train_step, seed_ops, uneven, deterministic, failures. Needs NumPy (Debian's
/usr/bin/python3 has it). Open MPI refuses to run as root unless told; CI runs as root in a
container, so the environment allows it here.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BLOCKFLOW, SAMPLES, MPIRUN, CASE = sys.argv[1:5]
TIMEOUT = 60  # seconds per launch: a hang fails the test instead of blocking CI

ENV = dict(os.environ)
ENV.update({
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMP_NUM_THREADS": "1",
    # Containers often lack the shared-memory single-copy mechanism (CMA, ptrace).
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
})
WORK = tempfile.mkdtemp(prefix="bf_mpi_")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(cmd):
    r = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=TIMEOUT + 10)
    return r.returncode, r.stdout, r.stderr


def single(graph, args, out):
    rc, so, se = run([BLOCKFLOW, "run", graph] + args + ["--out", out])
    check(rc == 0, f"single process {graph} {args}: rc {rc}\n{se}")


def sharded(p, graph, args, out):
    cmd = [MPIRUN, "--oversubscribe", "--timeout", str(TIMEOUT), "-n", str(p), BLOCKFLOW, "run",
           graph] + args
    if out:
        cmd += ["--out", out]
    return run(cmd)


def outputs(folder):
    files = {}
    for root, _, names in os.walk(folder):
        for n in names:
            path = os.path.join(root, n)
            files[os.path.relpath(path, folder)] = np.load(path)
    return files


def compare(ref_dir, got_dir, what, bitwise=False):
    ref, got = outputs(ref_dir), outputs(got_dir)
    check(sorted(ref) == sorted(got), f"{what}: files {sorted(got)} != {sorted(ref)}")
    for name in ref:
        if name not in got:
            continue
        a, b = ref[name], got[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            check(False, f"{what}: {name} is {b.dtype}{b.shape}, expected {a.dtype}{a.shape}")
        elif bitwise:
            check(a.tobytes() == b.tobytes(), f"{what}: {name} differs in its bits")
        else:
            scale = max(1.0, float(np.abs(a).max())) if a.size else 1.0
            err = float(np.abs(a.astype(np.float64) - b).max()) if a.size else 0.0
            check(err <= 1e-5 * scale, f"{what}: {name} differs by {err} (scale {scale})")


def write_graph(name, nodes):
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump({"format": "blockflow.graph", "version": 1, "nodes": nodes}, f)
    return path


def placeholder(id_, shape):
    return {"id": id_, "op": "Placeholder", "attrs": {"dtype": "float32", "shape": shape}}


def const_ints(id_, values):
    return {"id": id_, "op": "Const",
            "attrs": {"dtype": "int32", "shape": [len(values)], "value": values}}


def save(name, array):
    path = os.path.join(WORK, name)
    np.save(path, array.astype(np.float32))
    return path


def seed_graphs(batch, rng, tag):
    """The three seed ops over a batch: (graph, feed args, shard args) each."""
    attrs = {"padding": "SAME", "strides": [1, 2, 2, 1]}
    x = save(f"x{tag}.npy", rng.standard_normal((batch, 8, 8, 3)))
    dy4 = save(f"dy4{tag}.npy", rng.standard_normal((batch, 4, 4, 4)))
    dy6 = save(f"dy6{tag}.npy", rng.standard_normal((batch, 4, 4, 6)))
    w = save(f"w{tag}.npy", rng.standard_normal((3, 3, 3, 2)))
    cases = []
    g = write_graph(f"conv2d_backprop_filter{tag}", [
        placeholder("input", [-1, 8, 8, 3]), const_ints("filter_sizes", [3, 3, 3, 4]),
        placeholder("out_backprop", [-1, 4, 4, 4]),
        {"id": "filter_grad", "op": "Conv2DBackpropFilter", "attrs": attrs,
         "inputs": {"input": "input", "filter_sizes": "filter_sizes",
                    "out_backprop": "out_backprop"}}])
    cases.append((g, ["--feed", "input=" + x, "--feed", "out_backprop=" + dy4],
                  ["--shard", "input", "--shard", "out_backprop"]))
    g = write_graph(f"depthwise_backprop_filter{tag}", [
        placeholder("input", [-1, 8, 8, 3]), const_ints("filter_sizes", [3, 3, 3, 2]),
        placeholder("out_backprop", [-1, 4, 4, 6]),
        {"id": "filter_grad", "op": "DepthwiseConv2dNativeBackpropFilter", "attrs": attrs,
         "inputs": {"input": "input", "filter_sizes": "filter_sizes",
                    "out_backprop": "out_backprop"}}])
    cases.append((g, ["--feed", "input=" + x, "--feed", "out_backprop=" + dy6],
                  ["--shard", "input", "--shard", "out_backprop"]))
    # The input gradient's sizes come from the Shape of the split input: each process's own.
    g = write_graph(f"depthwise_backprop_input{tag}", [
        placeholder("x", [-1, 8, 8, 3]),
        {"id": "input_sizes", "op": "Shape", "inputs": {"input": "x"}},
        {"id": "filter", "op": "Const", "attrs": {"dtype": "float32", "file": os.path.basename(w)}},
        placeholder("out_backprop", [-1, 4, 4, 6]),
        {"id": "input_grad", "op": "DepthwiseConv2dNativeBackpropInput", "attrs": attrs,
         "inputs": {"input_sizes": "input_sizes", "filter": "filter",
                    "out_backprop": "out_backprop"}}])
    cases.append((g, ["--feed", "x=" + x, "--feed", "out_backprop=" + dy6, "--fetch",
                      "input_grad"], ["--shard", "x", "--shard", "out_backprop"]))
    return cases


def case_train_step():
    graph = os.path.join(SAMPLES, "mobilenet_block_train_step.json")
    data = os.path.join(SAMPLES, "mobilenet_block_train_step")
    feeds = ["--feed", "x=" + os.path.join(data, "x.npy"),
             "--feed", "target=" + os.path.join(data, "target.npy")]
    fetches = []
    for f in ["err", "dw_pw", "dw_dw", "dx", "step_pw", "step_dw"]:
        fetches += ["--fetch", f]
    ref = os.path.join(WORK, "train_ref")
    single(graph, feeds + fetches, ref)
    # Batch 2: P = 3 and 4 leave ranks without a share.
    for p in (1, 2, 3, 4):
        out = os.path.join(WORK, f"train_p{p}")
        rc, so, se = sharded(p, graph, feeds + fetches + ["--shard", "x", "--shard", "target"], out)
        check(rc == 0, f"train step P={p}: rc {rc}\n{se}")
        check(so.count("dw_pw") == 1, f"train step P={p}: one table, from rank 0\n{so}")
        compare(ref, out, f"train step P={p}")
    # The default fetches include the weight updates, w - lr * (a sum over the batch): refused.
    out = os.path.join(WORK, "train_refused")
    rc, so, se = sharded(2, graph, feeds + ["--shard", "x", "--shard", "target"], out)
    check(rc == 1, f"weight update: refused with exit 1, got {rc}")
    check(se.count("--combine w_pw_new=gather|sum|first") == 1,
          f"weight update: one refusal naming --combine\n{se}")
    check("adds a batch-free value to a sum over the batch" in se, f"the reason\n{se}")
    check(not os.path.exists(out), "weight update: nothing written")


def case_seed_ops():
    rng = np.random.default_rng(15)
    for graph, feeds, shard in seed_graphs(6, rng, "_b6"):
        ref = graph + ".ref"
        single(graph, feeds, ref)
        for p in (1, 2, 3, 4):
            out = graph + f".p{p}"
            rc, so, se = sharded(p, graph, feeds + shard, out)
            check(rc == 0, f"{graph} P={p}: rc {rc}\n{se}")
            compare(ref, out, f"{os.path.basename(graph)} P={p}")


def case_uneven():
    rng = np.random.default_rng(5)
    # Batch 5 over 2, 3, 4 processes; batch 3 over 4 (one rank without a share).
    for batch, ps in ((5, (2, 3, 4)), (3, (4,))):
        for graph, feeds, shard in seed_graphs(batch, rng, f"_b{batch}"):
            ref = graph + ".ref"
            single(graph, feeds, ref)
            for p in ps:
                out = graph + f".p{p}"
                rc, so, se = sharded(p, graph, feeds + shard, out)
                check(rc == 0, f"{graph} P={p}: rc {rc}\n{se}")
                compare(ref, out, f"{os.path.basename(graph)} batch {batch} P={p}")
    # Split along axis 1: strided reads, a gather along axis 1, and Sum over the split axis.
    x = save("x_axis1.npy", rng.standard_normal((3, 7, 4)))
    graph = write_graph("axis1", [
        {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [3, 7, 4]}},
        {"id": "two", "op": "Const", "attrs": {"dtype": "float32", "shape": [], "value": 2}},
        {"id": "y", "op": "Mul", "inputs": {"x": "x", "y": "two"}},
        const_ints("axis", [1]),
        {"id": "s", "op": "Sum", "inputs": {"input": "y", "axis": "axis"}},
        const_ints("perm", [1, 0, 2]),
        {"id": "t", "op": "Transpose", "inputs": {"x": "y", "perm": "perm"}}])
    ref = graph + ".ref"
    feeds = ["--feed", "x=" + x, "--fetch", "y", "--fetch", "s", "--fetch", "t"]
    single(graph, feeds, ref)
    for p in (2, 3, 4):
        out = graph + f".p{p}"
        rc, so, se = sharded(p, graph, feeds + ["--shard", "x:1"], out)
        check(rc == 0, f"axis 1 P={p}: rc {rc}\n{se}")
        compare(ref, out, f"axis 1 P={p}")


def case_deterministic():
    rng = np.random.default_rng(7)
    cases = seed_graphs(4, rng, "_det")
    for graph, feeds, shard in cases[:2]:
        ref = graph + ".ref"
        single(graph, feeds, ref)
        first = None
        for p in (1, 2, 4):
            out = graph + f".det{p}"
            rc, so, se = sharded(p, graph, feeds + shard + ["--deterministic"], out)
            check(rc == 0, f"{graph} --deterministic P={p}: rc {rc}\n{se}")
            compare(ref, out, f"{os.path.basename(graph)} --deterministic P={p}")
            if first is None:
                first = out
            else:
                compare(first, out, f"{os.path.basename(graph)} --deterministic P={p} vs P=1",
                        bitwise=True)


def case_failures():
    rng = np.random.default_rng(9)
    graph, feeds, shard = seed_graphs(4, rng, "_fail")[0]
    out = os.path.join(WORK, "fail_out")
    os.makedirs(out)
    with open(os.path.join(out, "keep.txt"), "w") as f:
        f.write("before")

    def unchanged(what):
        check(sorted(os.listdir(out)) == ["keep.txt"], f"{what}: the output folder changed")

    # A feed missing on one rank only (two commands, one per rank): every rank fails, one message.
    bad = [a.replace("x_fail.npy", "missing.npy") for a in feeds]
    cmd = [MPIRUN, "--oversubscribe", "--timeout", str(TIMEOUT),
           "-n", "1", BLOCKFLOW, "run", graph] + feeds + shard + ["--out", out] + [
           ":", "-n", "1", BLOCKFLOW, "run", graph] + bad + shard + ["--out", out]
    rc, so, se = run(cmd)
    check(rc != 0, "missing feed on rank 1: the job fails")
    check(se.count("error:") == 1 and "missing.npy" in se,
          f"missing feed on rank 1: one message naming the file\n{se}")
    check("rank 1 of 2 failed" in se, f"missing feed: the note names the rank\n{se}")
    unchanged("missing feed on rank 1")

    # The same on every rank: still one message, not P.
    rc, so, se = sharded(3, graph, bad + shard, out)
    check(rc != 0 and se.count("error:") == 1, f"missing feed everywhere: one message\n{se}")
    unchanged("missing feed everywhere")

    # Ranks started on feeds of different batch sizes disagree: refused, no hang, no output.
    other = save("x_other.npy", rng.standard_normal((6, 8, 8, 3)))
    other_dy = save("dy_other.npy", rng.standard_normal((6, 4, 4, 4)))
    odd = ["--feed", "input=" + other, "--feed", "out_backprop=" + other_dy]
    cmd = [MPIRUN, "--oversubscribe", "--timeout", str(TIMEOUT),
           "-n", "1", BLOCKFLOW, "run", graph] + feeds + shard + ["--out", out] + [
           ":", "-n", "1", BLOCKFLOW, "run", graph] + odd + shard + ["--out", out]
    rc, so, se = run(cmd)
    check(rc != 0 and se.count("error:") == 1 and "disagree" in se,
          f"different commands: refused once\n{se}")
    unchanged("different commands")

    # A block that fails on one rank only: rank 1's out_backprop does not fit the filter sizes.
    wrong = save("dy_wrong.npy", rng.standard_normal((4, 4, 4, 5)))
    graph2 = write_graph("fail_block", [
        placeholder("input", [-1, 8, 8, 3]), const_ints("filter_sizes", [3, 3, 3, 4]),
        placeholder("out_backprop", [-1, 4, 4, -1]),
        {"id": "filter_grad", "op": "Conv2DBackpropFilter",
         "attrs": {"padding": "SAME", "strides": [1, 2, 2, 1]},
         "inputs": {"input": "input", "filter_sizes": "filter_sizes",
                    "out_backprop": "out_backprop"}}])
    good = feeds
    badblock = [feeds[0], feeds[1], "--feed", "out_backprop=" + wrong]
    cmd = [MPIRUN, "--oversubscribe", "--timeout", str(TIMEOUT),
           "-n", "1", BLOCKFLOW, "run", graph2] + good + shard + ["--out", out] + [
           ":", "-n", "1", BLOCKFLOW, "run", graph2] + badblock + shard + ["--out", out]
    rc, so, se = run(cmd)
    check(rc != 0 and se.count("error:") == 1, f"a block failing on rank 1: one message\n{se}")
    unchanged("a block failing on rank 1")

    # --shard of a node that is not a Placeholder, and a Placeholder without --feed.
    rc, so, se = sharded(2, graph, feeds + ["--shard", "filter_sizes"], None)
    check(rc == 1 and se.count("only a Placeholder") == 1, f"--shard of a Const\n{se}")
    rc, so, se = sharded(2, graph, feeds[2:] + shard, None)
    check(rc == 1 and "--shard input needs --feed input=FILE.npy" in se, f"no --feed\n{se}")


try:
    {"train_step": case_train_step, "seed_ops": case_seed_ops, "uneven": case_uneven,
     "deterministic": case_deterministic, "failures": case_failures}[CASE]()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
