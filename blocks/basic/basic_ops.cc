#include "blocks/basic/basic_ops.h"

#include <cmath>

#include "blocks/register_blocks.h"

namespace blockflow::ops {
namespace {

Output Add1(const Scope& scope, const std::string& op,
            const std::vector<std::pair<std::string, std::vector<Output>>>& in,
            const nlohmann::json& attrs = nlohmann::json::object()) {
  RegisterBuiltinBlocks();
  return scope.AddNode(op, in, attrs);
}

/// An elementwise op of two tensors, ports x and y (Add, Sub, Mul).
Output XY(const Scope& scope, const std::string& op, const Output& x, const Output& y) {
  return Add1(scope, op, {{"x", {x}}, {"y", {y}}});
}

}  // namespace

nlohmann::json TensorToJsonValues(const Tensor& t) {
  nlohmann::json values = nlohmann::json::array();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kInt32:
        values.push_back(t.data<int32_t>()[i]);
        break;
      case DType::kInt64:
        values.push_back(t.data<int64_t>()[i]);
        break;
      case DType::kBool:
        values.push_back(t.data<bool>()[i]);
        break;
      default: {
        const double v = t.GetAsDouble(i);
        // JSON has no NaN or infinity; Const reads these strings back.
        if (std::isnan(v))
          values.push_back("nan");
        else if (std::isinf(v))
          values.push_back(v > 0 ? "inf" : "-inf");
        else
          values.push_back(v);
        break;
      }
    }
  }
  return values;
}

Output Const(const Scope& scope, const Tensor& value) {
  return Add1(scope, "Const", {},
              {{"dtype", std::string(DTypeName(value.dtype()))},
               {"shape", value.shape().dims()},
               {"value", TensorToJsonValues(value)}});
}

Output ConstFromFile(const Scope& scope, DType dtype, const std::string& file) {
  return Add1(scope, "Const", {}, {{"dtype", std::string(DTypeName(dtype))}, {"file", file}});
}

Output Placeholder(const Scope& scope, DType dtype, const Shape& shape) {
  return Add1(scope, "Placeholder", {},
              {{"dtype", std::string(DTypeName(dtype))}, {"shape", shape.dims()}});
}

Output Identity(const Scope& scope, const Output& input) {
  return Add1(scope, "Identity", {{"input", {input}}});
}
Output Add(const Scope& scope, const Output& x, const Output& y) { return XY(scope, "Add", x, y); }
Output Sub(const Scope& scope, const Output& x, const Output& y) { return XY(scope, "Sub", x, y); }
Output Mul(const Scope& scope, const Output& x, const Output& y) { return XY(scope, "Mul", x, y); }

Output Sum(const Scope& scope, const Output& input, const Output& axis, bool keep_dims) {
  nlohmann::json attrs = nlohmann::json::object();
  if (keep_dims) attrs["keep_dims"] = true;
  return Add1(scope, "Sum", {{"input", {input}}, {"axis", {axis}}}, attrs);
}

Output Reshape(const Scope& scope, const Output& tensor, const Output& shape) {
  return Add1(scope, "Reshape", {{"tensor", {tensor}}, {"shape", {shape}}});
}
Output Transpose(const Scope& scope, const Output& x, const Output& perm) {
  return Add1(scope, "Transpose", {{"x", {x}}, {"perm", {perm}}});
}
Output Fill(const Scope& scope, const Output& dims, const Output& value) {
  return Add1(scope, "Fill", {{"dims", {dims}}, {"value", {value}}});
}
Output ZerosLike(const Scope& scope, const Output& x) {
  return Add1(scope, "ZerosLike", {{"x", {x}}});
}

Output RandomUniform(const Scope& scope, const Output& shape, DType dtype, int64_t seed,
                     int64_t seed2) {
  return Add1(scope, "RandomUniform", {{"shape", {shape}}},
              {{"dtype", std::string(DTypeName(dtype))}, {"seed", seed}, {"seed2", seed2}});
}
Output RandomStandardNormal(const Scope& scope, const Output& shape, DType dtype, int64_t seed,
                            int64_t seed2) {
  return Add1(scope, "RandomStandardNormal", {{"shape", {shape}}},
              {{"dtype", std::string(DTypeName(dtype))}, {"seed", seed}, {"seed2", seed2}});
}

}  // namespace blockflow::ops
