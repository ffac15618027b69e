#!/usr/bin/env python3
"""Writes TensorFlow GraphDefs (text format) of about N nodes shaped like training steps, for
the editor's layout tests and timings: `blockflow import-tf` turns them into graph JSON.

    tools/make_layout_graphs.py 1000 out.pbtxt [--small]
    build/bin/blockflow import-tf out.pbtxt -o out.json

--small uses tensors small enough that the importer keeps every value in the JSON (no .npy
files): tests/editor/data/imported_train_step.json is `--small 200`.

The graph: towers (one per ~250 nodes) of convolution layers, each with its forward Conv2D and
bias Add and its backward Conv2DBackpropInput, Conv2DBackpropFilter and gradient-descent step
(Mul, Sub); shared Consts (filter sizes, input sizes, learning rate) feed every layer of a tower,
as in graphs TensorFlow writes. About a tenth of the nodes are small independent pipelines
(Placeholder, Const, Mul), which a layout must pack side by side.
"""
import sys

SHAPE = [1, 8, 8, 4]
FILTER = [3, 3, 4, 4]
SMALL_SHAPE = [1, 2, 2, 1]
SMALL_FILTER = [1, 1, 1, 1]


def shape_text(dims):
    return "".join("dim { size: %d } " % d for d in dims)


class Writer:
    def __init__(self):
        self.lines = []
        self.count = 0

    def node(self, name, op, inputs=(), attrs=""):
        self.count += 1
        ins = "".join('  input: "%s"\n' % i for i in inputs)
        self.lines.append('node {\n  name: "%s"\n  op: "%s"\n%s%s}\n' % (name, op, ins, attrs))

    def placeholder(self, name, dims):
        self.node(name, "Placeholder", (), 'attr { key: "dtype" value { type: DT_FLOAT } }\n'
                  'attr { key: "shape" value { shape { %s} } }\n' % shape_text(dims))

    def const_float(self, name, dims, value):
        self.node(name, "Const", (), 'attr { key: "dtype" value { type: DT_FLOAT } }\n'
                  'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { %s} '
                  'float_val: %g } } }\n' % (shape_text(dims), value))

    def const_ints(self, name, values):
        vals = " ".join("int_val: %d" % v for v in values)
        self.node(name, "Const", (), 'attr { key: "dtype" value { type: DT_INT32 } }\n'
                  'attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { '
                  'dim { size: %d } } %s } } }\n' % (len(values), vals))

    def binary(self, name, op, a, b):
        self.node(name, op, (a, b), 'attr { key: "T" value { type: DT_FLOAT } }\n')

    def conv_attrs(self):
        return ('attr { key: "T" value { type: DT_FLOAT } }\n'
                'attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } }\n'
                'attr { key: "padding" value { s: "SAME" } }\n')

    def conv(self, name, op, a, b, c=None):
        self.node(name, op, (a, b) if c is None else (a, b, c), self.conv_attrs())


def tower(w, t, layers):
    p = "tower%d/" % t
    w.placeholder(p + "x", SHAPE)
    w.placeholder(p + "dy", SHAPE)
    w.const_ints(p + "filter_sizes", FILTER)
    w.const_ints(p + "input_sizes", SHAPE)
    w.const_float(p + "learning_rate", [], 0.01)
    h = [p + "x"]
    for i in range(layers):
        q = p + "layer%d/" % i
        w.const_float(q + "weights", FILTER, 0.1)
        w.const_float(q + "bias", [SHAPE[3]], 0.0)
        w.conv(q + "conv", "Conv2D", h[-1], q + "weights")
        w.binary(q + "add", "Add", q + "conv", q + "bias")
        h.append(q + "add")
    g = p + "dy"
    for i in reversed(range(layers)):
        q = p + "layer%d/" % i
        w.conv(q + "grad/filter", "Conv2DBackpropFilter", h[i], p + "filter_sizes", g)
        w.conv(q + "grad/input", "Conv2DBackpropInput", p + "input_sizes", q + "weights", g)
        w.binary(q + "step/scaled", "Mul", p + "learning_rate", q + "grad/filter")
        w.binary(q + "step/update", "Sub", q + "weights", q + "step/scaled")
        g = q + "grad/input"


def main():
    global SHAPE, FILTER
    args = [a for a in sys.argv[1:] if a != "--small"]
    if len(args) != 2:
        sys.exit("usage: make_layout_graphs.py NODES OUT.pbtxt [--small]")
    if "--small" in sys.argv:
        SHAPE, FILTER = SMALL_SHAPE, SMALL_FILTER
    n = int(args[0])
    w = Writer()
    pipelines = max(1, n // 30)  # 3 nodes each: a tenth of the graph
    towers = max(1, (n - 3 * pipelines) // 250)
    per_tower = (n - 3 * pipelines) // towers
    layers = max(1, (per_tower - 5) // 8)
    for t in range(towers):
        tower(w, t, layers)
    for k in range(pipelines):
        q = "pipeline%d/" % k
        w.placeholder(q + "in", SHAPE)
        w.const_float(q + "scale", [], 2.0)
        w.binary(q + "out", "Mul", q + "in", q + "scale")
    with open(args[1], "w") as f:
        f.write("".join(w.lines))
    print("%s: %d nodes (%d towers of %d layers, %d pipelines)" %
          (args[1], w.count, towers, layers, pipelines))


if __name__ == "__main__":
    main()
