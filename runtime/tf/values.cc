#include "runtime/tf/values.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/limits.h"
#include "core/text.h"

namespace blockflow::tfimport {
namespace {

std::optional<DType> FromTfDType(int t) {
  static constexpr std::pair<pb::DataType, DType> kTypes[] = {
      {pb::DT_FLOAT, DType::kFloat32},    {pb::DT_DOUBLE, DType::kFloat64},
      {pb::DT_INT32, DType::kInt32},      {pb::DT_INT64, DType::kInt64},
      {pb::DT_BOOL, DType::kBool},        {pb::DT_HALF, DType::kFloat16},
      {pb::DT_BFLOAT16, DType::kBFloat16}};
  if (t > 100) t -= 100;  // reference types (old variables) carry the same values
  for (const auto& [tf, dtype] : kTypes) {
    if (tf == t) return dtype;
  }
  return std::nullopt;
}

std::string TfDTypeName(int t) {
  const std::string& n = pb::DataType_Name(static_cast<pb::DataType>(t));
  return n.empty() ? "DataType " + std::to_string(t) : n;
}

// The TensorProto list that holds values of element type T (16-bit floats as bit patterns in
// half_val, widened to int32).
template <typename T>
const auto& ValueList(const pb::TensorProto& tp) {
  if constexpr (std::is_same_v<T, float>) {
    return tp.float_val();
  } else if constexpr (std::is_same_v<T, double>) {
    return tp.double_val();
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return tp.int_val();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return tp.int64_val();
  } else if constexpr (std::is_same_v<T, bool>) {
    return tp.bool_val();
  } else {
    return tp.half_val();
  }
}

// One list value as element type T.
template <typename T, typename V>
T FromListValue(V v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T::FromBits(static_cast<uint16_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

// TensorFlow's typed value lists: missing trailing values repeat the last one, an
// empty list means zeros.
template <typename T>
Status FillFromList(const pb::TensorProto& tp, Tensor* t, const std::string& what) {
  const auto& list = ValueList<T>(tp);
  const int64_t n = t->num_elements();
  if (static_cast<int64_t>(list.size()) > n) {
    return InvalidArgument(what + ": " + std::to_string(list.size()) + " values for shape " +
                           t->shape().ToString() + " (" + std::to_string(n) + " elements)");
  }
  if (list.empty()) return Status::OK();
  T* p = t->data<T>();
  for (int64_t i = 0; i < n; ++i) {
    p[i] = FromListValue<T>(list[static_cast<int>(std::min<int64_t>(i, list.size() - 1))]);
  }
  return Status::OK();
}

}  // namespace

Expected<DType> ToDType(int t, const std::string& what) {
  std::optional<DType> d = FromTfDType(t);
  if (!d)
    return InvalidArgument(what + ": dtype " + TfDTypeName(t) + " has no blockflow equivalent");
  return *d;
}

std::optional<std::vector<int64_t>> ShapeDims(const pb::TensorShapeProto& s) {
  if (s.unknown_rank()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : s.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return dims;
}

nlohmann::json DimsJson(const std::vector<int64_t>& dims) {
  nlohmann::json a = nlohmann::json::array();
  for (int64_t d : dims) a.push_back(d);
  return a;
}

Expected<Tensor> TensorFromProto(const pb::TensorProto& tp, const std::string& what,
                                 uint64_t memory_limit) {
  ASSIGN_OR_RETURN(DType dtype, ToDType(tp.dtype(), what));
  std::optional<std::vector<int64_t>> dims = ShapeDims(tp.tensor_shape());
  if (!dims) return InvalidArgument(what + ": a constant tensor needs a known shape");
  // Bound the size before allocating: a few repeated values can describe a huge tensor.
  constexpr int64_t kMaxBytes = int64_t{1} << 31;
  int64_t bytes = static_cast<int64_t>(DTypeSize(dtype));
  for (int64_t d : *dims) {
    if (d < 0) return InvalidArgument(what + ": a constant tensor needs a fully known shape");
    if (d > 0 && bytes > kMaxBytes / d) {
      return InvalidArgument(what + ": shape " + Shape(*dims).ToString() +
                             " is too large for a constant (over 2 GiB)");
    }
    bytes *= d;
  }
  RETURN_IF_ERROR(CheckTensorFits(what, dtype, Shape(*dims), memory_limit));
  Tensor t(dtype, Shape(*dims));
  const std::string& content = tp.tensor_content();
  if (!content.empty()) {
    if (content.size() != t.num_bytes()) {
      return InvalidArgument(what + ": tensor_content has " + std::to_string(content.size()) +
                             " bytes, shape " + t.shape().ToString() + " of " +
                             std::string(DTypeName(dtype)) + " needs " +
                             std::to_string(t.num_bytes()));
    }
    // TensorFlow writes tensor_content in host order, little-endian on every platform it
    // ships; copying it as is assumes a little-endian host too.
    static_assert(std::endian::native == std::endian::little, "tensor_content is little-endian");
    std::memcpy(t.raw(), content.data(), content.size());
    if (dtype == DType::kBool) {
      // A bool is one byte; anything but 0 is true (a bool object must hold 0 or 1).
      uint8_t* b = static_cast<uint8_t*>(t.raw());
      for (size_t i = 0; i < content.size(); ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  Status filled = InvalidArgument(what + ": unsupported dtype");
  DispatchAll(dtype, [&](auto zero) { filled = FillFromList<decltype(zero)>(tp, &t, what); });
  RETURN_IF_ERROR(filled);
  return t;
}

Expected<nlohmann::json> AttrToJson(const pb::AttrValue& v, const std::string& what) {
  using nlohmann::json;
  switch (v.value_case()) {
    case pb::AttrValue::kS:
      // A bytes field in TensorFlow; graph JSON holds text only.
      if (!IsValidUtf8(v.s()))
        return InvalidArgument(what + ": holds bytes that are not UTF-8 text");
      return json(v.s());
    case pb::AttrValue::kI:
      return json(v.i());
    case pb::AttrValue::kF:
      return json(static_cast<double>(v.f()));
    case pb::AttrValue::kB:
      return json(v.b());
    case pb::AttrValue::kType: {
      ASSIGN_OR_RETURN(DType d, ToDType(v.type(), what));
      return json(std::string(DTypeName(d)));
    }
    case pb::AttrValue::kShape: {
      std::optional<std::vector<int64_t>> dims = ShapeDims(v.shape());
      if (!dims) return InvalidArgument(what + ": a shape of unknown rank has no blockflow form");
      return DimsJson(*dims);
    }
    case pb::AttrValue::kList: {
      const pb::AttrValue::ListValue& l = v.list();
      json a = json::array();
      for (int64_t i : l.i()) a.push_back(i);
      for (float f : l.f()) a.push_back(static_cast<double>(f));
      for (const std::string& s : l.s()) {
        if (!IsValidUtf8(s)) return InvalidArgument(what + ": holds bytes that are not UTF-8 text");
        a.push_back(s);
      }
      for (bool b : l.b()) a.push_back(b);
      for (int t : l.type()) {
        ASSIGN_OR_RETURN(DType d, ToDType(t, what));
        a.push_back(std::string(DTypeName(d)));
      }
      for (const auto& s : l.shape()) {
        std::optional<std::vector<int64_t>> dims = ShapeDims(s);
        if (!dims) return InvalidArgument(what + ": a shape of unknown rank has no blockflow form");
        a.push_back(DimsJson(*dims));
      }
      if (l.tensor_size() || l.func_size())
        return InvalidArgument(what + ": lists of tensors or functions are not supported");
      return a;
    }
    case pb::AttrValue::kTensor:
      return InvalidArgument(what + ": tensor values are supported on Const only");
    case pb::AttrValue::kFunc:
      return InvalidArgument(what + ": function attrs are not supported");
    case pb::AttrValue::kPlaceholder:
      return InvalidArgument(what + ": function placeholders are not supported");
    default:
      return InvalidArgument(what + ": empty attr value");
  }
}

}  // namespace blockflow::tfimport
