// Fuzz target: .npy bytes -> ParseNpy -> SerializeNpy -> ParseNpy (the round trip must hold).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/npy.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  blockflow::Expected<blockflow::Tensor> t = blockflow::ParseNpy(bytes, "fuzz.npy");
  if (!t.ok()) {
    blockflow::fuzz::Check(!t.status().message().empty(), "a refused .npy says why");
    return 0;
  }
  const std::string again_bytes = blockflow::SerializeNpy(*t);
  blockflow::Expected<blockflow::Tensor> again = blockflow::ParseNpy(again_bytes, "again.npy");
  blockflow::fuzz::Check(again.ok(), "a parsed .npy parses again after writing");
  if (!again.ok()) return 0;
  blockflow::fuzz::Check(again->BitwiseEquals(*t), "the round trip keeps every byte");
  return 0;
}
