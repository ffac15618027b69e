#include "blocks/conv/isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace blockflow::conv::internal {
namespace {

Isa DetectIsa() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kBase;
}

Isa SupportedIsa() {
  static const Isa isa = DetectIsa();
  return isa;
}

Isa InitialIsa() {
  Isa isa = SupportedIsa();
  if (const char* env = std::getenv("BLOCKFLOW_CONV_ISA")) {
    Isa want = isa;
    if (std::strcmp(env, "base") == 0) want = Isa::kBase;
    if (std::strcmp(env, "avx2") == 0) want = Isa::kAvx2;
    if (std::strcmp(env, "avx512") == 0) want = Isa::kAvx512;
    if (static_cast<int>(want) < static_cast<int>(isa)) isa = want;
  }
  return isa;
}

std::atomic<int>& ActiveIsaStore() {
  static std::atomic<int> isa{static_cast<int>(InitialIsa())};
  return isa;
}

}  // namespace

Isa ActiveIsa() { return static_cast<Isa>(ActiveIsaStore().load(std::memory_order_relaxed)); }

void SetIsaForTesting(Isa isa) {
  const int clamped = std::min(static_cast<int>(isa), static_cast<int>(SupportedIsa()));
  ActiveIsaStore().store(clamped, std::memory_order_relaxed);
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    default:
      return "base";
  }
}

}  // namespace blockflow::conv::internal
