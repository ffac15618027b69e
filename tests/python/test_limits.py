"""Session(graph, memory_limit=...): tensors above the limit are refused before allocation."""

import json

import numpy as np
import pytest

import blockflow


def write_graph(path, nodes):
    path.write_text(json.dumps({"format": "blockflow.graph", "version": 1, "nodes": nodes}))
    return path


def random_graph(tmp_path, dims):
    return blockflow.Graph.load(
        str(
            write_graph(
                tmp_path / "g.json",
                [
                    {"id": "shape", "op": "Const",
                     "attrs": {"dtype": "int64", "shape": [len(dims)], "value": dims}},
                    {"id": "r", "op": "RandomUniform", "inputs": {"shape": "shape"}},
                ],
            )
        )
    )


def test_an_output_above_the_limit_is_an_invalid_graph(tmp_path):
    g = random_graph(tmp_path, [1024, 1024])
    with pytest.raises(blockflow.InvalidGraph) as e:
        blockflow.Session(g, memory_limit="1M")
    assert (
        "node 'r' (RandomUniform): output 0 ('output') is float32[1024,1024] (4.0 MiB), "
        "more than the memory limit of 1.0 MiB" in str(e.value)
    )
    assert "memory_limit=BYTES" in str(e.value)
    out = blockflow.Session(g, memory_limit=4 << 20).run("r")
    assert out.shape == (1024, 1024)


def test_the_default_is_half_of_memory(tmp_path):
    g = random_graph(tmp_path, [1 << 20, 1 << 20])
    with pytest.raises(blockflow.InvalidGraph) as e:
        blockflow.Session(g)
    assert "(4.0 TiB), more than the memory limit of " in str(e.value)
    assert "(half of this machine's " in str(e.value)


def test_a_feed_above_the_limit_is_refused(tmp_path):
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", "float32", [-1, 1024])
    y = g.Add(x, x)
    session = blockflow.Session(g, memory_limit="2M")
    assert session.run(y, feeds={x: np.ones((128, 1024), np.float32)}).shape == (128, 1024)
    with pytest.raises(blockflow.Error) as e:
        session.run(y, feeds={x: np.ones((1024, 1024), np.float32)})
    assert "more than the memory limit of 2.0 MiB" in str(e.value)


def test_bad_limits(tmp_path):
    g = random_graph(tmp_path, [4])
    with pytest.raises(ValueError, match="memory_limit: '12Q' is not a byte count"):
        blockflow.Session(g, memory_limit="12Q")
    with pytest.raises(ValueError, match="more than zero"):
        blockflow.Session(g, memory_limit=0)
    with pytest.raises(TypeError, match="memory_limit must be None"):
        blockflow.Session(g, memory_limit=1.5)


def test_a_fed_size_above_the_limit_is_refused_before_the_kernel(tmp_path):
    # Fill's size is known once `dims` is fed: analysis refuses it, no kernel runs.
    g = blockflow.GraphBuilder()
    d = g.placeholder("d", "int32", [3])
    f = g.Fill(d, g.constant(1.0, "float32"))
    with pytest.raises(blockflow.InvalidFeed) as e:
        blockflow.Session(g).run(f, {d: np.array([100000, 100000, 1000], np.int32)})
    assert "is float32[100000,100000,1000] (36.4 TiB), more than the memory limit" in str(e.value)
