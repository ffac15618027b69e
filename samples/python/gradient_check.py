#!/usr/bin/env python3
"""Gradient check of a depthwise convolution layer, built and run from Python.

Builds forward (DepthwiseConv2dNative) and both gradients (...BackpropInput, ...BackpropFilter)
with blockflow.GraphBuilder, runs them in float64 on random data, and checks in NumPy:
  - the adjoint identity  <conv(x, w), dy> = <x, dx> = <w, dw>;
  - finite differences: L(x, w) = <conv(x, w), dy> has gradients dx and dw, so a central
    difference of L along any element of x or w equals that element of dx or dw.
Prints a pass/fail table; the exit status is 1 when a check fails.

    PYTHONPATH=build/python /usr/bin/python3 samples/python/gradient_check.py
"""

import sys

import numpy as np

import blockflow

# (name, input shape NHWC, filter [fh, fw, in, multiplier], strides, padding, dilations)
CASES = [
    ("3x3 s1 SAME", (2, 9, 9, 3), (3, 3, 3, 2), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    ("3x3 s2 SAME", (1, 10, 11, 4), (3, 3, 4, 1), [1, 2, 2, 1], "SAME", [1, 1, 1, 1]),
    ("5x3 s(2,1) VALID", (2, 12, 9, 2), (5, 3, 2, 3), [1, 2, 1, 1], "VALID", [1, 1, 1, 1]),
    ("3x3 dilated 2", (1, 11, 11, 3), (3, 3, 3, 1), [1, 1, 1, 1], "SAME", [1, 2, 2, 1]),
]


def build(x_shape, w_shape, strides, padding, dilations):
    """The layer and its two gradients, fed x, w and dy; returns the builder and fetches."""
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", "float64", x_shape)
    w = g.placeholder("w", "float64", w_shape)
    attrs = dict(strides=strides, padding=padding, dilations=dilations)
    y = g.DepthwiseConv2dNative(x, w, name="y", **attrs)
    dy = g.placeholder("dy", "float64", y.shape)
    dx = g.DepthwiseConv2dNativeBackpropInput(
        input_sizes=list(x_shape), filter=w, out_backprop=dy, name="dx", **attrs
    )
    dw = g.DepthwiseConv2dNativeBackpropFilter(
        input=x, filter_sizes=list(w_shape), out_backprop=dy, name="dw", **attrs
    )
    return g, y, dx, dw


def check(name, x_shape, w_shape, strides, padding, dilations, rng):
    """Rows of (case, check, value, reference, scale, tolerance): passes when
    |value - reference| / scale <= tolerance."""
    g, y_out, dx_out, dw_out = build(x_shape, w_shape, strides, padding, dilations)
    session = blockflow.Session(g)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    dy = rng.standard_normal(y_out.shape)
    y, dx, dw = session.run([y_out, dx_out, dw_out], feeds={"x": x, "w": w, "dy": dy})

    def loss(xv, wv):
        return float(np.vdot(session.run(y_out, feeds={"x": xv, "w": wv}), dy))

    rows = []
    forward = float(np.vdot(y, dy))
    scale = np.abs(y * dy).sum()  # the size of the terms, for a relative error
    rows.append((name, "<x, dx> = <y, dy>", float(np.vdot(x, dx)), forward, scale, 1e-12))
    rows.append((name, "<w, dw> = <y, dy>", float(np.vdot(w, dw)), forward, scale, 1e-12))
    # L is linear in x and in w, so central differences are exact up to rounding.
    h = 1e-3
    for label, value, grad, at in (("x", x, dx, 0), ("w", w, dw, 1)):
        for _ in range(3):
            index = tuple(int(rng.integers(0, n)) for n in value.shape)
            plus, minus = value.copy(), value.copy()
            plus[index] += h
            minus[index] -= h
            args_p = (plus, w) if at == 0 else (x, plus)
            args_m = (minus, w) if at == 0 else (x, minus)
            fd = (loss(*args_p) - loss(*args_m)) / (2 * h)
            reference = float(grad[index])
            rows.append((name, "dL/d%s%s by difference" % (label, list(index)), fd, reference,
                         max(1.0, abs(reference)), 1e-7))
    return rows


def main():
    rng = np.random.default_rng(2024)
    rows = []
    for case in CASES:
        rows += check(*case, rng)
    failed = 0
    print("%-18s %-32s %16s %16s %9s %s" % ("case", "check", "value", "reference", "rel.err", ""))
    for name, what, value, reference, scale, tol in rows:
        err = abs(value - reference) / scale
        ok = err <= tol
        failed += not ok
        print("%-18s %-32s %16.9g %16.9g %9.1e %s" % (name, what, value, reference, err,
                                                     "pass" if ok else "FAIL"))
    print("%d checks, %d failed" % (len(rows), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
