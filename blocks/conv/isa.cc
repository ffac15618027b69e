#include "blocks/conv/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "core/limits.h"

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

#if defined(__x86_64__) && defined(__GNUC__)
// Whether the CPU is AMD's (GCC's and clang's reading of CPUID's vendor string).
bool IsAmd() {
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
  }();
  return amd;
}
#endif

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

#if defined(__x86_64__) && defined(__GNUC__)
BF_TARGET_AVX2 void Transpose8x8Avx2(const float* src, int64_t src_stride, float* dst,
                                     int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves swapped across.
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#else
void Transpose8x8Avx2(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) dst[j * dst_stride + i] = src[i * src_stride + j];
}
#endif

// Where Linux describes CPU 0's caches.
constexpr char kLinuxCaches[] = "/sys/devices/system/cpu/cpu0/cache";

int64_t CacheBytesIn(const std::string& dir, int level) {
  for (int i = 0;; ++i) {
    const std::string index = dir + "/index" + std::to_string(i) + "/";
    std::ifstream level_file(index + "level");
    int found = 0;
    if (!(level_file >> found)) return 0;  // no more caches
    std::string type, size;
    std::ifstream(index + "type") >> type;
    std::ifstream(index + "size") >> size;
    if (found != level || type == "Instruction" || size.empty()) continue;
    char* end = nullptr;
    const long long value = std::strtoll(size.c_str(), &end, 10);
    const int64_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
    if (value > 0) return value * unit;
  }
}

// Where Linux did not describe the caches, the AVX-512 EPYC guest's CPUID 0x80000006 (and its
// C library, which reads it) gave the L3 as 508 MB, and no operand outgrew it. At 32 MB, the L3
// its cores share, the depthwise sweeps of operands past it prefetch rows ahead, the depthwise
// tiles of operands past 8 MB prefetch their next result row, and the Winograd forward streams a
// shared transformed filter past 16 MB (PrefetchesRowsAhead, winograd.cc). Paired calls, 32 MB
// against 508 MB, one pinned core: float64 forward and input gradient of mnv2_dw_56x144 (58 MB)
// 0.74-0.76 of the time, mnv1_dw4_56x128 0.81-0.83, mnv1_dw1_112x32 0.85-0.90; float32 at batch
// 16 (51-58 MB) 0.64-0.72; at batch 32, two threads, 0.66-0.71. Slower: float32 at batch 16 on
// two threads, mnv1_dw1 1.07-1.14 (mnv2_dw_56x144 0.87). The suite's float32 layers (the
// tiles of its stride-2 and 5x5 layers among them) within 5% either way; the Winograd forwards
// of 14 x 14 x 512 -> 512 (batch 8) and 7 x 7 x 1024 -> 1024 (batch 16) 0.97-0.99.
int64_t CoreL3Bytes(const CpuL3& cpu) {
  if (cpu.topology_bytes > 0) return cpu.topology_bytes;
  if (!cpu.amd || cpu.family < 0x17) return cpu.reported_bytes;
  const int64_t complex = int64_t{cpu.family == 0x17 ? 16 : 32} << 20;
  return std::min(cpu.reported_bytes, complex);
}

int64_t AmdTopologyCacheBytes(uint32_t ebx, uint32_t ecx) {
  const int64_t line_ways = int64_t{((ebx >> 22) & 0x3ff) + 1} * (((ebx >> 12) & 0x3ff) + 1) *
                            ((ebx & 0xfff) + 1);  // at most 2^32
  int64_t bytes = 0;
  return __builtin_mul_overflow(line_ways, int64_t{ecx} + 1, &bytes) ? 0 : bytes;
}

CpuL3 HostCpuL3() {
  CpuL3 cpu;
  cpu.reported_bytes = std::max<long>(0, sysconf(_SC_LEVEL3_CACHE_SIZE));
#if defined(__x86_64__) && defined(__GNUC__)
  cpu.amd = IsAmd();
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return cpu;
  const int base_family = static_cast<int>((a >> 8) & 0xf);
  cpu.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
  if (!cpu.amd) return cpu;
  // AMD's L3 as CPUID 0x80000006 gives it (EDX's bits 31:18, in 512 KB), read here rather than
  // through the C library, whose later versions read only the topology below.
  const unsigned max_extended = __get_cpuid_max(0x80000000, nullptr);
  if (max_extended >= 0x80000006 && __get_cpuid(0x80000006, &a, &b, &c, &d) != 0 &&
      (d >> 18) != 0) {
    cpu.reported_bytes = int64_t{d >> 18} * (int64_t{512} << 10);
  }
  // AMD's cache topology: a subleaf per cache, EAX's type (0: no more) and level.
  if (max_extended < 0x8000001d) return cpu;
  if (__get_cpuid(0x80000001, &a, &b, &c, &d) == 0 || (c & (1U << 22)) == 0) return cpu;
  for (unsigned sub = 0; sub < 8; ++sub) {
    __cpuid_count(0x8000001d, sub, a, b, c, d);
    if ((a & 0x1f) == 0) break;
    if (((a >> 5) & 7) != 3) continue;
    cpu.topology_bytes = AmdTopologyCacheBytes(b, c);
  }
#endif
  return cpu;
}

