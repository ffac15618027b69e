"""blockflow from Python: load, build and run dataflow graphs of TensorFlow-style blocks on
NumPy arrays, without copying them.

    import numpy as np
    import blockflow

    g = blockflow.GraphBuilder()
    dy = g.placeholder("dy", "float32", [1, 4, 4, 2])
    dx = g.DepthwiseConv2dNativeBackpropInput(
        input_sizes=[1, 8, 8, 2], filter=np.ones((3, 3, 2, 1), np.float32), out_backprop=dy,
        strides=[1, 2, 2, 1], padding="SAME", name="dx")
    out = blockflow.Session(g).run(dx, feeds={dy: np.ones((1, 4, 4, 2), np.float32)})

    graph = blockflow.Graph.load("samples/conv2d.json")
    session = blockflow.Session(graph)

The runtime is the C++ core (blockflow._core); this file adds the GraphBuilder methods, one per
registered op, generated from the op schemas when the module is imported. docs/python.md has the
whole API.
"""

import inspect as _inspect
import json as _json
import re as _re
from contextlib import contextmanager as _contextmanager

import numpy as _np

from . import _core
from ._core import (  # noqa: F401  (the public API)
    Error,
    Graph,
    GraphIssue,
    InvalidFeed,
    InvalidFetch,
    InvalidGraph,
    KernelError,
    Output,
    Session,
    bfloat16_to_float32,
    float32_to_bfloat16,
)

__all__ = [
    "Error",
    "Graph",
    "GraphBuilder",
    "GraphIssue",
    "InvalidFeed",
    "InvalidFetch",
    "InvalidGraph",
    "KernelError",
    "Output",
    "Session",
    "bfloat16_to_float32",
    "float32_to_bfloat16",
    "ops",
]

_CATALOG = _core._op_catalog()
_SCHEMAS = {op["name"]: op for op in _CATALOG}


def ops():
    """The registered ops (blocks) as dicts: name, category, doc, inputs, outputs, attrs (name,
    type, required, default, allowed values, doc), same_dtype... as `blockflow ops --json`."""
    return _core._op_catalog()


def _dtype_name(dtype):
    """A blockflow dtype name from a name, a NumPy dtype or a NumPy scalar type."""
    if isinstance(dtype, str):
        return dtype
    name = _np.dtype(dtype).name
    return {"float16": "float16", "uint16": "bfloat16"}.get(name, name)


def _json_value(value):
    """An attribute value as JSON: NumPy scalars and arrays, tuples and dtypes made plain."""
    if isinstance(value, _np.ndarray):
        return value.tolist()
    if isinstance(value, _np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (type, _np.dtype)):
        return _dtype_name(value)
    return value


class GraphBuilder(_core._Scope):
    """Builds a graph, as the C++ Scope does: one method per registered op, named as the op
    (`g.Conv2D(input=x, filter=w, strides=[1, 1, 1, 1], padding="SAME")`), taking the op's input
    ports and attributes by name. An input is an Output of this builder, a node name ("id" or
    "id:K"), or a value (a NumPy array, a list, a number), which becomes a Const node. Every
    method checks the new node at once (InvalidGraph when it is not valid) and returns its
    Output (a tuple of Outputs for an op with several). `name=` sets the node's id; by default
    it is the op's name, made unique.

    blockflow.Session(builder) runs what was built; `builder.graph` is a Graph (to save)."""

    def __init__(self):
        super().__init__()
        self._prefix = ""

    @_contextmanager
    def name_scope(self, name):
        """Prefixes the ids of the nodes made inside the `with` block with `name/`."""
        saved = self._prefix
        self._prefix = saved + name + "/"
        try:
            yield self
        finally:
            self._prefix = saved

    def _new_id(self, name, base):
        if name is not None:
            return self._prefix + name
        return self._unique_id(self._prefix + base)

    def placeholder(self, name, dtype, shape):
        """A Placeholder fed at run time: dtype (a name such as "float32", or a NumPy dtype;
        bfloat16 is fed as uint16 bits) and shape (-1 for a size known only at run time)."""
        return self.Placeholder(dtype=_dtype_name(dtype), shape=list(shape), name=name)

    def constant(self, value, dtype=None, name=None):
        """A Const holding `value` (an array, a list or a number), as `dtype` when given."""
        node_id = self._new_id(name, "Const")
        return self._add_const(node_id, value, _dtype_name(dtype) if dtype is not None else "")

    def save(self, path):
        """Saves the graph built so far (as Graph.save)."""
        self.graph.save(path)

    def validate(self):
        """Every problem in the graph built so far (as Graph.validate)."""
        return self.graph.validate()

    def __repr__(self):
        return "<blockflow.GraphBuilder %d nodes>" % len(self.graph)


