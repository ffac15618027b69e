// Writes the TensorFlow GraphDef samples in samples/tf/ in the three forms
// `blockflow import-tf` reads: binary (.pb), text (.pbtxt, as tf.io.write_graph
// writes) and protobuf JSON (.json, as json_format.MessageToJson writes).
//
//   cmake --build build --target blockflow_make_tf_samples
//   build/bin/blockflow_make_tf_samples samples/tf
//
// The graphs are built here node by node as TensorFlow 1.x would emit them
// (attrs such as T, use_cudnn_on_gpu, _output_shapes and control inputs included),
// so the importer meets what real files hold. Tensor values follow one formula,
// SampleValue(i), that the runtime tests repeat to build the equivalent blockflow
// graphs; they are multiples of 1/8, exact in every float type.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tf_graph.pb.h"

namespace {

namespace pb = ::blockflow::tf;

double SampleValue(int64_t i, int64_t offset) {
  return static_cast<double>(((i + offset) * 7 + 3) % 17 - 8) / 8.0;
}

void SetShape(pb::TensorShapeProto* s, std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) s->add_dim()->set_size(d);
}

int64_t Count(std::initializer_list<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

pb::NodeDef* AddNode(pb::GraphDef* g, const std::string& name, const std::string& op,
                     std::initializer_list<std::string> inputs = {}) {
  pb::NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  for (const std::string& in : inputs) n->add_input(in);
  return n;
}

void SetType(pb::NodeDef* n, const std::string& key, pb::DataType t) {
  (*n->mutable_attr())[key].set_type(t);
}
void SetInts(pb::NodeDef* n, const std::string& key, std::initializer_list<int64_t> v) {
  auto* l = (*n->mutable_attr())[key].mutable_list();
  for (int64_t x : v) l->add_i(x);
}
void SetString(pb::NodeDef* n, const std::string& key, const std::string& v) {
  (*n->mutable_attr())[key].set_s(v);
}
void SetBool(pb::NodeDef* n, const std::string& key, bool v) { (*n->mutable_attr())[key].set_b(v); }
void SetOutputShapes(pb::NodeDef* n, std::initializer_list<std::initializer_list<int64_t>> shapes) {
  auto* l = (*n->mutable_attr())["_output_shapes"].mutable_list();
  for (const auto& s : shapes) SetShape(l->add_shape(), s);
}

// How a Const stores its values: all three encodings TensorFlow uses.
enum class Encoding { kTensorContent, kFullList, kRepeatLast };

// A float32 or float64 Const with SampleValue(i, offset); kRepeatLast stores only
// the first `kept` values, as TensorFlow does when the tail repeats.
pb::NodeDef* AddFloatConst(pb::GraphDef* g, const std::string& name, pb::DataType t,
                           std::initializer_list<int64_t> dims, int64_t offset, Encoding enc,
                           int64_t kept = 0) {
  pb::NodeDef* n = AddNode(g, name, "Const");
  SetType(n, "dtype", t);
  pb::TensorProto* tp = (*n->mutable_attr())["value"].mutable_tensor();
  tp->set_dtype(t);
  SetShape(tp->mutable_tensor_shape(), dims);
  const int64_t count = Count(dims);
  const int64_t stored = enc == Encoding::kRepeatLast ? kept : count;
  std::string bytes;
  for (int64_t i = 0; i < stored; ++i) {
    const double v = SampleValue(i, offset);
    if (enc == Encoding::kTensorContent) {
      if (t == pb::DT_FLOAT) {
        const float f = static_cast<float>(v);
        bytes.append(reinterpret_cast<const char*>(&f), sizeof f);
      } else {
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
      }
    } else if (t == pb::DT_FLOAT) {
      tp->add_float_val(static_cast<float>(v));
    } else {
      tp->add_double_val(v);
    }
  }
  if (enc == Encoding::kTensorContent) tp->set_tensor_content(bytes);
  SetOutputShapes(n, {dims});
  return n;
}

pb::NodeDef* AddIntConst(pb::GraphDef* g, const std::string& name,
                         std::initializer_list<int32_t> values) {
  pb::NodeDef* n = AddNode(g, name, "Const");
  SetType(n, "dtype", pb::DT_INT32);
  pb::TensorProto* tp = (*n->mutable_attr())["value"].mutable_tensor();
  tp->set_dtype(pb::DT_INT32);
  SetShape(tp->mutable_tensor_shape(), {static_cast<int64_t>(values.size())});
  for (int32_t v : values) tp->add_int_val(v);
  SetOutputShapes(n, {{static_cast<int64_t>(values.size())}});
  return n;
}

void SetConvAttrs(pb::NodeDef* n, pb::DataType t, std::initializer_list<int64_t> strides,
                  const std::string& padding, bool conv2d) {
  SetType(n, "T", t);
  SetInts(n, "strides", strides);
  SetString(n, "padding", padding);
  SetString(n, "data_format", "NHWC");
  SetInts(n, "dilations", {1, 1, 1, 1});
  (*n->mutable_attr())["explicit_paddings"].mutable_list();  // TensorFlow writes an empty list
  if (conv2d) SetBool(n, "use_cudnn_on_gpu", true);
}

// A float32 scalar Const.
pb::NodeDef* AddScalarConst(pb::GraphDef* g, const std::string& name, float v) {
  pb::NodeDef* n = AddNode(g, name, "Const");
  SetType(n, "dtype", pb::DT_FLOAT);
  pb::TensorProto* tp = (*n->mutable_attr())["value"].mutable_tensor();
  tp->set_dtype(pb::DT_FLOAT);
  tp->mutable_tensor_shape();
  tp->add_float_val(v);
  return n;
}

// A convolution node with TensorFlow's attrs (use_cudnn_on_gpu on the Conv2D ops).
pb::NodeDef* AddConv(pb::GraphDef* g, const std::string& name, const std::string& op,
                     std::initializer_list<std::string> inputs,
                     std::initializer_list<int64_t> strides, const std::string& padding,
                     pb::DataType t = pb::DT_FLOAT) {
  pb::NodeDef* n = AddNode(g, name, op, inputs);
  SetConvAttrs(n, t, strides, padding, op.rfind("Conv2D", 0) == 0);
  return n;
}

void AddVersions(pb::GraphDef* g) { g->mutable_versions()->set_producer(1087); }

// Conv2DBackpropFilter: input by tensor_content, sizes by int_val, out_backprop by float_val;
// a NoOp and a control input that the importer must drop.
pb::GraphDef Conv2DBackpropFilterGraph() {
  pb::GraphDef g;
  AddFloatConst(&g, "input", pb::DT_FLOAT, {1, 5, 5, 3}, 0, Encoding::kTensorContent);
  AddIntConst(&g, "filter_sizes", {3, 3, 3, 2});
  AddFloatConst(&g, "out_backprop", pb::DT_FLOAT, {1, 3, 3, 2}, 100, Encoding::kFullList);
  AddNode(&g, "init", "NoOp");
  SetOutputShapes(AddConv(&g, "conv_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
                          {"input", "filter_sizes", "out_backprop", "^init"}, {1, 2, 2, 1}, "SAME"),
                  {{3, 3, 3, 2}});
  AddVersions(&g);
  return g;
}

// DepthwiseConv2dNativeBackpropFilter, nodes listed consumers first (any order is valid).
pb::GraphDef DepthwiseBackpropFilterGraph() {
  pb::GraphDef g;
  SetOutputShapes(AddConv(&g, "depthwise_grad/DepthwiseConv2dNativeBackpropFilter",
                          "DepthwiseConv2dNativeBackpropFilter",
                          {"input:0", "filter_sizes", "out_backprop:0"}, {1, 1, 1, 1}, "VALID"),
                  {{3, 3, 2, 2}});
  AddFloatConst(&g, "out_backprop", pb::DT_FLOAT, {1, 4, 4, 4}, 200, Encoding::kFullList);
  AddIntConst(&g, "filter_sizes", {3, 3, 2, 2});
  AddFloatConst(&g, "input", pb::DT_FLOAT, {1, 6, 6, 2}, 300, Encoding::kTensorContent);
  AddVersions(&g);
  return g;
}

// DepthwiseConv2dNativeBackpropInput in float64; out_backprop stores 7 values and
// TensorFlow's rule repeats the last one over the rest.
pb::GraphDef DepthwiseBackpropInputGraph() {
  pb::GraphDef g;
  AddIntConst(&g, "input_sizes", {1, 6, 6, 2});
  AddFloatConst(&g, "filter", pb::DT_DOUBLE, {3, 3, 2, 1}, 400, Encoding::kTensorContent);
  AddFloatConst(&g, "out_backprop", pb::DT_DOUBLE, {1, 3, 3, 2}, 500, Encoding::kRepeatLast, 7);
  SetOutputShapes(
      AddConv(&g, "depthwise_grad/DepthwiseConv2dNativeBackpropInput",
              "DepthwiseConv2dNativeBackpropInput", {"input_sizes", "filter", "out_backprop"},
              {1, 2, 2, 1}, "SAME", pb::DT_DOUBLE),
      {{1, 6, 6, 2}});
  AddVersions(&g);
  return g;
}

// An excerpt of a TensorFlow 1.x training graph: one conv layer, its loss, its
// gradient (Shape/Fill, ShapeN, the two conv gradients, tuple/group_deps) and the
// SGD update. VariableV2, Relu, ReluGrad and ApplyGradientDescent are not blockflow
// blocks, so importing it needs --fetch and --feed (or --gradients). No _output_shapes, as
// tf.io.write_graph writes by default: the importer infers the shapes of its cuts.
pb::GraphDef TrainStepGraph() {
  pb::GraphDef g;
  const pb::DataType f = pb::DT_FLOAT;
  pb::NodeDef* n = AddNode(&g, "input", "Placeholder");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {2, 8, 8, 3});
  n = AddNode(&g, "labels", "Placeholder");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {2, 8, 8, 4});

  n = AddNode(&g, "conv1/weights", "VariableV2");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {3, 3, 3, 4});
  SetString(n, "container", "");
  SetString(n, "shared_name", "");
  n = AddNode(&g, "conv1/weights/read", "Identity", {"conv1/weights"});
  SetType(n, "T", f);
  (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@conv1/weights");
  n = AddNode(&g, "conv1/Conv2D", "Conv2D", {"input", "conv1/weights/read"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  n = AddNode(&g, "conv1/Relu", "Relu", {"conv1/Conv2D"});
  SetType(n, "T", f);
  n = AddNode(&g, "loss/sub", "Sub", {"conv1/Relu", "labels"});
  SetType(n, "T", f);

  n = AddNode(&g, "gradients/Shape", "Shape", {"loss/sub"});
  SetType(n, "T", f);
  SetType(n, "out_type", pb::DT_INT32);
  AddScalarConst(&g, "gradients/grad_ys_0", 1.0f);
  n = AddNode(&g, "gradients/Fill", "Fill", {"gradients/Shape", "gradients/grad_ys_0"});
  SetType(n, "T", f);
  SetType(n, "index_type", pb::DT_INT32);
  n = AddNode(&g, "gradients/loss/sub_grad/Identity", "Identity", {"gradients/Fill"});
  SetType(n, "T", f);
  n = AddNode(&g, "gradients/conv1/Relu_grad/ReluGrad", "ReluGrad",
              {"gradients/loss/sub_grad/Identity", "conv1/Relu"});
  SetType(n, "T", f);

  n = AddNode(&g, "gradients/conv1/Conv2D_grad/ShapeN", "ShapeN", {"input", "conv1/weights/read"});
  SetType(n, "T", f);
  (*n->mutable_attr())["N"].set_i(2);
  SetType(n, "out_type", pb::DT_INT32);
  n = AddNode(&g, "gradients/conv1/Conv2D_grad/Conv2DBackpropInput", "Conv2DBackpropInput",
              {"gradients/conv1/Conv2D_grad/ShapeN", "conv1/weights/read",
               "gradients/conv1/Relu_grad/ReluGrad"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  n = AddNode(
      &g, "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
      {"input", "gradients/conv1/Conv2D_grad/ShapeN:1", "gradients/conv1/Relu_grad/ReluGrad"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  AddNode(&g, "gradients/conv1/Conv2D_grad/tuple/group_deps", "NoOp",
          {"^gradients/conv1/Conv2D_grad/Conv2DBackpropInput",
           "^gradients/conv1/Conv2D_grad/Conv2DBackpropFilter"});
  // tf.tuple's outputs: each gradient again, once both are done.
  const std::string grads = "gradients/conv1/Conv2D_grad/";
  const char* const kTuple[][2] = {{"control_dependency", "Conv2DBackpropInput"},
                                   {"control_dependency_1", "Conv2DBackpropFilter"}};
  for (const auto& [name, source] : kTuple) {
    n = AddNode(&g, grads + "tuple/" + name, "Identity",
                {grads + source, "^" + grads + "tuple/group_deps"});
    SetType(n, "T", f);
    (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@" + grads + source);
  }

  AddScalarConst(&g, "GradientDescent/learning_rate", 0.01f);
  n = AddNode(&g, "GradientDescent/update_conv1/weights/ApplyGradientDescent",
              "ApplyGradientDescent",
              {"conv1/weights", "GradientDescent/learning_rate",
               "gradients/conv1/Conv2D_grad/tuple/control_dependency_1"});
  SetType(n, "T", f);
  SetBool(n, "use_locking", false);
  (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@conv1/weights");
  AddNode(&g, "GradientDescent", "NoOp",
          {"^GradientDescent/update_conv1/weights/ApplyGradientDescent"});
  AddVersions(&g);
  return g;
}

// ---------------------------------------------------------------------------
// Test graphs (tests/data/tf/): what real training graphs hold and the importer must read.
// None carries _output_shapes.

pb::NodeDef* AddPlaceholder(pb::GraphDef* g, const std::string& name,
                            std::initializer_list<int64_t> dims) {
  pb::NodeDef* n = AddNode(g, name, "Placeholder");
  SetType(n, "dtype", pb::DT_FLOAT);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), dims);
  return n;
}

// A TF 1.x variable and its read (`NAME/read`, an Identity).
void AddVariable(pb::GraphDef* g, const std::string& name, std::initializer_list<int64_t> dims) {
  pb::NodeDef* n = AddNode(g, name, "VariableV2");
  SetType(n, "dtype", pb::DT_FLOAT);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), dims);
  SetString(n, "container", "");
  SetString(n, "shared_name", "");
  n = AddNode(g, name + "/read", "Identity", {name});
  SetType(n, "T", pb::DT_FLOAT);
  (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@" + name);
}

pb::NodeDef* AddOp(pb::GraphDef* g, const std::string& name, const std::string& op,
                   std::initializer_list<std::string> inputs) {
  pb::NodeDef* n = AddNode(g, name, op, inputs);
  SetType(n, "T", pb::DT_FLOAT);
  return n;
}

void AddApply(pb::GraphDef* g, const std::string& var, const std::string& grad) {
  pb::NodeDef* n = AddOp(g, "GradientDescent/update_" + var + "/ApplyGradientDescent",
                         "ApplyGradientDescent", {var, "GradientDescent/learning_rate", grad});
  SetBool(n, "use_locking", false);
}

// A TF 1.x CNN training step: conv1 (SAME) → Relu → MaxPool 2x2 → conv2 (stride 2) → BiasAdd
// → Relu → Reshape → MatMul, a difference loss, every gradient as tf.gradients writes it
// (ShapeN, ReluGrad, MaxPoolGrad, BiasAddGrad, the MatMul and Reshape gradients) and SGD.
pb::GraphDef CnnTrainStepGraph() {
  pb::GraphDef g;
  AddPlaceholder(&g, "x", {2, 12, 12, 3});
  AddPlaceholder(&g, "labels", {2, 10});
  AddVariable(&g, "conv1/weights", {3, 3, 3, 8});
  AddVariable(&g, "conv2/weights", {3, 3, 8, 16});
  AddVariable(&g, "conv2/biases", {16});
  AddVariable(&g, "fc/weights", {144, 10});
  AddConv(&g, "conv1/Conv2D", "Conv2D", {"x", "conv1/weights/read"}, {1, 1, 1, 1}, "SAME");
  AddOp(&g, "conv1/Relu", "Relu", {"conv1/Conv2D"});
  pb::NodeDef* n = AddOp(&g, "pool1/MaxPool", "MaxPool", {"conv1/Relu"});
  SetInts(n, "ksize", {1, 2, 2, 1});
  SetInts(n, "strides", {1, 2, 2, 1});
  SetString(n, "padding", "VALID");
  SetString(n, "data_format", "NHWC");
  AddConv(&g, "conv2/Conv2D", "Conv2D", {"pool1/MaxPool", "conv2/weights/read"}, {1, 2, 2, 1},
          "SAME");
  n = AddOp(&g, "conv2/BiasAdd", "BiasAdd", {"conv2/Conv2D", "conv2/biases/read"});
  SetString(n, "data_format", "NHWC");
  AddOp(&g, "conv2/Relu", "Relu", {"conv2/BiasAdd"});
  AddIntConst(&g, "flatten/shape", {-1, 144});
  (*g.mutable_node(g.node_size() - 1)->mutable_attr()).erase("_output_shapes");
  n = AddOp(&g, "flatten/Reshape", "Reshape", {"conv2/Relu", "flatten/shape"});
  SetType(n, "Tshape", pb::DT_INT32);
  n = AddOp(&g, "fc/MatMul", "MatMul", {"flatten/Reshape", "fc/weights/read"});
  SetBool(n, "transpose_a", false);
  SetBool(n, "transpose_b", false);
  AddOp(&g, "loss/sub", "Sub", {"fc/MatMul", "labels"});

  n = AddOp(&g, "gradients/Shape", "Shape", {"loss/sub"});
  SetType(n, "out_type", pb::DT_INT32);
  AddScalarConst(&g, "gradients/grad_ys_0", 1.0f);
  n = AddOp(&g, "gradients/Fill", "Fill", {"gradients/Shape", "gradients/grad_ys_0"});
  SetType(n, "index_type", pb::DT_INT32);
  AddOp(&g, "gradients/loss/sub_grad/Identity", "Identity", {"gradients/Fill"});
  n = AddOp(&g, "gradients/fc/MatMul_grad/MatMul", "MatMul",
            {"gradients/loss/sub_grad/Identity", "fc/weights/read"});
  SetBool(n, "transpose_a", false);
  SetBool(n, "transpose_b", true);
  n = AddOp(&g, "gradients/fc/MatMul_grad/MatMul_1", "MatMul",
            {"flatten/Reshape", "gradients/loss/sub_grad/Identity"});
  SetBool(n, "transpose_a", true);
  SetBool(n, "transpose_b", false);
  n = AddOp(&g, "gradients/flatten/Reshape_grad/Shape", "Shape", {"conv2/Relu"});
  SetType(n, "out_type", pb::DT_INT32);
  n = AddOp(&g, "gradients/flatten/Reshape_grad/Reshape", "Reshape",
            {"gradients/fc/MatMul_grad/MatMul", "gradients/flatten/Reshape_grad/Shape"});
  SetType(n, "Tshape", pb::DT_INT32);
  AddOp(&g, "gradients/conv2/Relu_grad/ReluGrad", "ReluGrad",
        {"gradients/flatten/Reshape_grad/Reshape", "conv2/Relu"});
  n = AddOp(&g, "gradients/conv2/BiasAdd_grad/BiasAddGrad", "BiasAddGrad",
            {"gradients/conv2/Relu_grad/ReluGrad"});
  SetString(n, "data_format", "NHWC");
  n = AddOp(&g, "gradients/conv2/Conv2D_grad/ShapeN", "ShapeN",
            {"pool1/MaxPool", "conv2/weights/read"});
  (*n->mutable_attr())["N"].set_i(2);
  SetType(n, "out_type", pb::DT_INT32);
  AddConv(&g, "gradients/conv2/Conv2D_grad/Conv2DBackpropInput", "Conv2DBackpropInput",
          {"gradients/conv2/Conv2D_grad/ShapeN", "conv2/weights/read",
           "gradients/conv2/Relu_grad/ReluGrad"},
          {1, 2, 2, 1}, "SAME");
  AddConv(&g, "gradients/conv2/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
          {"pool1/MaxPool", "gradients/conv2/Conv2D_grad/ShapeN:1",
           "gradients/conv2/Relu_grad/ReluGrad"},
          {1, 2, 2, 1}, "SAME");
  n = AddOp(&g, "gradients/pool1/MaxPool_grad/MaxPoolGrad", "MaxPoolGrad",
            {"conv1/Relu", "pool1/MaxPool", "gradients/conv2/Conv2D_grad/Conv2DBackpropInput"});
  SetInts(n, "ksize", {1, 2, 2, 1});
  SetInts(n, "strides", {1, 2, 2, 1});
  SetString(n, "padding", "VALID");
  SetString(n, "data_format", "NHWC");
  AddOp(&g, "gradients/conv1/Relu_grad/ReluGrad", "ReluGrad",
        {"gradients/pool1/MaxPool_grad/MaxPoolGrad", "conv1/Relu"});
  n = AddOp(&g, "gradients/conv1/Conv2D_grad/ShapeN", "ShapeN", {"x", "conv1/weights/read"});
  (*n->mutable_attr())["N"].set_i(2);
  SetType(n, "out_type", pb::DT_INT32);
  AddConv(&g, "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
          {"x", "gradients/conv1/Conv2D_grad/ShapeN:1", "gradients/conv1/Relu_grad/ReluGrad"},
          {1, 1, 1, 1}, "SAME");

  AddScalarConst(&g, "GradientDescent/learning_rate", 0.01f);
  AddApply(&g, "conv1/weights", "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter");
  AddApply(&g, "conv2/weights", "gradients/conv2/Conv2D_grad/Conv2DBackpropFilter");
  AddApply(&g, "conv2/biases", "gradients/conv2/BiasAdd_grad/BiasAddGrad");
  AddApply(&g, "fc/weights", "gradients/fc/MatMul_grad/MatMul_1");
  AddNode(&g, "GradientDescent", "NoOp",
          {"^GradientDescent/update_conv1/weights/ApplyGradientDescent",
           "^GradientDescent/update_conv2/weights/ApplyGradientDescent",
           "^GradientDescent/update_conv2/biases/ApplyGradientDescent",
           "^GradientDescent/update_fc/weights/ApplyGradientDescent"});
  AddVersions(&g);
  return g;
}

// A GraphDef of producer version 21: its Placeholder says `shape {}`, which before version 22
// meant "any shape" (later: a scalar). An MNIST-style Reshape to [-1,28,28,1] and a conv.
pb::GraphDef OldProducerGraph() {
  pb::GraphDef g;
  pb::NodeDef* n = AddNode(&g, "x", "Placeholder");
  SetType(n, "dtype", pb::DT_FLOAT);
  (*n->mutable_attr())["shape"].mutable_shape();
  AddIntConst(&g, "Reshape/shape", {-1, 28, 28, 1});
  (*g.mutable_node(g.node_size() - 1)->mutable_attr()).erase("_output_shapes");
  n = AddOp(&g, "Reshape", "Reshape", {"x", "Reshape/shape"});
  SetType(n, "Tshape", pb::DT_INT32);
  AddFloatConst(&g, "conv1/weights", pb::DT_FLOAT, {5, 5, 1, 4}, 0, Encoding::kTensorContent);
  (*g.mutable_node(g.node_size() - 1)->mutable_attr()).erase("_output_shapes");
  AddConv(&g, "conv1/Conv2D", "Conv2D", {"Reshape", "conv1/weights"}, {1, 1, 1, 1}, "SAME");
  g.mutable_versions()->set_producer(21);
  return g;
}

// An input pipeline of queues: a FIFOQueueV2 with component shapes, dequeued 2 at a time
// (QueueDequeueManyV2, dtypes in component_types), into a conv and its filter gradient; and a
// second queue that declares no shapes.
pb::GraphDef QueueInputGraph() {
  pb::GraphDef g;
  pb::NodeDef* n = AddNode(&g, "batch/fifo_queue", "FIFOQueueV2");
  auto* types = (*n->mutable_attr())["component_types"].mutable_list();
  types->add_type(pb::DT_FLOAT);
  types->add_type(pb::DT_FLOAT);
  auto* shapes = (*n->mutable_attr())["shapes"].mutable_list();
  SetShape(shapes->add_shape(), {8, 8, 3});
  SetShape(shapes->add_shape(), {8, 8, 4});
  (*n->mutable_attr())["capacity"].set_i(32);
  AddIntConst(&g, "batch/n", {2});
  pb::NodeDef* c = g.mutable_node(g.node_size() - 1);
  c->mutable_attr()->erase("_output_shapes");
  (*c->mutable_attr())["value"].mutable_tensor()->mutable_tensor_shape()->clear_dim();
  n = AddNode(&g, "batch", "QueueDequeueManyV2", {"batch/fifo_queue", "batch/n"});
  types = (*n->mutable_attr())["component_types"].mutable_list();
  types->add_type(pb::DT_FLOAT);
  types->add_type(pb::DT_FLOAT);
  (*n->mutable_attr())["timeout_ms"].set_i(-1);
  AddVariable(&g, "conv/weights", {3, 3, 3, 4});
  AddConv(&g, "conv/Conv2D", "Conv2D", {"batch", "conv/weights/read"}, {1, 1, 1, 1}, "SAME");
  AddOp(&g, "loss/sub", "Sub", {"conv/Conv2D", "batch:1"});
  n = AddOp(&g, "gradients/conv/Conv2D_grad/ShapeN", "ShapeN", {"batch", "conv/weights/read"});
  (*n->mutable_attr())["N"].set_i(2);
  SetType(n, "out_type", pb::DT_INT32);
  AddConv(&g, "gradients/conv/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
          {"batch", "gradients/conv/Conv2D_grad/ShapeN:1", "loss/sub"}, {1, 1, 1, 1}, "SAME");

  n = AddNode(&g, "eval/fifo_queue", "FIFOQueueV2");
  (*n->mutable_attr())["component_types"].mutable_list()->add_type(pb::DT_FLOAT);
  n = AddNode(&g, "eval/batch", "QueueDequeueV2", {"eval/fifo_queue"});
  (*n->mutable_attr())["component_types"].mutable_list()->add_type(pb::DT_FLOAT);
  AddConv(&g, "eval/Conv2D", "Conv2D", {"eval/batch", "conv/weights/read"}, {1, 1, 1, 1}, "SAME");
  AddVersions(&g);
  return g;
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
    return false;
  }
  return true;
}

bool WriteAllForms(const std::string& dir, const std::string& name, const pb::GraphDef& g) {
  std::string binary, text, json;
  {
    // Deterministic: map entries (attrs) in key order, so regenerating gives identical files.
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!g.SerializeToCodedStream(&coded)) return false;
  }
  if (!google::protobuf::TextFormat::PrintToString(g, &text)) return false;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(g, &json, opts).ok()) return false;
  // The JSON printer walks maps in hash order; re-printing with sorted keys makes it stable.
  json = nlohmann::json::parse(json).dump(1) + "\n";
  return WriteFile(dir + "/" + name + ".pb", binary) &&
         WriteFile(dir + "/" + name + ".pbtxt", text) &&
         WriteFile(dir + "/" + name + ".json", json);
}

bool WriteText(const std::string& dir, const std::string& name, const pb::GraphDef& g) {
  std::string text;
  return google::protobuf::TextFormat::PrintToString(g, &text) &&
         WriteFile(dir + "/" + name + ".pbtxt", text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: blockflow_make_tf_samples SAMPLES_DIR [TEST_DATA_DIR]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok =
      WriteAllForms(dir, "conv2d_backprop_filter", Conv2DBackpropFilterGraph()) &&
      WriteAllForms(dir, "depthwise_conv2d_native_backprop_filter",
                    DepthwiseBackpropFilterGraph()) &&
      WriteAllForms(dir, "depthwise_conv2d_native_backprop_input", DepthwiseBackpropInputGraph()) &&
      WriteAllForms(dir, "conv_train_step", TrainStepGraph());
  if (!ok) return 1;
  std::printf("wrote 4 GraphDefs x 3 forms to %s\n", dir.c_str());
  if (argc == 3) {
    const std::string tests = argv[2];
    if (!WriteText(tests, "cnn_train_step", CnnTrainStepGraph()) ||
        !WriteText(tests, "old_producer", OldProducerGraph()) ||
        !WriteText(tests, "queue_input", QueueInputGraph())) {
      return 1;
    }
    std::printf("wrote 3 test GraphDefs to %s\n", tests.c_str());
  }
  return 0;
}
