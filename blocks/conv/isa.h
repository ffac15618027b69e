// Run-time ISA dispatch of the convolution kernels (not part of the public API): one table of
// the instruction sets the hot loops are compiled for, the macro that compiles a kernel once per
// row of it, and the 64-byte vector type the kernels are written in.
//
//   BF_CONV_ISA_FNS(AddRow, AddRowT, float, AddFn<float>, (const float* a, float* b), (a, b))
//   // defines AddRowAvx512, AddRowAvx2, AddRowBase and `AddFn<float> AddRow(float)`, which
//   // returns the variant ActiveIsa() selects
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

// Hot loops are compiled three times (baseline x86-64, AVX2+FMA, AVX-512) and picked at run time
// by ActiveIsa(), so one binary runs on any x86-64 and uses the widest vectors it has.
#if defined(__x86_64__) && defined(__GNUC__)
#define BF_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define BF_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#else
#define BF_TARGET_AVX2
#define BF_TARGET_AVX512
#endif
#define BF_TARGET_BASE
#define BF_CONV_INLINE inline __attribute__((always_inline))

namespace blockflow::conv::internal {

/// The instruction sets the optimized kernels are compiled for.
enum class Isa { kBase = 0, kAvx2 = 1, kAvx512 = 2 };
/// The widest ISA this CPU supports, lowered by the environment variable BLOCKFLOW_CONV_ISA
/// (base, avx2, avx512) or SetIsaForTesting.
Isa ActiveIsa();
/// Forces a narrower ISA (clamped to what the CPU supports), so tests cover every variant.
void SetIsaForTesting(Isa isa);
/// "base", "avx2", "avx512".
const char* IsaName(Isa isa);
/// Bytes of a core's L1 data cache (level 1), its L2 cache (level 2) or the last-level cache it
/// shares with its neighbours (level 3): as Linux describes CPU 0's caches (CacheBytesIn), else
/// as the CPU does (the L3 through CoreL3Bytes), read once; `fallback` when neither knows.
int64_t CacheBytes(int level, int64_t fallback);
/// The caches as the kernels take them (CacheBytes), for benchmark reports: "L1 48.0 KiB, L2
/// 1.0 MiB, L3 32.0 MiB (the CPU's; Linux describes none)", "unknown" for a size not known.
std::string CacheSummary();
/// CacheSummary's text for the sizes of L1, L2 and L3 and whether Linux described each: one
/// source for all three, or each level's after it where they differ.
std::string FormatCacheSummary(const int64_t (&bytes)[3], const bool (&from_linux)[3]);
/// The size of the data or unified cache of `level` in a directory laid out as Linux's
/// /sys/devices/system/cpu/cpuN/cache: subdirectories index0, index1, ... each with the files
/// `level`, `type` and `size` ("32K", "32768K", "2M"). 0 when there is none.
int64_t CacheBytesIn(const std::string& dir, int level);

/// What a CPU says of its L3, for hosts where Linux does not describe the caches.
struct CpuL3 {
  bool amd = false;
  int family = 0;              // CPUID's family, the extended family added (Zen 2: 0x17)
  int64_t topology_bytes = 0;  // the L3 in AMD's cache topology (CPUID 0x8000001D), 0: none
  int64_t reported_bytes = 0;  // CPUID 0x80000006's L3 on AMD, else the C library's (sysconf)
};
/// The L3 a core shares: the topology's where the CPU has one; on AMD's Zen without it, the
/// reported L3 (CPUID 0x80000006's, the whole package's or what a hypervisor makes of it: 508 MB
/// on the AVX-512 EPYC guest, whose cores share a 32 MB L3) at most one core complex's: 16 MB in
/// family 0x17 (Zen 2's; Zen's is 8 MB), 32 MB from Zen 3 on (without stacked cache); elsewhere the
/// reported one (Intel's L3 is the socket's).
int64_t CoreL3Bytes(const CpuL3& cpu);
/// The bytes of the cache a subleaf of AMD's cache topology (CPUID 0x8000001D) describes: EBX
/// holds its ways, partitions and line size, each less one; ECX its sets less one.
int64_t AmdTopologyCacheBytes(uint32_t ebx, uint32_t ecx);
/// This CPU's CpuL3: the C library's L3, on AMD CPUID's instead (0x80000006) and its topology;
/// off x86-64 the C library's L3 alone.
CpuL3 HostCpuL3();
/// Whether plain stores keep a result in the shared L3 for the op that reads it next (and for
/// the next call of the same op): as measured on Intel's cores, and not on AMD's (the figures
/// are in isa.cc).
bool SharedCacheKeepsResults();
/// Whether a result of `bytes` fits in half the shared L3 and SharedCacheKeepsResults, so that
/// a plain store keeps it there. Kernels store large results past the caches only when it does
/// not; false when the L3's size is unknown.
bool FitsSharedCache(int64_t bytes);
/// Whether operands of `bytes` take more than 1/`share` of the shared L3, so that a call finds
/// them in memory rather than in the caches more often than not: kernels then prefetch the rows
/// they read and write next. False when the L3's size is unknown.
bool OutgrowsSharedCache(int64_t bytes, int64_t share);
/// Makes FitsSharedCache and OutgrowsSharedCache take the L3 as `bytes`, one that keeps results
/// (0: results never fit and operands never outgrow it, so that tests reach the streamed stores
/// on any host; 1: every operand outgrows it); a negative value restores the CPU's.
void SetSharedCacheForTesting(int64_t bytes);

/// dst[j * dst_stride + i] = src[i * src_stride + j] for i, j < 8, in AVX registers. Only for
/// ActiveIsa() of at least kAvx2.
void Transpose8x8Avx2(const float* src, int64_t src_stride, float* dst, int64_t dst_stride);

// The helpers below pass vectors by value; they are always inlined, so the ABI note
// GCC gives for that (-Wpsabi) does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/// A 64-byte vector of C held as `Parts` native vectors: two ymm (AVX2) or four xmm (the
/// baseline). On those ISAs GCC has no register for a 64-byte generic vector: it keeps arrays
/// of them (the kernels' register tiles) on the stack and moves them through general registers,
/// which measured 5-10x slower; the native parts of a struct it keeps in registers.
template <typename C, int Parts>
struct SplitVec {
  typedef C Part __attribute__((vector_size(64 / Parts)));
  Part part[Parts];

