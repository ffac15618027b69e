// The register tiles written in x86 asm (GCC's extended asm, AT&T syntax, zmm registers): where
// they build, which compute types take them, and the pieces of asm they share. The tiles
// themselves live beside the compiled kernels they stand in for: the direct forward's
// (QuadTileAvx512, StemTileAvx512 in conv2d.cc) and the packed GEMM's (GemmTile6x4Avx512,
// GemmTile6x4PanelAvx512).
#pragma once

#include <type_traits>

#include "blocks/conv/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define BF_CONV_ASM_TILES 1
#endif

namespace blockflow::conv::internal {

/// Whether compute type C and vector V take the asm tiles: AVX-512 in float, where they build.
template <typename C, typename V>
#if defined(BF_CONV_ASM_TILES)
inline constexpr bool kAsmTiles = std::is_same_v<C, float> && sizeof(V) == 64 && !kIsSplitVec<V>;
#else
inline constexpr bool kAsmTiles = false;
#endif

}  // namespace blockflow::conv::internal

// clang-format off
/// Zeroes the sums zmm<r> for r in `regs` ("0, 1, 2").
#define BF_ASM_ZERO(regs)                                                                          \
  ".irp r, " regs "\n\t"                                                                           \
  "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t.endr\n\t"
/// One output row of four vectors: zmm a, b, c, d stored with `op` (vmovups, vmovntps) at the
/// asm operand y, then y advanced by the operand ys (bytes).
#define BF_ASM_STORE4(op, a, b, c, d)                                                              \
  op " %%zmm" #a ", (%[y])\n\t"                                                                    \
  op " %%zmm" #b ", 64(%[y])\n\t"                                                                  \
  op " %%zmm" #c ", 128(%[y])\n\t"                                                                 \
  op " %%zmm" #d ", 192(%[y])\n\t"                                                                 \
  "add %[ys], %[y]\n\t"
// clang-format on
