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

void AddVersions(pb::GraphDef* g) { g->mutable_versions()->set_producer(1087); }

// Conv2DBackpropFilter: input by tensor_content, sizes by int_val, out_backprop by float_val;
// a NoOp and a control input that the importer must drop.
pb::GraphDef Conv2DBackpropFilterGraph() {
  pb::GraphDef g;
  AddFloatConst(&g, "input", pb::DT_FLOAT, {1, 5, 5, 3}, 0, Encoding::kTensorContent);
  AddIntConst(&g, "filter_sizes", {3, 3, 3, 2});
  AddFloatConst(&g, "out_backprop", pb::DT_FLOAT, {1, 3, 3, 2}, 100, Encoding::kFullList);
  AddNode(&g, "init", "NoOp");
  pb::NodeDef* n = AddNode(&g, "conv_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
                           {"input", "filter_sizes", "out_backprop", "^init"});
  SetConvAttrs(n, pb::DT_FLOAT, {1, 2, 2, 1}, "SAME", true);
  SetOutputShapes(n, {{3, 3, 3, 2}});
  AddVersions(&g);
  return g;
}

// DepthwiseConv2dNativeBackpropFilter, nodes listed consumers first (any order is valid).
pb::GraphDef DepthwiseBackpropFilterGraph() {
  pb::GraphDef g;
  pb::NodeDef* n =
      AddNode(&g, "depthwise_grad/DepthwiseConv2dNativeBackpropFilter",
              "DepthwiseConv2dNativeBackpropFilter", {"input:0", "filter_sizes", "out_backprop:0"});
  SetConvAttrs(n, pb::DT_FLOAT, {1, 1, 1, 1}, "VALID", false);
  SetOutputShapes(n, {{3, 3, 2, 2}});
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
  pb::NodeDef* n =
      AddNode(&g, "depthwise_grad/DepthwiseConv2dNativeBackpropInput",
              "DepthwiseConv2dNativeBackpropInput", {"input_sizes", "filter", "out_backprop"});
  SetConvAttrs(n, pb::DT_DOUBLE, {1, 2, 2, 1}, "SAME", false);
  SetOutputShapes(n, {{1, 6, 6, 2}});
  AddVersions(&g);
  return g;
}

