// Building and running a blockflow graph from C++, the way TensorFlow's C++ client API
// does it: a Scope builds the graph, op constructors take inputs and attrs, and a
// ClientSession runs it. The graph it builds is then saved as graph JSON v1.
//
//   scope_example [OUT_GRAPH.json]
//
// It computes the gradient of a depthwise convolution with respect to its input, checks it
// against the adjoint identity <DepthwiseConv2dNative(x, w), dy> = <x, BackpropInput(w, dy)>,
// and exits non-zero when the two sides disagree.
#include <cmath>
#include <cstdio>

#include "blocks/ops.h"
#include "blocks/register_blocks.h"

using namespace blockflow;  // NOLINT: example brevity

int main(int argc, char** argv) {
  RegisterBuiltinBlocks();
  Scope root = Scope::NewRootScope();

  // x: [1, 8, 8, 2] input, w: [3, 3, 2, 2] filter (multiplier 2), dy: the output gradient.
  auto x_shape = ops::Const(root.WithOpName("x_shape"), Tensor::FromVector<int32_t>({1, 8, 8, 2}));
  auto w_shape = ops::Const(root.WithOpName("w_shape"), Tensor::FromVector<int32_t>({3, 3, 2, 2}));
  auto x = ops::RandomUniform(root.WithOpName("x"), x_shape, DType::kFloat64, 1);
  auto w = ops::RandomStandardNormal(root.WithOpName("w"), w_shape, DType::kFloat64, 2);
  auto dy = ops::Placeholder(root.WithOpName("dy"), DType::kFloat64, Shape{1, 4, 4, 4});

  auto y = ops::DepthwiseConv2dNative(root.WithOpName("y"), x, w, {1, 2, 2, 1}, "SAME");
  auto dx = ops::DepthwiseConv2dNativeBackpropInput(root.WithOpName("dx"), x_shape, w, dy,
                                                    {1, 2, 2, 1}, "SAME");

  // The two inner products of the adjoint identity, as graph nodes.
  auto all_axes =
      ops::Const(root.WithOpName("all_axes"), Tensor::FromVector<int32_t>({0, 1, 2, 3}));
  auto lhs = ops::Sum(root.WithOpName("lhs"), ops::Mul(root, y, dy), all_axes);
  auto rhs = ops::Sum(root.WithOpName("rhs"), ops::Mul(root, x, dx), all_axes);

  Tensor dy_value(DType::kFloat64, Shape{1, 4, 4, 4});
  for (int64_t i = 0; i < dy_value.num_elements(); ++i)
    dy_value.SetFromDouble(i, std::sin(0.7 * static_cast<double>(i)));

  ClientSession session(root);
  std::vector<Tensor> outputs;
  Status status = session.Run({{dy, dy_value}}, {lhs, rhs, dx}, &outputs);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  const double a = outputs[0].GetAsDouble(0), b = outputs[1].GetAsDouble(0);
  std::printf("<DepthwiseConv2dNative(x, w), dy> = %.15g\n", a);
  std::printf("<x, DepthwiseConv2dNativeBackpropInput(w, dy)> = %.15g\n", b);
  std::printf("dx: %s\n", outputs[2].DebugString().c_str());

  if (argc > 1) {
    status = SaveGraphFile(root.graph(), argv[1]);
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", status.message().c_str());
      return 1;
    }
    std::printf("saved the graph to %s\n", argv[1]);
  }
  if (std::fabs(a - b) > 1e-12 * std::max(1.0, std::fabs(a))) {
    std::fprintf(stderr, "error: the adjoint identity does not hold\n");
    return 1;
  }
  return 0;
}
