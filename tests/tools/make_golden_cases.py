#!/usr/bin/env python3
"""Writes seeded random convolution cases in the golden-case format (case.json + .npy files).

    /usr/bin/python3 tests/tools/make_golden_cases.py OUT_DIR [--count N] [--seed S]

The expected outputs are computed here, in float64 with NumPy, straight from the definitions
(forward convolution; its gradients as explicit scatter/gather sums), independently of the C++
kernels, and rounded once to the case's dtype. float16 and bfloat16 inputs are multiples of
1/128 and 1/64 so that a float32 accumulation is exact and the result must match bit for bit.
Negative cases break one rule each and must be rejected."""
import argparse
import json
import os

import numpy as np

OPS = ["Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter",
       "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
       "DepthwiseConv2dNativeBackpropFilter"]
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10), "float16": (2e-3, 1e-3),
       "bfloat16": (1.6e-2, 1e-2)}


def geometry(size, k, s, d, padding, pads):
    eff = (k - 1) * d + 1
    if padding == "VALID":
        return (size - eff) // s + 1, 0, 0
    if padding == "SAME":
        out = -(-size // s)
        total = max((out - 1) * s + eff - size, 0)
        return out, total // 2, total - total // 2
    before, after = pads
    return (size + before + after - eff) // s + 1, before, after


def forward(x, w, strides, dil, pads, out_hw, depthwise):
    """x NHWC float64, w [kh,kw,ci,co] (or [kh,kw,C,M]) → y NHWC."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    oh, ow = out_hw
    (pt, _), (pl, _) = pads
    if depthwise:
        m = w.shape[3]
        y = np.zeros((n, oh, ow, c * m))
    else:
        cin_g, cout = w.shape[2], w.shape[3]
        groups = c // cin_g
        y = np.zeros((n, oh, ow, cout))
    for i in range(kh):
        for j in range(kw):
            rows = np.arange(oh) * strides[0] - pt + i * dil[0]
            cols = np.arange(ow) * strides[1] - pl + j * dil[1]
            rv = (rows >= 0) & (rows < h)
            cv = (cols >= 0) & (cols < wd)
            patch = np.zeros((n, oh, ow, c))
            patch[:, rv[:, None] & cv[None, :]] = x[:, rows[rv]][:, :, cols[cv]].reshape(n, int(rv.sum() * cv.sum()), c)
            if depthwise:
                y += (patch[..., :, None] * w[i, j][None, None, None]).reshape(n, oh, ow, c * m)
            else:
                for g in range(groups):
                    per = cout // groups
                    y[..., g * per:(g + 1) * per] += patch[..., g * cin_g:(g + 1) * cin_g] @ w[i, j][:, g * per:(g + 1) * per]
    return y


def linear_map(fn, shape):
    """The matrix of a linear function of one array (small shapes only), by unit vectors."""
    size = int(np.prod(shape))
    cols = []
    for k in range(size):
        e = np.zeros(size)
        e[k] = 1
        cols.append(fn(e.reshape(shape)).ravel())
    return np.stack(cols, axis=1) if cols else None


def quantize(a, dtype, rng):
    if dtype == "float16":
        return np.round(a * 64) / 128
    if dtype == "bfloat16":
        return np.round(a * 32) / 64
    return a


def to_storage(a, dtype):
    if dtype == "float32":
        return a.astype(np.float32)
    if dtype == "float64":
        return a.astype(np.float64)
    if dtype == "float16":
        return a.astype(np.float16)
    f = a.astype(np.float32)  # exact for the bfloat16 inputs and the exact float32 sums
    bits = f.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def nchw(a):
    return np.transpose(a, (0, 3, 1, 2))


def make_case(rng, index, op, negative):
    depthwise = op.startswith("Depthwise")
    dtype = str(rng.choice(["float32", "float64", "float16", "bfloat16"], p=[0.4, 0.2, 0.2, 0.2]))
    fmt = str(rng.choice(["NHWC", "NCHW"]))
    padding = str(rng.choice(["SAME", "VALID", "EXPLICIT"]))
    n = int(rng.choice([0, 1, 2], p=[0.05, 0.6, 0.35]))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    h, wd = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(2)]
    if depthwise:
        c, m = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        wshape = (kh, kw, c, m)
        groups = 1
    else:
        groups = int(rng.choice([1, 1, 2]))
        cin_g, cout = int(rng.integers(1, 4)), groups * int(rng.integers(1, 3))
        c = cin_g * groups
        wshape = (kh, kw, cin_g, cout)
    padding_arg = padding
    oh, pt, pb = geometry(h, kh, sh, dh, padding, pads[0])
    ow, pl, pr = geometry(wd, kw, sw, dw, padding, pads[1])
    if oh <= 0 or ow <= 0:
        return None
    xshape = (n, h, wd, c)
    cout_total = c * wshape[3] if depthwise else wshape[3]
    yshape = (n, oh, ow, cout_total)

    def rand(shape):
        return quantize(rng.uniform(-1, 1, size=shape), dtype, rng)

    x, w, dy = rand(xshape), rand(wshape), rand(yshape)
    geo = ((pt, pb), (pl, pr))
    fwd = lambda xx, ww: forward(xx, ww, (sh, sw), (dh, dw), geo, (oh, ow), depthwise)
    if op in ("Conv2D", "DepthwiseConv2dNative"):
        expected = fwd(x, w)
    elif op.endswith("BackpropInput"):
        # dx = J_x^T dy, with J_x the matrix of x ↦ conv(x, w).
        if n == 0:
            expected = np.zeros(xshape)
        else:
            jac = linear_map(lambda xx: fwd(xx, w), xshape)
            expected = (jac.T @ dy.ravel()).reshape(xshape)
    else:
        jac = linear_map(lambda ww: fwd(x, ww), wshape)
        expected = (jac.T @ dy.ravel()).reshape(wshape) if n > 0 else np.zeros(wshape)

    def fmt_list(nhwc_list):
        return [nhwc_list[0], nhwc_list[3], nhwc_list[1], nhwc_list[2]] if fmt == "NCHW" else nhwc_list

    attrs = {"strides": fmt_list([1, sh, sw, 1]), "padding": padding_arg, "data_format": fmt,
             "dilations": fmt_list([1, dh, dw, 1])}
    if padding == "EXPLICIT":
        flat = [[0, 0], list(pads[0]), list(pads[1]), [0, 0]]
        flat = [flat[0], flat[3], flat[1], flat[2]] if fmt == "NCHW" else flat
        attrs["explicit_paddings"] = [v for pair in flat for v in pair]
    lay = (lambda a: nchw(a)) if fmt == "NCHW" else (lambda a: a)
    x_l, dy_l, exp_l = lay(x), lay(dy), expected
    if op in ("Conv2D", "DepthwiseConv2dNative") or op.endswith("BackpropInput"):
        exp_l = lay(expected)
    xs = list(x_l.shape)
    inputs = []
    why = None
    if op in ("Conv2D", "DepthwiseConv2dNative"):
        inputs = [("input", x_l), ("filter", w)]
    elif op.endswith("BackpropInput"):
        sizes = xs
        if op == "Conv2DBackpropInput" and groups == 1 and rng.random() < 0.2:
            sizes = [h, wd]
        inputs = [("input_sizes", np.array(sizes, np.int32)), ("filter", w), ("out_backprop", dy_l)]
    else:
        inputs = [("input", x_l), ("filter_sizes", np.array(list(wshape), np.int32)), ("out_backprop", dy_l)]

    if negative:
        kind = int(rng.integers(0, 6))
        if kind == 0:
            attrs["strides"] = [2] + attrs["strides"][1:]
            why = "batch stride must be 1"
        elif kind == 1:
            attrs["dilations"] = attrs["dilations"][:3]
            why = "dilations must have 4 values"
        elif kind == 2:
            attrs["strides"] = [1, 0, 1, 1] if fmt == "NHWC" else [1, 1, 0, 1]
            why = "strides must be positive"
        elif kind == 3 and op.endswith("Backprop" + op.split("Backprop")[-1]) and "Backprop" in op:
            name, arr = inputs[2]
            bad = list(arr.shape)
            bad[1 if fmt == "NCHW" else 3] += 1
            inputs[2] = (name, rand(tuple(bad)))
            why = "out_backprop depth must equal the forward output depth"
        elif kind == 4:
            attrs["padding"] = "EXPLICIT"
            attrs["explicit_paddings"] = [1, 0, 0, 0, 0, 0, 0, 0]
            why = "batch padding must be 0"
        else:
            attrs["data_format"] = "NCWH"
            why = "data_format must be NHWC or NCHW"
        if why is None:
            return None

    name = f"rand_{index:03d}_{op}_{fmt}_{padding}_{dtype}" + ("_neg" if negative else "")
    return {"name": name, "op": op, "dtype": dtype, "data_format": fmt, "attrs": attrs,
            "inputs": inputs, "expected": None if negative else to_storage(exp_l, dtype),
            "why": why}


def write_case(root, case):
    d = os.path.join(root, case["name"])
    os.makedirs(d, exist_ok=True)
    entries = []
    for port, arr in case["inputs"]:
        dt = "int32" if arr.dtype == np.int32 else case["dtype"]
        stored = arr if dt == "int32" else to_storage(arr, case["dtype"])
        np.save(os.path.join(d, port + ".npy"), np.ascontiguousarray(stored))
        e = {"port": port, "file": port + ".npy", "dtype": dt, "shape": list(arr.shape)}
        if dt == "int32":
            e["value"] = [int(v) for v in arr]
        entries.append(e)
    out = None
    if case["expected"] is not None:
        np.save(os.path.join(d, "expected.npy"), np.ascontiguousarray(case["expected"]))
        out = {"port": "output", "file": "expected.npy", "dtype": case["dtype"],
               "shape": list(case["expected"].shape)}
    rtol, atol = TOL[case["dtype"]]
    meta = {"name": case["name"], "op": case["op"], "dtype": case["dtype"],
            "data_format": case["data_format"], "attrs": case["attrs"], "inputs": entries,
            "output": out, "expect_error": case["expected"] is None,
            "tolerance": {"rtol": rtol, "atol": atol}}
    if case["why"]:
        meta["why"] = case["why"]
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=20, help="positive cases per op")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    index = 0
    for op in OPS:
        made = 0
        while made < args.count:
            case = make_case(rng, index, op, negative=False)
            if case:
                write_case(args.out, case)
                made += 1
                index += 1
        negatives = 0
        while negatives < max(1, args.count // 5):
            case = make_case(rng, index, op, negative=True)
            if case:
                write_case(args.out, case)
                negatives += 1
                index += 1
    print(f"wrote {index} cases to {args.out}")


if __name__ == "__main__":
    main()
