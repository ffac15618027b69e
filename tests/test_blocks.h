// Blocks that only tests register, to show that a new block needs no editor or importer code:
// the schema facts carry everything block-specific.
#pragma once

#include <string>

#include "core/schema.h"

namespace blockflow::testing {

/// TensorFlow's MaxPool: `ksize` and `strides` (4 ints each, per dimension of data_format),
/// `padding` SAME or VALID, `data_format`. Its shape function infers the output; it has no
/// kernel (the tests that use it never run it).
inline OpSchema MaxPoolSchema() {
  const std::vector<DType> kT = FloatDTypes();
  return OpSchema("MaxPool")
      .Category("Pooling")
      .Doc("Maximum over each window of `input`.")
      .Input("input", kT, "4-D input in data_format order.")
      .Layout(LayoutRole::kActivation)
      .Output("output", kT, "The maxima, one per window.")
      .Layout(LayoutRole::kActivation)
      .RequiredAttr("ksize", AttrType::kInts, "Window size per dimension of data_format.")
      .Length(4)
      .RequiredAttr("strides", AttrType::kInts, "Window stride per dimension of data_format.")
      .Length(4)
      .EnumAttr("padding", {"SAME", "VALID"}, "", "SAME or VALID, as for Conv2D.")
      .EnumAttr("data_format", {"NHWC", "NCHW"}, "NHWC", "Layout of input and output.")
      .SetShapeFn([](InferContext& c) -> Status {
        const std::vector<int64_t> k = c.attrs().GetInts("ksize");
        const std::vector<int64_t> s = c.attrs().GetInts("strides");
        const Shape& in = c.input(0).shape;
        if (k.size() != 4 || s.size() != 4 || in.rank() != 4) {
          return InvalidArgument("ksize and strides need 4 ints and input rank 4");
        }
        const bool same = c.attrs().GetString("padding") == "SAME";
        Shape out = in;
        for (int d = 0; d < 4; ++d) {
          const size_t u = static_cast<size_t>(d);
          if (in.dim(d) < 0 || k[u] < 1 || s[u] < 1) continue;
          const int64_t span = same ? in.dim(d) : in.dim(d) - k[u] + 1;
          out.set_dim(d, span <= 0 ? 0 : (span + s[u] - 1) / s[u]);
        }
        c.SetOutput(0, c.input(0).dtype, out);
        return Status::OK();
      });
}

}  // namespace blockflow::testing
