"""The exception classes, and the CLI's words in their messages."""

import json
import subprocess

import numpy as np
import pytest

import blockflow


def cli_errors(binary, *args):
    """The `blockflow` program's error lines, without their leading 'error: '."""
    done = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    return "\n".join(
        line[len("error: "):] for line in done.stderr.splitlines() if line.startswith("error: ")
    )


def write_graph(path, nodes):
    path.write_text(json.dumps({"format": "blockflow.graph", "version": 1, "nodes": nodes}))
    return path


def test_the_hierarchy():
    for cls in (blockflow.InvalidGraph, blockflow.InvalidFeed, blockflow.InvalidFetch):
        assert issubclass(cls, blockflow.Error) and issubclass(cls, ValueError)
    assert issubclass(blockflow.KernelError, blockflow.Error)
    assert issubclass(blockflow.KernelError, RuntimeError)
    assert issubclass(blockflow.Error, Exception)
    assert blockflow.InvalidGraph.__module__ == "blockflow"
    assert blockflow.Session.__module__ == "blockflow"


def test_invalid_graph_file_has_the_cli_text(tmp_path, binary):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "blockflow.graph", "version": 1, "nodes": [}')
    with pytest.raises(blockflow.InvalidGraph) as e:
        blockflow.Graph.load(str(bad))
    assert str(e.value) == cli_errors(binary, "run", bad)
    with pytest.raises(blockflow.InvalidGraph, match="cannot read"):
        blockflow.Graph.load(str(tmp_path / "missing.json"))


def test_invalid_graph_lists_every_problem_as_the_cli(tmp_path, binary):
    path = write_graph(tmp_path / "g.json", [
        {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [1, 8, 8, 2]}},
        {"id": "c1", "op": "Conv2D", "inputs": {"input": "x", "filter": "x"},
         "attrs": {"strides": [1, 1, 1], "padding": "SAME"}},
        {"id": "c2", "op": "Bogus"},
    ])
    graph = blockflow.Graph.load(str(path))
    issues = graph.validate()
    assert {(i.node, i.op) for i in issues} >= {("c1", "Conv2D"), ("c2", "Bogus")}
    assert all(i.message for i in issues)
    with pytest.raises(blockflow.InvalidGraph) as e:
        blockflow.Session(graph)
    assert str(e.value) == cli_errors(binary, "run", path, "--feed", "x=none.npy")
    assert len(str(e.value).splitlines()) == len(issues) >= 2


def test_invalid_feeds(tmp_path):
    path = write_graph(tmp_path / "g.json", [
        {"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2, 3]}},
        {"id": "y", "op": "Identity", "inputs": {"input": "x"}},
    ])
    session = blockflow.Session(blockflow.Graph.load(str(path)))
    good = np.zeros((2, 3), np.float32)
    cases = [
        ({"x": np.zeros((2, 4), np.float32)},
         "g.json: node 'x' (Placeholder): fed shape [2,4] does not match shape [2,3]"),
        ({"x": good.astype(np.float64)},
         "g.json: node 'x' (Placeholder): fed a float64 tensor, but dtype is float32"),
        ({}, "g.json: node 'x' (Placeholder): needs a value"),
        ({"x": good, "nope": good}, "cannot feed 'nope': there is no node 'nope'"),
        ({"x": good, "y": good}, "node 'y' (Identity): cannot be fed"),
        ({"x": good.astype(np.uint8)}, "node 'x' (Placeholder): a uint8 array has no blockflow dtype"),
    ]
    for feeds, text in cases:
        with pytest.raises(blockflow.InvalidFeed) as e:
            session.run("y", feeds)
        assert text in str(e.value), str(e.value)
    assert session.run("y", {"x": good}).shape == (2, 3)  # the session still works


def test_invalid_fetches(tmp_path):
    g = blockflow.GraphBuilder()
    g.constant([1.0, 2.0], name="c")
    session = blockflow.Session(g)
    with pytest.raises(blockflow.InvalidFetch, match="there is no node 'nope'"):
        session.run("nope")
    with pytest.raises(blockflow.InvalidFetch, match="'c' has 1 output"):
        session.run("c:3")
    with pytest.raises(TypeError):
        session.run(3)


def test_kernel_error_has_the_cli_text(tmp_path, binary):
    # Fill's output size is known only once `dims` is fed; its kernel cannot allocate it. (The
    # memory limit would refuse it first, at analysis; raised past the size, the kernel fails.)
    path = write_graph(tmp_path / "fill.json", [
        {"id": "d", "op": "Placeholder", "attrs": {"dtype": "int32", "shape": [3]}},
        {"id": "v", "op": "Const", "attrs": {"dtype": "float32", "shape": [], "value": 1}},
        {"id": "f", "op": "Fill", "inputs": {"dims": "d", "value": "v"}},
    ])
    dims = np.array([100000, 100000, 1000], np.int32)
    np.save(tmp_path / "d.npy", dims)
    session = blockflow.Session(blockflow.Graph.load(str(path)), memory_limit="100000G")
    with pytest.raises(blockflow.KernelError) as e:
        session.run("f", {"d": dims})
    assert str(e.value) == cli_errors(
        binary, "run", path, "--feed", "d=%s" % (tmp_path / "d.npy"), "--memory-limit", "100000G"
    )
    assert "node 'f' (Fill): cannot allocate" in str(e.value)


def test_save_failure_is_an_error(tmp_path):
    g = blockflow.GraphBuilder()
    g.constant([1], name="c")
    g.save(str(tmp_path / "new" / "dir" / "g.json"))  # missing folders are made
    assert (tmp_path / "new" / "dir" / "g.json").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(blockflow.Error, match="file"):
        g.save(str(tmp_path / "file" / "g.json"))  # a folder that is a file


def test_files_outside_the_graph_folder_are_refused_unless_allowed(tmp_path, binary):
    np.save(tmp_path / "secret.npy", np.arange(3, dtype=np.float32))
    (tmp_path / "g").mkdir()
    path = write_graph(tmp_path / "g" / "g.json", [
        {"id": "w", "op": "Const", "attrs": {"dtype": "float32", "file": "../secret.npy"}},
    ])
    graph = blockflow.Graph.load(str(path))
    [issue] = graph.validate()
    assert (issue.node, issue.op) == ("w", "Const")
    assert "outside the graph's folder" in issue.message
    with pytest.raises(blockflow.InvalidGraph) as e:
        blockflow.Session(graph)
    assert str(e.value) == cli_errors(binary, "run", path)
    allowed = blockflow.Graph.load(str(path), allow_outside_files=True)
    assert allowed.validate() == []
    np.testing.assert_array_equal(blockflow.Session(allowed).run("w"), [0, 1, 2])
