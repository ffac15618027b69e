"""GraphBuilder: one generated method per registered op, checked at once, runnable and
savable."""

import inspect

import numpy as np
import pytest

import blockflow


def test_every_registered_op_has_a_builder_method_named_as_it():
    catalog = blockflow.ops()
    assert {op["name"] for op in catalog} >= {
        "Conv2D",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropFilter",
        "DepthwiseConv2dNativeBackpropInput",
        "Const",
        "Placeholder",
    }
    for op in catalog:
        method = getattr(blockflow.GraphBuilder, op["name"], None)
        assert callable(method), op["name"]
        params = inspect.signature(method).parameters
        names = [p["name"] for p in op["inputs"]] + [a["name"] for a in op["attrs"]]
        assert list(params)[1 : 1 + len(names)] == names, op["name"]
        for a in op["attrs"]:
            p = params[a["name"]]
            assert p.kind == p.KEYWORD_ONLY
            assert (p.default is p.empty) == a["required"], (op["name"], a["name"])
        assert op["doc"] in method.__doc__
        for p in op["inputs"]:
            assert p["doc"] in method.__doc__


def test_ops_returns_the_catalogue_as_dicts():
    op = next(o for o in blockflow.ops() if o["name"] == "DepthwiseConv2dNativeBackpropInput")
    assert [p["name"] for p in op["inputs"]] == ["input_sizes", "filter", "out_backprop"]
    padding = next(a for a in op["attrs"] if a["name"] == "padding")
    assert padding["required"] and "SAME" in padding["allowed"]


def test_the_issue_example_builds_runs_and_saves(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 2, 1)).astype(np.float32)
    g = blockflow.GraphBuilder()
    dy = g.placeholder("dy", "float32", [1, 4, 4, 2])
    dx = g.DepthwiseConv2dNativeBackpropInput(
        input_sizes=[1, 8, 8, 2], filter=w, out_backprop=dy, strides=[1, 2, 2, 1], padding="SAME"
    )
    assert dx.dtype == "float32" and dx.shape == (1, 8, 8, 2)
    nodes = {n["id"]: n for n in g.graph.nodes}
    sizes = nodes[dx.node + "/input_sizes"]
    assert sizes["op"] == "Const" and sizes["attrs"]["dtype"] == "int32"
    assert nodes[dx.node + "/filter"]["attrs"]["dtype"] == "float32"
    dy_value = rng.standard_normal((1, 4, 4, 2)).astype(np.float32)
    first = blockflow.Session(g).run(dx, feeds={dy: dy_value})
    assert first.shape == (1, 8, 8, 2)

    path = tmp_path / "built.json"
    g.save(str(path))
    loaded = blockflow.Graph.load(str(path))
    assert loaded.path == str(path)
    again = blockflow.Session(loaded).run(dx.name, feeds={"dy": dy_value})
    assert again.tobytes() == first.tobytes()
    # Saved canonically: saving the loaded graph gives the same bytes.
    path2 = tmp_path / "again.json"
    loaded.save(str(path2))
    assert path2.read_bytes() == path.read_bytes()


def test_positional_inputs_names_and_name_scopes():
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", np.float64, [2, 2])
    with g.name_scope("layer"):
        y = g.Mul(x, x, name="sq")
        z = g.Add(y, [[1, 1], [1, 1]])
    assert y.node == "layer/sq" and z.node == "layer/Add"
    assert {n["id"] for n in g.graph.nodes} == {"x", "layer/sq", "layer/Add", "layer/Add/y"}
    # The list became a Const of the other input's dtype (TensorFlow's T).
    const = next(n for n in g.graph.nodes if n["id"] == "layer/Add/y")
    assert const["attrs"]["dtype"] == "float64"
    out = blockflow.Session(g).run(z, {x: np.full((2, 2), 3.0)})
    assert out.tolist() == [[10, 10], [10, 10]]


def test_an_invalid_node_raises_at_once_and_leaves_the_graph_as_it_was():
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", "float32", [1, 8, 8, 2])
    before = g.graph.to_json()
    with pytest.raises(blockflow.InvalidGraph, match=r"node 'bad' \(Conv2D\): strides"):
        g.Conv2D(x, np.ones((3, 3, 2, 4), np.float32), strides=[1, 1, 1], padding="SAME",
                 name="bad")
    assert g.graph.to_json() == before
    with pytest.raises(TypeError):
        g.Conv2D(x, np.ones((3, 3, 2, 4), np.float32), padding="SAME")  # strides is required
    with pytest.raises(TypeError):
        g.Conv2D(x, np.ones((3, 3, 2, 4), np.float32), strides=[1] * 4, padding="SAME", bogus=1)
    with pytest.raises(blockflow.InvalidGraph, match="already taken"):
        g.placeholder("x", "float32", [1])
    assert g.graph.to_json() == before


def test_multi_output_ops_return_tuples():
    g = blockflow.GraphBuilder()
    a = g.placeholder("a", "float32", [2, 3])
    b = g.placeholder("b", "float32", [4])
    outs = g.ShapeN([a, b], name="shapes")
    assert isinstance(outs, tuple) and [o.name for o in outs] == ["shapes", "shapes:1"]
    s0, s1 = blockflow.Session(g).run(list(outs), {a: np.zeros((2, 3), np.float32),
                                                    b: np.zeros(4, np.float32)})
    assert s0.tolist() == [2, 3] and s1.tolist() == [4]


def test_constants_of_every_dtype():
    g = blockflow.GraphBuilder()
    for name in ["float16", "float32", "float64", "int32", "int64"]:
        g.constant(np.arange(6).reshape(2, 3), dtype=name, name=name)
    outs = blockflow.Session(g).run(["float16", "float32", "float64", "int32", "int64"])
    for out in outs:
        assert out.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert [o.dtype for o in outs] == [np.float16, np.float32, np.float64, np.int32, np.int64]


def test_bfloat16_constants_from_lists_and_float_arrays_are_values():
    g = blockflow.GraphBuilder()
    g.constant([1.5, -2.0, 3.0], dtype="bfloat16", name="from_list")
    g.constant(np.array([1.5, -2.0, 3.0], np.float32), dtype="bfloat16", name="from_array")
    bits = blockflow.float32_to_bfloat16(np.array([1.5, -2.0, 3.0], np.float32))
    g.constant(bits, dtype="bfloat16", name="from_bits")  # uint16 arrays are raw bits
    for out in blockflow.Session(g).run(["from_list", "from_array", "from_bits"]):
        assert out.dtype == np.uint16
        assert blockflow.bfloat16_to_float32(out).tolist() == [1.5, -2.0, 3.0]
