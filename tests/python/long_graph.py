"""A graph that runs long enough to interrupt or overlap: a chain of 3x3 convolutions."""

import time

import numpy as np

import blockflow


def conv_chain(layers, size=192, channels=64):
    """A Session over `layers` chained SAME 3x3 Conv2D layers on a [1, size, size, channels]
    float32 input `x`; fetch "out". Returns (session, feeds)."""
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", "float32", [1, size, size, channels])
    w = (np.random.default_rng(0).standard_normal((3, 3, channels, channels)) * 0.05).astype(
        np.float32
    )
    w = g.constant(w, name="w")  # one Const that every layer reads
    y = x
    for i in range(layers):
        y = g.Conv2D(y, w, strides=[1, 1, 1, 1], padding="SAME", name="conv%d" % i)
    g.Identity(y, name="out")
    feeds = {"x": np.ones((1, size, size, channels), np.float32)}
    return g, feeds


def seconds_per_layer(threads=None):
    """The median time of one layer on this machine (after a warm-up run)."""
    g, feeds = conv_chain(4)
    session = blockflow.Session(g, threads=threads)
    session.run("out", feeds)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        session.run("out", feeds)
        times.append((time.perf_counter() - t0) / 4)
    return sorted(times)[1]
