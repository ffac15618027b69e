"""The GIL is released while a graph runs: two Python threads run two sessions at once, and
Python code runs beside a run."""

import threading
import time

import blockflow
from long_graph import conv_chain, seconds_per_layer


def test_two_threads_run_two_sessions_at_once():
    layers = max(4, int(0.8 / seconds_per_layer(threads=1)))
    g, feeds = conv_chain(layers)
    sessions = [blockflow.Session(g, threads=1), blockflow.Session(g, threads=1)]
    for s in sessions:
        s.run("out", feeds)  # plans made, buffers pooled
    barrier = threading.Barrier(2)
    spans = [None, None]
    results = [None, None]

    def work(i):
        barrier.wait()
        t0 = time.perf_counter()
        results[i] = sessions[i].run("out", feeds)
        spans[i] = (t0, time.perf_counter())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans
    overlap = min(a1, b1) - max(a0, b0)
    shorter = min(a1 - a0, b1 - b0)
    # Holding the GIL would serialise the runs: they would overlap by a few microseconds at
    # most (one thread's stamp taken before the other's run began). Released, they run side by
    # side for most of their length, however busy the machine.
    assert overlap > 0.5 * shorter, "runs %s overlap by %.3f s" % (spans, overlap)
    assert results[0].tobytes() == results[1].tobytes()


def test_python_threads_run_during_a_run():
    layers = max(4, int(0.5 / seconds_per_layer(threads=1)))
    g, feeds = conv_chain(layers)
    session = blockflow.Session(g, threads=1)
    session.run("out", feeds)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.05)
        before = count[0]
        t0 = time.perf_counter()
        session.run("out", feeds)
        elapsed = time.perf_counter() - t0
        during = count[0] - before
    finally:
        stop.set()
        spinner.join()
    # A thread holding the GIL lets others in only when it runs Python code; during a run
    # with the GIL held `during` would stay near zero.
    assert during > 1000, "%d increments during a %.2f s run" % (during, elapsed)
