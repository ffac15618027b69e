// The basic blocks that graphs around the convolutions need, with TensorFlow's
// names and semantics. One registration function per file.
#pragma once

#include "core/schema.h"

namespace blockflow {

void RegisterSourceBlocks(
    OpRegistry& registry);  // source_blocks.cc: Const, Placeholder, Fill, ZerosLike, Random*
void RegisterMathBlocks(OpRegistry& registry);   // math_blocks.cc: Add, Sub, Mul, Sum
void RegisterArrayBlocks(OpRegistry& registry);  // array_blocks.cc: Identity, Reshape, Transpose

/// Reads a rank-1 int32/int64 constant input as int64s; InvalidArgument naming `port` otherwise.
Expected<std::vector<int64_t>> ConstIntVector(const PortInfo& info, const std::string& port);

/// For a rank-1 int input `port` (index `sizes`) that names a shape but is not constant: sets
/// output 0 to `dtype` and a shape of as many unknown dims as the input's length, which must be
/// known.
Status SetOutputOfUnknownSizes(InferContext& c, int sizes, const std::string& port, DType dtype);

}  // namespace blockflow
