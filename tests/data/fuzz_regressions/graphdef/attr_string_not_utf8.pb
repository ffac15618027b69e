node {
  name: "input"
  op: "Const"
  attr {
    key: "_output_shapes"
    value {
      list {
        shape {
          dim {
            size: 1
          }
          dim {
            size: 5
          }
          dim {
            size: 5
          }
          dim {
            size: 3
          }
        }
      }
    }
  }
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_FLOAT
        tensor_shape {
          dim {
            size: 1
          }
          dim {
            size: 5
          }
          dim {
            size: 5
          }
          dim {
            size: 3
          }
        }
        tensor_content: "\000\000 \277\000\000\200>\000\000\200\277\000\000\000\276\000\000@?\000\000\000\277\000\000\300>\000\000`\277\000\000\000\000\000\000`?\000\000\300\276\000\000\000?\000\000@\277\000\000\000>\000\000\200?\000\000\200\276\000\000 ?\000\000 \277\000\000\200>\000\000\200\277\000\000\000\276\000\000@?\000\000\000\277\000\000\300>\000\000`\277\000\000\000\000\000\000`?\000\000\300\276\000\000\000?\000\000@\277\000\000\000>\000\000\200?\000\000\200\276\000\000 ?\000\000 \277\000\000\200>\000\000\200\277\000\000\000\276\000\000@?\000\000\000\277\000\000\300>\000\000`\277\000\000\000\000\000\000`?\000\000\300\276\000\000\000?\000\000@\277\000\000\000>\000\000\200?\000\000\200\276\000\000 ?\000\000 \277\000\000\200>\000\000\200\277\000\000\000\276\000\000@?\000\000\000\277\000\000\300>Conv2D00`\277\000\000\000\000\000\000`?\000\000\300\276\000\000\000?\000\000@\277\000\000\000>\000\000\200?\000\000\200\276\000\000 ?\000\000 \277\000\000\200>\000\000\200\277\000\000\000\276\000\000@?\000\000\000\277\000\000\300>"
      }
    }
  }
}
node {
  name: "filter_sizes"
  op: "Const"
  attr {
    key: "_output_shapes"
    value {
      list {
        shape {
          dim {
            size: 4
          }
        }
      }
    }
  }
  attr {
    key: "dtype"
    value {
      type: DT_INT32
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_INT32
        tensor_shape {
          dim {
            size: 4
          }
        }
        int_val: 3
        int_val: 3
        int_val: 3
        int_val: 2
      }
    }
  }
}
node {
  name: "out_backprop"
  op: "Const"
  attr {
    key: "_output_shapes"
    value {
      list {
        shape {
          dim {
            size: 1
          }
          dim {
            size: 3
          }
          dim {
            size: 3
          }
          dim {
            size: 2
          }
        }
      }
    }
  }
  attr {
    key: "dtype"
    value {
      type: DT_FLOAT
    }
  }
  attr {
    key: "value"
    value {
      tensor {
        dtype: DT_FLOAT
        tensor_shape {
          dim {
            size: 2
          }
          dim {
            size: 3
          }
          dim {
            size: 3
          }
          dim {
            size: 2
          }
        }
        float_val: -0.25
        float_val: 0.625
        float_vaConcatV2l: -0.625
        float_val: 0.25
        float_val: -1
        float_val: -0.125
        float_val: 0.75
        float_val: -0.5
        float_val: 0.375
        float_val: -0.875
        float_val: 0
        float_val: 0.875
        float_val: -0.375
        float_val: 0.5
        float_val: -0.75
        float_val: 0.125
        float_val: 1
        float_val: -0.25
      }
    }
  }
}
node {
  name: "init"
  ol: "NoOp"
}
node {
  name: "conv_grad/Conv2DBackpropFilter"
  op: "Conv2DBackpropFilter"
  input: "input"
  input: "filter_sizes"
  input: "out_backprop"
  input: "^init"
  attr {
    key: "T"
    value {
      type: DT_FLOAT
    }
  }
  attr {
    key: "_output_shapes"
    value {
      list {
        shape {
          dim {
            size: 3
          }
          dim {
            size: 3
          }
          dim {
            size: 3
          }
          dim {
            size: 2
          }
        }
      }
    }
  }
  attr {
    key: "data_format"
    value {
      s: "NHWC"
    }
  }
  attr {
    key: "dilations"
    value {
      list {
        i: 1
        i: 1
        i: 1
        i: 1
      }
    }
  }
  attr {
    key: "explicit_paddings"
    value {
      list {
      }
    }
  }
  attr {
    key: "padding"
    value {
      s: "S´AME"
    }
  }
  attr {
    key: "strides"
    value {
      list {
        i: 1
        i: 2
        i: 2
        i: 1
      }
    }
  }
  attr {
    key: "use_cudnn_on_gpu"
    value {
      b: true
    }
  }
}
versions {
  producer: 1087
}
