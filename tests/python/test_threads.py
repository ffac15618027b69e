"""The GIL is released while a graph runs: two Python threads run two sessions at once, and
Python code runs beside a run."""

import threading
import time

import blockflow
from long_graph import conv_chain, seconds_per_layer


def test_two_threads_run_two_sessions_at_once():
    layers = max(4, int(0.6 / seconds_per_layer(threads=1)))
    g, feeds = conv_chain(layers)
    sessions = [blockflow.Session(g, threads=1), blockflow.Session(g, threads=1)]
    for s in sessions:
        s.run("out", feeds)  # plans made, buffers pooled
    barrier = threading.Barrier(2)
    spans = [None, None]
    results = [None, None]

    def work(i):
        barrier.wait()
        results[i], start, end = sessions[i]._run_timed("out", feeds)
        spans[i] = (start, end)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The spans are taken inside run, around the C++ Session::Run: holding the GIL, the two
    # runs could not overlap at all (stamps taken in Python around the calls could, a thread
    # stamping its start and then waiting for the GIL). Released, they run side by side for
    # most of their length, sharing two cores or, on a busy machine, one.
    (a0, a1), (b0, b1) = spans
    overlap = min(a1, b1) - max(a0, b0)
    shorter = min(a1 - a0, b1 - b0)
    assert overlap > 0.25 * shorter, "runs %s overlap by %.3f s" % (spans, overlap)
    assert results[0].tobytes() == results[1].tobytes()


def test_python_threads_run_during_a_run():
    layers = max(4, int(0.8 / seconds_per_layer(threads=1)))
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
        # The spinner's rate alone (the main thread sleeping, not holding the GIL).
        before = count[0]
        time.sleep(0.2)
        rate = (count[0] - before) / 0.2
        before = count[0]
        t0 = time.perf_counter()
        session.run("out", feeds)
        elapsed = time.perf_counter() - t0
        during = count[0] - before
    finally:
        stop.set()
        spinner.join()
    # Holding the GIL, the run would let the spinner in only around its start and end (a few
    # ms of a run of most of a second); released, the spinner runs throughout, at its own pace
    # or, on a busy machine, a fair share of it.
    assert during > 0.25 * rate * elapsed, "%d increments in %.2f s, %.0f/s alone" % (
        during, elapsed, rate)
