#include "blocks/register_blocks.h"
namespace blockflow {
void RegisterTfSupportBlocks(OpRegistry&) {}  // filled in by the TensorFlow support family
}  // namespace blockflow
