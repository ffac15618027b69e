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

}  // namespace blockflow
