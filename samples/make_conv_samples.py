"""Writes the six convolution sample graphs (samples/<op>.json) and their data (samples/<op>/*.npy).

    /usr/bin/python3 samples/make_conv_samples.py

Seeded, so the files are reproducible. Each graph follows the TensorFlow op's page: Const sizes,
a filter read from a .npy file, and a Placeholder whose default feed (`ui.feed`) is a .npy file.
Nodes are laid out left to right: sources in a column at x = 40, the block at x = 360."""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def forward_out(size, k, s, padding):
    return -(-size // s) if padding == "SAME" else (size - k + s) // s


def canonical(node):
    """One node the way blockflow saves it (core's SerializeGraph), so that opening and saving a
    sample in the editor leaves it unchanged: id, op, inputs (in the block's port order, as
    given here), then attrs and ui with sorted keys."""
    dump = lambda v: json.dumps(v, sort_keys=True, separators=(", ", ": "))
    text = '{"id": ' + dump(node["id"]) + ', "op": ' + dump(node["op"])
    if node.get("inputs"):
        text += ', "inputs": {' + ", ".join(dump(k) + ": " + dump(v) for k, v in node["inputs"].items()) + "}"
    for key in ("attrs", "ui"):
        if key in node:
            text += ', "' + key + '": ' + dump(node[key])
    return text + "}"


def write(name, nodes):
    folder = os.path.join(HERE, name)
    os.makedirs(folder, exist_ok=True)
    for node in nodes:
        data = node.pop("_data", None)
        if data is not None:
            np.save(os.path.join(folder, data[0]), data[1])
    lines = ",\n    ".join(canonical(n) for n in nodes)
    text = '{\n  "format": "blockflow.graph",\n  "version": 1,\n  "nodes": [\n    ' + lines + "\n  ]\n}\n"
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        f.write(text)


def sizes_node(node_id, values, y):
    return {"id": node_id, "op": "Const",
            "attrs": {"dtype": "int32", "shape": [len(values)], "value": values},
            "ui": {"x": 40, "y": y}}


def file_node(name, node_id, array, y):
    return {"id": node_id, "op": "Const", "attrs": {"dtype": "float32", "file": f"{name}/{node_id}.npy"},
            "ui": {"x": 40, "y": y}, "_data": (f"{node_id}.npy", array)}


def placeholder(name, node_id, array, y):
    return {"id": node_id, "op": "Placeholder",
            "attrs": {"dtype": "float32", "shape": list(array.shape)},
            "ui": {"x": 40, "y": y, "feed": f"{name}/{node_id}.npy"}, "_data": (f"{node_id}.npy", array)}


def block(node_id, op, inputs, attrs):
    return {"id": node_id, "op": op, "inputs": inputs, "attrs": attrs, "ui": {"x": 360, "y": 160}}


def uniform(rng, shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def main():
    rng = np.random.default_rng(20261121)
    strides, padding = [1, 2, 2, 1], "SAME"
    n, h, w, c = 1, 8, 8, 3
    oh, ow = forward_out(h, 3, 2, padding), forward_out(w, 3, 2, padding)
    # Each family's three samples: the forward op at stride 1, then the input and the filter
    # gradient of a stride-2 SAME convolution (the design's example). Conv2D maps 3 -> 4
    # channels; the depthwise op has channel multiplier 2 (3 -> 6 channels).
    for prefix, op, filter_out, grad_depth in (("conv2d", "Conv2D", 4, 4),
                                               ("depthwise_conv2d_native", "DepthwiseConv2dNative", 2, 2 * c)):
        filter_shape, grad_shape = (3, 3, c, filter_out), (n, oh, ow, grad_depth)
        write(prefix, [
            placeholder(prefix, "input", uniform(rng, (n, h, w, c)), 40),
            file_node(prefix, "filter", uniform(rng, filter_shape) / 3, 200),
            block("output", op, {"input": "input", "filter": "filter"},
                  {"strides": [1, 1, 1, 1], "padding": padding}),
        ])
        name = prefix + "_backprop_input"
        write(name, [
            sizes_node("input_sizes", [n, h, w, c], 40),
            file_node(name, "filter", uniform(rng, filter_shape) / 3, 160),
            placeholder(name, "out_backprop", uniform(rng, grad_shape), 280),
            block("input_grad", op + "BackpropInput",
                  {"input_sizes": "input_sizes", "filter": "filter", "out_backprop": "out_backprop"},
                  {"strides": strides, "padding": padding}),
        ])
        name = prefix + "_backprop_filter"
        write(name, [
            file_node(name, "input", uniform(rng, (n, h, w, c)), 40),
            sizes_node("filter_sizes", list(filter_shape), 160),
            placeholder(name, "out_backprop", uniform(rng, grad_shape), 280),
            block("filter_grad", op + "BackpropFilter",
                  {"input": "input", "filter_sizes": "filter_sizes", "out_backprop": "out_backprop"},
                  {"strides": strides, "padding": padding}),
        ])


if __name__ == "__main__":
    main()
