"""Ctrl-C cancels a long run: KeyboardInterrupt, long before the run would have ended."""

import os
import signal
import threading
import time

import pytest

import blockflow
from long_graph import conv_chain, seconds_per_layer

LAYERS = 150


@pytest.fixture(scope="module")
def long_run():
    """A session of a run of several seconds, its feeds, and that run's estimated length."""
    g, feeds = conv_chain(LAYERS)
    session = blockflow.Session(g, threads=1)
    return session, feeds, LAYERS * seconds_per_layer(threads=1)


@pytest.mark.parametrize(
    "send",
    [
        lambda: signal.raise_signal(signal.SIGINT),  # from a timer thread
        lambda: os.kill(os.getpid(), signal.SIGINT),  # as `kill -INT` or a terminal's Ctrl-C
    ],
    ids=["raise_signal", "kill"],
)
def test_sigint_cancels_a_long_run(long_run, send):
    session, feeds, full = long_run
    assert full > 1.0, "the run is too short to tell a cancelled one from a finished one"
    timer = threading.Timer(0.3, send)
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        session.run("out", feeds)
    elapsed = time.perf_counter() - t0
    timer.join()
    assert elapsed < 0.5 * full, "cancelled after %.2f s of a %.2f s run" % (elapsed, full)
    # The session still runs afterwards (a short graph, to keep the test quick).
    g, small_feeds = conv_chain(1)
    assert blockflow.Session(g).run("out", small_feeds).shape == (1, 192, 192, 64)


def test_a_program_handler_that_does_not_raise_still_stops_the_run(long_run):
    session, feeds, full = long_run
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signo, frame: seen.append(signo))
    try:
        timer = threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT))
        t0 = time.perf_counter()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            session.run("out", feeds)
        elapsed = time.perf_counter() - t0
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]  # the program's own handler ran too
    assert elapsed < 0.5 * full


def test_sigint_handler_is_restored_after_runs():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    g, feeds = conv_chain(1)
    blockflow.Session(g).run("out", feeds)
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)  # Python's handler again, not the run's