  /// A product of two SplitVecs (B = SplitVec) or of one and a scalar (B = C), left unevaluated
  /// until a sum takes it (`acc += a * b`) or a SplitVec is made of it: each part's multiply and
  /// add are then one expression, which clang fuses (its default -ffp-contract=on contracts
  /// within an expression, at every optimization level), as GCC fuses them across statements
  /// and as both fuse the AVX-512 kernels' single vectors. With the multiply in one operator and
  /// the add in another, clang's sanitizer build (-O1, the sums kept in memory) left them
  /// apart, and its AVX2 kernels rounded differently from its AVX-512 ones and the asm tiles.
  /// (-ffp-contract=fast did not help there: it leaves the fusing to the code generator, which
  /// does not fuse through memory.) GCC's AVX2 results are the same bits as before. A Product
  /// refers to its operands: it lives within the expression that makes it (name a SplitVec, not
  /// an `auto`, to keep a product).
  template <typename B>
  struct Product {
    const SplitVec& a;
    const B& b;
    BF_CONV_INLINE Part At(int i) const {
      if constexpr (std::is_same_v<B, C>) {
        return a.part[i] * b;
      } else {
        return a.part[i] * b.part[i];
      }
    }
    BF_CONV_INLINE operator SplitVec() const {  // NOLINT(google-explicit-constructor)
      SplitVec r;
      for (int i = 0; i < Parts; ++i) r.part[i] = At(i);
      return r;
    }
  };

