// Decoding TensorFlow values: dtypes, shapes, TensorProtos and attr values, into blockflow
// tensors and graph JSON. Errors begin with `what`, the caller's name for the value.
//
//   ASSIGN_OR_RETURN(Tensor t, TensorFromProto(attr.tensor(), "node 'c' (Const): attr 'value'"));
//   ASSIGN_OR_RETURN(nlohmann::json strides, AttrToJson(attr, "node 'x' (Conv2D): attr
//   'strides'"));
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "tf_graph.pb.h"

namespace blockflow::tfimport {

namespace pb = ::blockflow::tf;

/// The blockflow dtype of TensorFlow DataType `t`; an error naming it when there is none.
Expected<DType> ToDType(int t, const std::string& what);
/// A TensorShapeProto as dims (-1 unknown); nullopt for unknown rank.
std::optional<std::vector<int64_t>> ShapeDims(const pb::TensorShapeProto& shape);
/// Dims as a JSON array.
nlohmann::json DimsJson(const std::vector<int64_t>& dims);
/// A constant tensor: from tensor_content, or from the typed value list (missing trailing values
/// repeat the last one, an empty list means zeros). Bounded to 2 GiB and to the memory limit
/// (`memory_limit` 0: the default), checked before anything is allocated.
Expected<Tensor> TensorFromProto(const pb::TensorProto& proto, const std::string& what,
                                 uint64_t memory_limit = 0);
/// One attr value in graph JSON form (list(int) → ints, string → string, type → dtype name,
/// shape → list).
Expected<nlohmann::json> AttrToJson(const pb::AttrValue& value, const std::string& what);

}  // namespace blockflow::tfimport
