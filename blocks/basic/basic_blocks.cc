#include "blocks/basic/basic_blocks.h"

#include "blocks/register_blocks.h"

namespace blockflow {

void RegisterBasicBlocks(OpRegistry& registry) {
  RegisterSourceBlocks(registry);
  RegisterMathBlocks(registry);
  RegisterArrayBlocks(registry);
}

Expected<std::vector<int64_t>> ConstIntVector(const PortInfo& info, const std::string& port) {
  if (!info.value) return InvalidArgument("input '" + port + "' must be a known constant here");
  if (info.value->shape().rank() != 1) {
    return InvalidArgument("input '" + port + "' must be a 1-D tensor, got shape " +
                           info.value->shape().ToString());
  }
  return info.value->ToInt64Vector();
}

Status SetOutputOfUnknownSizes(InferContext& c, int sizes, const std::string& port, DType dtype) {
  const Shape& s = c.input(sizes).shape;
  if (s.rank() != 1 || s.dim(0) < 0) {
    return InvalidArgument("input '" + port + "' must be a 1-D tensor of known length");
  }
  c.SetOutput(0, dtype, Shape(std::vector<int64_t>(static_cast<size_t>(s.dim(0)), -1)));
  return Status::OK();
}

}  // namespace blockflow