  BF_CONV_INLINE SplitVec& operator+=(const SplitVec& o) {
    for (int i = 0; i < Parts; ++i) part[i] += o.part[i];
    return *this;
  }
  template <typename B>
  BF_CONV_INLINE SplitVec& operator+=(const Product<B>& p) {
    // The multiply written out here, not taken from At: one expression with the add.
    for (int i = 0; i < Parts; ++i) {
      if constexpr (std::is_same_v<B, C>) {
        part[i] += p.a.part[i] * p.b;
      } else {
        part[i] += p.a.part[i] * p.b.part[i];
      }
    }
    return *this;
  }
  friend BF_CONV_INLINE SplitVec operator+(SplitVec a, const SplitVec& b) { return a += b; }
  friend BF_CONV_INLINE Product<SplitVec> operator*(const SplitVec& a, const SplitVec& b) {
    return {a, b};
  }
  friend BF_CONV_INLINE Product<C> operator*(const SplitVec& a, const C& s) { return {a, s}; }
};

/// The 64-byte vector of C that the kernels compiled for ISA `I` compute with: a generic vector
/// (one zmm) with AVX-512, SplitVec otherwise. The kernels take it as their template parameter
/// V, which the ISA table (BF_CONV_ISA_TABLE) picks for each variant.
template <typename C>
struct NativeVec;  // explicit per type: a dependent vector_size typedef loses its attribute when
                   // passed on as a template argument
template <>
struct NativeVec<float> {
  typedef float type __attribute__((vector_size(64)));
};
template <>
struct NativeVec<double> {
  typedef double type __attribute__((vector_size(64)));
};
template <typename C, Isa I>
struct VecOf {
  using type = SplitVec<C, I == Isa::kAvx2 ? 2 : 4>;
};
template <typename C>
struct VecOf<C, Isa::kAvx512> {
  using type = typename NativeVec<C>::type;
};
template <typename C, Isa I>
using VecFor = typename VecOf<C, I>::type;
static_assert(sizeof(VecFor<float, Isa::kAvx512>) == 64 &&
              sizeof(VecFor<double, Isa::kAvx2>) == 64 && sizeof(VecFor<float, Isa::kBase>) == 64);

template <typename V>
inline constexpr bool kIsSplitVec = false;
template <typename C, int Parts>
inline constexpr bool kIsSplitVec<SplitVec<C, Parts>> = true;

/// Unaligned load and store of one 64-byte vector V of C (part by part for a SplitVec).
template <typename V, typename C>
BF_CONV_INLINE V LoadVec(const C* p) {
  V v;
  if constexpr (kIsSplitVec<V>) {
    constexpr int kParts = sizeof(V) / sizeof(v.part[0]), kStep = 64 / kParts / sizeof(C);
    for (int i = 0; i < kParts; ++i) __builtin_memcpy(&v.part[i], p + i * kStep, sizeof v.part[i]);
  } else {
    __builtin_memcpy(&v, p, sizeof v);
  }
  return v;
}
/// LoadVec into a register that the fused multiply-adds after it read: GCC otherwise folds a
/// load that several of them share into each one as a memory operand, a load per FMA where the
/// kernel meant one for all (and on Zen 4 a 64-byte load costs a cycle of the load ports). The
/// empty asm claims to change the register, so the value must be there. kInRegister false is
/// LoadVec, for kernels that measured faster with the folded loads in some of their forms.
template <typename V, bool kInRegister = true, typename C>
BF_CONV_INLINE V LoadVecReg(const C* p) {
  V v = LoadVec<V>(p);
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (kInRegister && !kIsSplitVec<V>) asm("" : "+v"(v));
#endif
  return v;
}
template <typename V, typename C>
BF_CONV_INLINE void StoreVec(C* p, const V& v) {
  if constexpr (kIsSplitVec<V>) {
    constexpr int kParts = sizeof(V) / sizeof(v.part[0]), kStep = 64 / kParts / sizeof(C);
    for (int i = 0; i < kParts; ++i) __builtin_memcpy(p + i * kStep, &v.part[i], sizeof v.part[i]);
  } else {
    __builtin_memcpy(p, &v, sizeof v);
  }
}
/// Stores one 64-byte vector past the caches (a non-temporal store: the line is not read
/// first, and does not take a place in the caches). AVX-512 only (V a 64-byte generic vector,
/// `p` 64-byte aligned); the narrower ISAs' SplitVec takes StoreVec. The caller ends its run of
/// streamed stores with StreamFence before another thread may read them.
template <typename V, typename C>
BF_CONV_INLINE void StreamVec(C* p, const V& v) {
#if defined(__clang__)
  // Clang has a builtin for it (and rejects the asm below in this template).
  if constexpr (!kIsSplitVec<V>) {
    __builtin_nontemporal_store(v, reinterpret_cast<V*>(p));
    return;
  }
#elif defined(__x86_64__) && defined(__GNUC__)
  // GCC checks an ISA builtin against the function it is written in, which has no AVX-512
  // target of its own: the instruction goes in as asm.
  if constexpr (!kIsSplitVec<V>) {
    V* dst = reinterpret_cast<V*>(p);
    if constexpr (std::is_same_v<C, float>) {
      asm("vmovntps %1, %0" : "=m"(*dst) : "v"(v));
    } else {
      asm("vmovntpd %1, %0" : "=m"(*dst) : "v"(v));
    }
    return;
  }
#endif
  StoreVec(p, v);
}
BF_CONV_INLINE void StreamFence() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_ia32_sfence();
#endif
}
/// Stores one vector, past the caches when `stream` (StreamVec).
template <typename V, typename C>
BF_CONV_INLINE void PutVec(C* p, const V& v, bool stream) {
  if (stream) {
    StreamVec(p, v);
  } else {
    StoreVec(p, v);
  }
}
/// Zeroes a register tile of P x NV vector sums.
template <typename Vec, int P, int NV>
BF_CONV_INLINE void ZeroTile(Vec (&acc)[P][NV]) {
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < NV; ++k) acc[p][k] = Vec{};
}
#pragma GCC diagnostic pop

}  // namespace blockflow::conv::internal