// An excerpt of a TensorFlow 1.x training graph: one conv layer, its loss, its
// gradient (Shape/Fill, ShapeN, the two conv gradients, tuple/group_deps) and the
// SGD update. VariableV2, Relu, ReluGrad and ApplyGradientDescent are not blockflow
// blocks, so importing it needs --fetch and --feed.
pb::GraphDef TrainStepGraph() {
  pb::GraphDef g;
  const pb::DataType f = pb::DT_FLOAT;
  pb::NodeDef* n = AddNode(&g, "input", "Placeholder");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {2, 8, 8, 3});
  SetOutputShapes(n, {{2, 8, 8, 3}});
  n = AddNode(&g, "labels", "Placeholder");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {2, 8, 8, 4});
  SetOutputShapes(n, {{2, 8, 8, 4}});

  n = AddNode(&g, "conv1/weights", "VariableV2");
  SetType(n, "dtype", f);
  SetShape((*n->mutable_attr())["shape"].mutable_shape(), {3, 3, 3, 4});
  SetString(n, "container", "");
  SetString(n, "shared_name", "");
  SetOutputShapes(n, {{3, 3, 3, 4}});
  n = AddNode(&g, "conv1/weights/read", "Identity", {"conv1/weights"});
  SetType(n, "T", f);
  (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@conv1/weights");
  SetOutputShapes(n, {{3, 3, 3, 4}});
  n = AddNode(&g, "conv1/Conv2D", "Conv2D", {"input", "conv1/weights/read"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  SetOutputShapes(n, {{2, 8, 8, 4}});
  n = AddNode(&g, "conv1/Relu", "Relu", {"conv1/Conv2D"});
  SetType(n, "T", f);
  SetOutputShapes(n, {{2, 8, 8, 4}});
  n = AddNode(&g, "loss/sub", "Sub", {"conv1/Relu", "labels"});
  SetType(n, "T", f);
  SetOutputShapes(n, {{2, 8, 8, 4}});

  n = AddNode(&g, "gradients/Shape", "Shape", {"loss/sub"});
  SetType(n, "T", f);
  SetType(n, "out_type", pb::DT_INT32);
  SetOutputShapes(n, {{4}});
  n = AddNode(&g, "gradients/grad_ys_0", "Const");
  SetType(n, "dtype", f);
  {
    pb::TensorProto* tp = (*n->mutable_attr())["value"].mutable_tensor();
    tp->set_dtype(f);
    tp->mutable_tensor_shape();
    tp->add_float_val(1.0f);
  }
  SetOutputShapes(n, {{}});
  n = AddNode(&g, "gradients/Fill", "Fill", {"gradients/Shape", "gradients/grad_ys_0"});
  SetType(n, "T", f);
  SetType(n, "index_type", pb::DT_INT32);
  SetOutputShapes(n, {{2, 8, 8, 4}});
  n = AddNode(&g, "gradients/loss/sub_grad/Identity", "Identity", {"gradients/Fill"});
  SetType(n, "T", f);
  SetOutputShapes(n, {{2, 8, 8, 4}});
  n = AddNode(&g, "gradients/conv1/Relu_grad/ReluGrad", "ReluGrad",
              {"gradients/loss/sub_grad/Identity", "conv1/Relu"});
  SetType(n, "T", f);
  SetOutputShapes(n, {{2, 8, 8, 4}});

  n = AddNode(&g, "gradients/conv1/Conv2D_grad/ShapeN", "ShapeN", {"input", "conv1/weights/read"});
  SetType(n, "T", f);
  (*n->mutable_attr())["N"].set_i(2);
  SetType(n, "out_type", pb::DT_INT32);
  SetOutputShapes(n, {{4}, {4}});
  n = AddNode(&g, "gradients/conv1/Conv2D_grad/Conv2DBackpropInput", "Conv2DBackpropInput",
              {"gradients/conv1/Conv2D_grad/ShapeN", "conv1/weights/read",
               "gradients/conv1/Relu_grad/ReluGrad"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  SetOutputShapes(n, {{2, 8, 8, 3}});
  n = AddNode(
      &g, "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter", "Conv2DBackpropFilter",
      {"input", "gradients/conv1/Conv2D_grad/ShapeN:1", "gradients/conv1/Relu_grad/ReluGrad"});
  SetConvAttrs(n, f, {1, 1, 1, 1}, "SAME", true);
  SetOutputShapes(n, {{3, 3, 3, 4}});
  AddNode(&g, "gradients/conv1/Conv2D_grad/tuple/group_deps", "NoOp",
          {"^gradients/conv1/Conv2D_grad/Conv2DBackpropInput",
           "^gradients/conv1/Conv2D_grad/Conv2DBackpropFilter"});
  n = AddNode(&g, "gradients/conv1/Conv2D_grad/tuple/control_dependency", "Identity",
              {"gradients/conv1/Conv2D_grad/Conv2DBackpropInput",
               "^gradients/conv1/Conv2D_grad/tuple/group_deps"});
  SetType(n, "T", f);
  (*n->mutable_attr())["_class"].mutable_list()->add_s(
      "loc:@gradients/conv1/Conv2D_grad/Conv2DBackpropInput");
  SetOutputShapes(n, {{2, 8, 8, 3}});
  n = AddNode(&g, "gradients/conv1/Conv2D_grad/tuple/control_dependency_1", "Identity",
              {"gradients/conv1/Conv2D_grad/Conv2DBackpropFilter",
               "^gradients/conv1/Conv2D_grad/tuple/group_deps"});
  SetType(n, "T", f);
  (*n->mutable_attr())["_class"].mutable_list()->add_s(
      "loc:@gradients/conv1/Conv2D_grad/Conv2DBackpropFilter");
  SetOutputShapes(n, {{3, 3, 3, 4}});

  n = AddNode(&g, "GradientDescent/learning_rate", "Const");
  SetType(n, "dtype", f);
  {
    pb::TensorProto* tp = (*n->mutable_attr())["value"].mutable_tensor();
    tp->set_dtype(f);
    tp->mutable_tensor_shape();
    tp->add_float_val(0.01f);
  }
  SetOutputShapes(n, {{}});
  n = AddNode(&g, "GradientDescent/update_conv1/weights/ApplyGradientDescent",
              "ApplyGradientDescent",
              {"conv1/weights", "GradientDescent/learning_rate",
               "gradients/conv1/Conv2D_grad/tuple/control_dependency_1"});
  SetType(n, "T", f);
  SetBool(n, "use_locking", false);
  (*n->mutable_attr())["_class"].mutable_list()->add_s("loc:@conv1/weights");
  SetOutputShapes(n, {{3, 3, 3, 4}});
  AddNode(&g, "GradientDescent", "NoOp",
          {"^GradientDescent/update_conv1/weights/ApplyGradientDescent"});
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: blockflow_make_tf_samples OUTPUT_DIR\n");
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
  return 0;
}
