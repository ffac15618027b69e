// Blocks that TensorFlow graphs use around the real work: Shape, ShapeN, NoOp.
// Gradient graphs compute conv sizes with Shape/ShapeN; their shape functions set
// the value whenever the input's shape is fully defined, so those sizes fold at
// analysis time and the conv blocks downstream see `filter_sizes`/`input_sizes`.
#include <limits>
#include <memory>

#include "blocks/register_blocks.h"

namespace blockflow {
namespace {

constexpr const char* kOutTypeDoc = "Element type of the result: int32 or int64.";

DType OutType(const AttrMap& attrs) {
  return attrs.GetString("out_type") == "int64" ? DType::kInt64 : DType::kInt32;
}

// The dims of `shape` as a 1-D tensor of `dtype`; an error when a dim does not fit int32.
Expected<Tensor> ShapeTensor(const Shape& shape, DType dtype, const std::string& port) {
  Tensor t(dtype, Shape{shape.rank()});
  for (int i = 0; i < shape.rank(); ++i) {
    if (dtype == DType::kInt32 && shape.dim(i) > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument("input '" + port + "' has shape " + shape.ToString() + ": dimension " +
                             std::to_string(i) +
                             " does not fit out_type int32; use out_type int64");
    }
    t.SetFromDouble(i, static_cast<double>(shape.dim(i)));
  }
  return t;
}

// Output info for the shape of input `info`: [rank], with the value when the shape is known.
Expected<PortInfo> ShapeInfo(const PortInfo& info, DType dtype, const std::string& port) {
  PortInfo out{dtype, Shape{info.shape.rank()}, nullptr};
  if (info.shape.IsFullyDefined()) {
    ASSIGN_OR_RETURN(Tensor t, ShapeTensor(info.shape, dtype, port));
    out.value = std::make_shared<const Tensor>(std::move(t));
  }
  return out;
}

// Shape (`list` false: one input, one output) and ShapeN (a list of N inputs, one output each):
// output i holds the dims of input i, set at analysis time whenever that shape is known.
OpSchema ShapeSchema(bool list) {
  auto port = [list](size_t i) {
    return list ? "input[" + std::to_string(i) + "]" : std::string("input");
  };
  OpSchema s(list ? "ShapeN" : "Shape");
  s.Category("TensorFlow");
  if (list) {
    s.Doc("The shapes of N tensors, one 1-D integer output each (TensorFlow's ShapeN).")
        .InputList("input", AllDTypes(), "N >= 1 tensors.")
        .Output("output", {DType::kInt32, DType::kInt64}, "Output i: the dimensions of input i.")
        .Batch(BatchRule::Fn([](const BatchContext& c) {
          const BatchValue& in = c.batch[static_cast<size_t>(c.output)];
          if (in.kind == BatchKind::kCarries) return BatchValue::BatchShape(in.axis);
          return in.kind == BatchKind::kUndecided ? in : BatchValue::Free();
        }))
        .VariadicOutputs();
  } else {
    s.Doc("The shape of `input` as a 1-D integer tensor (TensorFlow's Shape).")
        .Input("input", AllDTypes(), "Any tensor.")
        .Output("output", {DType::kInt32, DType::kInt64}, "Its dimensions, [rank].")
        .Batch(BatchRule::ShapeOf("input"));
  }
  s.EnumAttr("out_type", {"int32", "int64"}, "int32", kOutTypeDoc)
      .SetShapeFn([port](InferContext& c) -> Status {
        if (c.num_inputs() < 1)
          return InvalidArgument("list input 'input' needs at least one tensor");
        for (int i = 0; i < c.num_inputs(); ++i) {
          ASSIGN_OR_RETURN(PortInfo out,
                           ShapeInfo(c.input(i), OutType(c.attrs()), port(static_cast<size_t>(i))));
          c.SetOutput(i, std::move(out));
        }
        return Status::OK();
      })
      .SetReferenceKernel([port](KernelContext& k) -> Status {
        k.outputs.clear();
        for (size_t i = 0; i < k.inputs.size(); ++i) {
          ASSIGN_OR_RETURN(Tensor t, ShapeTensor(k.inputs[i]->shape(), OutType(*k.attrs), port(i)));
          k.outputs.push_back(std::move(t));
        }
        return Status::OK();
      });
  return s;
}

}  // namespace

void RegisterTfSupportBlocks(OpRegistry& registry) {
  registry.Register(ShapeSchema(false));
  registry.Register(ShapeSchema(true));

  // NoOp: nothing. TensorFlow uses it to group control dependencies, which blockflow drops.
  registry.Register(OpSchema("NoOp")
                        .Category("TensorFlow")
                        .Doc("Does nothing; TensorFlow groups control dependencies with it.")
                        .SetShapeFn([](InferContext&) { return Status::OK(); })
                        .SetReferenceKernel([](KernelContext& k) {
                          k.outputs.clear();
                          return Status::OK();
                        }));
}

}  // namespace blockflow