/// The one ISA table, widest first: X(suffix, Isa enumerator, target attribute, P, NV, ...).
/// A register tile is P pixels by NV 64-byte vectors: AVX-512 keeps 4 x 2 zmm accumulators,
/// AVX2 and the baseline 4 x 1 64-byte vectors (8 ymm / 16 xmm). The trailing arguments are
/// passed on to X.
#define BF_CONV_ISA_TABLE(X, ...)                         \
  X(Avx512, kAvx512, BF_TARGET_AVX512, 4, 2, __VA_ARGS__) \
  X(Avx2, kAvx2, BF_TARGET_AVX2, 4, 1, __VA_ARGS__)       \
  X(Base, kBase, BF_TARGET_BASE, 4, 1, __VA_ARGS__)

// The macros below paste names and splice parameter lists, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define BF_CONV_ISA_VARIANT_(Suffix, IsaId, Target, P, NV, Name, Impl, C, Params, Args)         \
  Target void Name##Suffix Params {                                                             \
    Impl<C, ::blockflow::conv::internal::VecFor<C, ::blockflow::conv::internal::Isa::IsaId>, P, \
         NV>                                                                                    \
        Args;                                                                                   \
  }
#define BF_CONV_ISA_CASE_(Suffix, IsaId, Target, P, NV, Name, ...) \
  case ::blockflow::conv::internal::Isa::IsaId:                    \
    return Name##Suffix;

/// Defines one function per row of the ISA table, `Name##Suffix Params`, each calling
/// `Impl<C, V, P, NV> Args` (V: the ISA's VecFor<C, I>) compiled for its ISA, and `FnType Name(C)`,
/// which returns the one ActiveIsa() selects. `Params` and `Args` are parenthesised. Use it inside
/// the kernel file's anonymous namespace.
#define BF_CONV_ISA_FNS(Name, Impl, C, FnType, Params, Args)           \
  BF_CONV_ISA_TABLE(BF_CONV_ISA_VARIANT_, Name, Impl, C, Params, Args) \
  FnType Name(C) {                                                     \
    switch (::blockflow::conv::internal::ActiveIsa()) {                \
      BF_CONV_ISA_TABLE(BF_CONV_ISA_CASE_, Name)                       \
    }                                                                  \
    return Name##Base;                                                 \
  }
// NOLINTEND(bugprone-macro-parentheses)