_ENDPOINT = _re.compile(r"^[A-Za-z0-9_.\-/]+(:[0-9]+)?$")


def _const_dtype(value, port, schema, known):
    """The dtype of a Const made from a list or a number for `port`: a dtype the port allows;
    floats follow the dtype of the other inputs that must match (TensorFlow's T)."""
    allowed = port["dtypes"]
    if isinstance(value, (_np.ndarray, _np.generic)):
        return ""  # an array keeps its own dtype
    if port["name"] in schema["same_dtype"]:
        for other in schema["same_dtype"]:
            if known.get(other) in allowed:
                return known[other]
    if _np.asarray(value).dtype.kind in "iub":
        for d in ("int32", "int64"):
            if d in allowed:
                return d
    for d in ("float32", "float64", "int32", "int64"):
        if d in allowed:
            return d
    return allowed[0] if allowed else ""


def _make_method(schema):
    op = schema["name"]
    ports = schema["inputs"]
    attrs = schema["attrs"]
    taken = {p["name"] for p in ports} | {a["name"] for a in attrs}
    name_arg = "name" if "name" not in taken else "node_name"
    P = _inspect.Parameter
    params = [P("self", P.POSITIONAL_ONLY)]
    params += [P(p["name"], P.POSITIONAL_OR_KEYWORD) for p in ports]
    for a in attrs:
        default = P.empty if a["required"] else a["default"]
        params.append(P(a["name"], P.KEYWORD_ONLY, default=default))
    params.append(P(name_arg, P.KEYWORD_ONLY, default=None))
    signature = _inspect.Signature(params)

    def method(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)  # TypeError names a wrong argument
        given = bound.arguments
        node_id = self._new_id(given.get(name_arg), op)
        if self._has(node_id):
            raise InvalidGraph("node id '%s' is already taken" % node_id)
        made = []  # Consts made for this node, removed again if the node is refused
        try:
            known = {}
            for p in ports:
                v = given[p["name"]]
                if isinstance(v, Output):
                    known[p["name"]] = v.dtype
                elif isinstance(v, (_np.ndarray, _np.generic)):
                    known[p["name"]] = _dtype_name(v.dtype)
            inputs = []
            for p in ports:
                v = given[p["name"]]
                values = list(v) if p["list"] else [v]
                endpoints = []
                for k, item in enumerate(values):
                    if isinstance(item, Output):
                        endpoints.append(item.name)
                    elif isinstance(item, str) and _ENDPOINT.match(item):
                        endpoints.append(item)
                    else:
                        const_id = self._unique_id(
                            node_id + "/" + p["name"] + ("_%d" % k if p["list"] else "")
                        )
                        dtype = _const_dtype(item, p, schema, known)
                        out = self._add_const(const_id, item, dtype)
                        made.append(const_id)
                        known.setdefault(p["name"], out.dtype)
                        endpoints.append(out.name)
                inputs.append((p["name"], endpoints))
            attr_values = {
                a["name"]: _json_value(given[a["name"]]) for a in attrs if a["name"] in given
            }
            outs = self._add_node(op, node_id, inputs, _json.dumps(attr_values))
        except Exception:
            for const_id in made:
                self._remove(const_id)
            raise
        return outs[0] if len(outs) == 1 else tuple(outs)

    lines = [schema["doc"], ""]
    if ports:
        lines.append("Inputs (an Output, a node name, or an array/list that becomes a Const):")
        for p in ports:
            kind = "list of " if p["list"] else ""
            lines.append(
                "    %s: %s%s. %s" % (p["name"], kind, " | ".join(p["dtypes"]), p["doc"])
            )
    if attrs:
        lines.append("Attributes:")
        for a in attrs:
            extra = " (required)" if a["required"] else " (default %s)" % _json.dumps(a["default"])
            if a.get("allowed"):
                extra += ", one of " + ", ".join(a["allowed"])
            lines.append("    %s: %s%s. %s" % (a["name"], a["type"], extra, a["doc"]))
    lines.append("    %s: the node's id (default: %r, made unique)." % (name_arg, op))
    outputs = schema["outputs"]
    if outputs:
        lines.append("Returns: the Output%s %s." % (
            "s" if len(outputs) > 1 or schema["variadic_outputs"] else "",
            ", ".join("%s (%s)" % (o["name"], o["doc"]) for o in outputs)))
    method.__name__ = op
    method.__qualname__ = "GraphBuilder." + op
    method.__doc__ = "\n".join(lines)
    method.__signature__ = signature
    return method


for _schema in _CATALOG:
    setattr(GraphBuilder, _schema["name"], _make_method(_schema))
del _schema

# The compiled classes present themselves as blockflow.X, where users find them.
for _cls in (Graph, GraphIssue, Output, Session):
    _cls.__module__ = "blockflow"
del _cls
