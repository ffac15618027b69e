"""Writes samples/mobilenet_block_train_step.json and its data (samples/mobilenet_block_train_step/).

    /usr/bin/python3 samples/make_train_step_sample.py

One MobileNet depthwise-separable block and its training step, wired as TensorFlow's gradient
graph wires it:

    forward   h = DepthwiseConv2dNative(x, w_dw)        3x3, stride 1, SAME
              y = Conv2D(h, w_pw)                        1x1 pointwise
    loss      L = 0.5 * mean over positions of sum((y - target)^2), so dy = (y - target) / (N*H*W)
    backward  dw_pw = Conv2DBackpropFilter(h, dy)        dh = Conv2DBackpropInput(w_pw, dy)
              dw_dw = DepthwiseConv2dNativeBackpropFilter(x, dh)
              dx    = DepthwiseConv2dNativeBackpropInput(w_dw, dh)
    update    w_new = w - lr * dw                        for both filters

Seeded, so the files are reproducible. x and target are Placeholders whose default feeds
(`ui.feed`) are .npy files; the filters are Const files."""
import os

import numpy as np

from make_conv_samples import HERE, write

NAME = "mobilenet_block_train_step"
N, H, W, C, C_OUT = 2, 28, 28, 32, 64


def node(node_id, op, x, y, inputs=None, attrs=None, ui=None):
    n = {"id": node_id, "op": op}
    if inputs:
        n["inputs"] = inputs
    if attrs:
        n["attrs"] = attrs
    # Columns 280 apart in the listing below; drawn 1.5x wider, so long block names never overlap.
    n["ui"] = dict(ui or {}, x=int(x * 1.5), y=int(y * 1.4))
    return n


def data_node(node_id, op, array, x, y):
    path = f"{NAME}/{node_id}.npy"
    if op == "Placeholder":
        n = node(node_id, op, x, y, attrs={"dtype": "float32", "shape": list(array.shape)},
                 ui={"feed": path})
    else:
        n = node(node_id, op, x, y, attrs={"dtype": "float32", "file": path})
    n["_data"] = (f"{node_id}.npy", array)
    return n


def sizes(node_id, values, x, y):
    return node(node_id, "Const", x, y, attrs={"dtype": "int32", "shape": [len(values)], "value": values})


def main():
    rng = np.random.default_rng(20261123)
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    target = rng.standard_normal((N, H, W, C_OUT)).astype(np.float32)
    # He-style scales keep activations near unit variance.
    w_dw = (rng.standard_normal((3, 3, C, 1)) * np.sqrt(2.0 / 9)).astype(np.float32)
    w_pw = (rng.standard_normal((1, 1, C, C_OUT)) * np.sqrt(2.0 / C)).astype(np.float32)
    same = {"strides": [1, 1, 1, 1], "padding": "SAME"}
    valid = {"strides": [1, 1, 1, 1], "padding": "VALID"}
    nodes = [
        data_node("x", "Placeholder", x, 40, 40),
        data_node("w_dw", "Const", w_dw, 40, 160),
        data_node("w_pw", "Const", w_pw, 40, 280),
        data_node("target", "Placeholder", target, 40, 400),
        node("h", "DepthwiseConv2dNative", 320, 40, {"input": "x", "filter": "w_dw"}, same),
        node("y", "Conv2D", 600, 40, {"input": "h", "filter": "w_pw"}, valid),
        node("err", "Sub", 880, 40, {"x": "y", "y": "target"}),
        node("inv_count", "Const", 880, 520,
             attrs={"dtype": "float32", "shape": [], "value": 1.0 / (N * H * W)}),
        node("dy", "Mul", 1020, 520, {"x": "err", "y": "inv_count"}),
        sizes("pw_sizes", [1, 1, C, C_OUT], 880, 160),
        node("h_shape", "Shape", 880, 280, {"input": "h"}),
        node("dw_pw", "Conv2DBackpropFilter", 1160, 40,
             {"input": "h", "filter_sizes": "pw_sizes", "out_backprop": "dy"}, valid),
        node("dh", "Conv2DBackpropInput", 1160, 200,
             {"input_sizes": "h_shape", "filter": "w_pw", "out_backprop": "dy"}, valid),
        sizes("dw_sizes", [3, 3, C, 1], 1160, 360),
        node("x_shape", "Shape", 1160, 480, {"input": "x"}),
        node("dw_dw", "DepthwiseConv2dNativeBackpropFilter", 1440, 200,
             {"input": "x", "filter_sizes": "dw_sizes", "out_backprop": "dh"}, same),
        node("dx", "DepthwiseConv2dNativeBackpropInput", 1440, 360,
             {"input_sizes": "x_shape", "filter": "w_dw", "out_backprop": "dh"}, same),
        node("lr", "Const", 1440, 40, attrs={"dtype": "float32", "shape": [], "value": 0.1}),
        node("step_pw", "Mul", 1720, 40, {"x": "dw_pw", "y": "lr"}),
        node("w_pw_new", "Sub", 2000, 40, {"x": "w_pw", "y": "step_pw"}),
        node("step_dw", "Mul", 1720, 200, {"x": "dw_dw", "y": "lr"}),
        node("w_dw_new", "Sub", 2000, 200, {"x": "w_dw", "y": "step_dw"}),
    ]
    write(NAME, nodes)


if __name__ == "__main__":
    main()
