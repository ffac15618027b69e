#include "blocks/register_blocks.h"
namespace blockflow {
void RegisterConvBlocks(OpRegistry&) {}  // filled in by the conv family
}  // namespace blockflow
