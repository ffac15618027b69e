// The one table that registers every built-in block.
//
//   blockflow::RegisterBuiltinBlocks();            // idempotent; fills OpRegistry::Global()
//   const OpSchema* s = OpRegistry::Global().Find("Conv2D");
#pragma once

#include "core/schema.h"

namespace blockflow {

/// Registers every built-in block into OpRegistry::Global(), once (thread-safe).
void RegisterBuiltinBlocks();
/// Registers every built-in block into `registry`.
void RegisterBuiltinBlocks(OpRegistry& registry);

// One function per block family, called from register_blocks.cc only.
void RegisterBasicBlocks(OpRegistry& registry);      // blocks/basic: Const, Placeholder, Add, ...
void RegisterConvBlocks(OpRegistry& registry);       // blocks/conv: the six convolution blocks
void RegisterTfSupportBlocks(OpRegistry& registry);  // blocks/tf: Shape, ShapeN, NoOp

}  // namespace blockflow