namespace {
// A cache level's size (0: not known) and whether Linux described it.
struct KnownCache {
  int64_t bytes = 0;
  bool from_linux = false;
};
// Level `level` (1 to 3) as CacheBytes takes it, read once.
const KnownCache& Known(int level) {
  static const std::array<KnownCache, 3> levels = [] {
    const int names[2] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE};
    std::array<KnownCache, 3> read;
    for (int l = 1; l <= 3; ++l) {
      KnownCache& k = read[l - 1];
      k.bytes = CacheBytesIn(kLinuxCaches, l);
      k.from_linux = k.bytes > 0;
      if (!k.from_linux)
        k.bytes = l == 3 ? CoreL3Bytes(HostCpuL3()) : std::max<long>(0, sysconf(names[l - 1]));
    }
    return read;
  }();
  return levels[level - 1];
}
}  // namespace

int64_t CacheBytes(int level, int64_t fallback) {
  const int64_t known = level >= 1 && level <= 3 ? Known(level).bytes : 0;
  return known > 0 ? known : fallback;
}

std::string FormatCacheSummary(const int64_t (&bytes)[3], const bool (&from_linux)[3]) {
  const bool alike = from_linux[0] == from_linux[1] && from_linux[1] == from_linux[2];
  const auto source = [](bool described) {
    return described ? "as Linux describes it" : "the CPU's";
  };
  std::string summary;
  for (int i = 0; i < 3; ++i) {
    summary += (i > 0 ? ", L" : "L") + std::to_string(i + 1) + " " +
               (bytes[i] > 0 ? FormatBytes(static_cast<long double>(bytes[i])) : "unknown");
    if (!alike) summary += std::string(" (") + source(from_linux[i]) + ")";
  }
  if (alike) {
    summary += from_linux[0] ? " (as Linux describes them)" : " (the CPU's; Linux describes none)";
  }
  return summary;
}

std::string CacheSummary() {
  int64_t bytes[3];
  bool from_linux[3];
  for (int i = 0; i < 3; ++i) {
    bytes[i] = Known(i + 1).bytes;
    from_linux[i] = Known(i + 1).from_linux;
  }
  return FormatCacheSummary(bytes, from_linux);
}

namespace {
std::atomic<int64_t>& SharedCacheOverride() {
  static std::atomic<int64_t> bytes{-1};
  return bytes;
}

// The L3's size as the functions below take it (0: unknown).
int64_t SharedCacheBytes() {
  const int64_t forced = SharedCacheOverride().load(std::memory_order_relaxed);
  return forced >= 0 ? forced : CacheBytes(3, 0);
}
}  // namespace

// On the AVX-512 EPYC (32 MB L3 per core complex, shared in the guest with unseen neighbours)
// results that fit half of it run faster stored past the caches, unlike on Cascade Lake: each
// kernel's own build with and without, processes alternated, one pinned core: Conv2D
// resnet_56x64 16.48 -> 16.19 ms, the stem 4.38 -> 4.17, the 1x1 to 1024 channels 7.60 ->
// 7.41, resnet_28x128 15.92 -> 15.73 (medians, 3 + 3 processes); the depthwise forward of
// mnv1_dw4_56x128 (12.8 MB) 1.6-1.8 -> 0.78-0.83 ms, mnv1_dw1_112x32 1.1-1.4 -> 0.73-0.82,
// mnv2_dw_112x96_s2 4.4 -> 3.9-4.0 (medians of the forward's NHWC and NCHW calls together). In
// bf_vs_onednn, two full runs each way, the geomeans against oneDNN blocked on one thread / two:
// depthwise forward 1.05-1.07 -> 0.90-0.91 / 0.97-0.99 -> 0.91-0.92, input gradient 0.86-0.89
// -> 0.69-0.71 / 0.77-0.83 -> 0.69, Conv2D 1.05 -> 1.03 / 1.05-1.06 -> 1.03-1.04. Likely the
// single core's link between L2 and L3, which a plain store crosses twice (the line read, then
// evicted dirty).
bool SharedCacheKeepsResults() {
  if (SharedCacheOverride().load(std::memory_order_relaxed) >= 0) return true;
#if defined(__x86_64__) && defined(__GNUC__)
  return !IsAmd();
#else
  return true;
#endif
}

bool FitsSharedCache(int64_t bytes) {
  return SharedCacheKeepsResults() && bytes <= SharedCacheBytes() / 2;
}

bool OutgrowsSharedCache(int64_t bytes, int64_t share) {
  const int64_t l3 = SharedCacheBytes();
  return l3 > 0 && bytes > l3 / share;
}

void SetSharedCacheForTesting(int64_t bytes) {
  SharedCacheOverride().store(bytes, std::memory_order_relaxed);
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
