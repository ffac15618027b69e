#include "blocks/register_blocks.h"

#include <mutex>

namespace blockflow {

void RegisterBuiltinBlocks(OpRegistry& registry) {
  RegisterBasicBlocks(registry);
  RegisterConvBlocks(registry);
  RegisterTfSupportBlocks(registry);
}

void RegisterBuiltinBlocks() {
  static std::once_flag once;
  std::call_once(once, [] { RegisterBuiltinBlocks(OpRegistry::Global()); });
}

}  // namespace blockflow
