// One packed GEMM for the dense convolutions that are matrix products (not part of the public
// API): C[m, n] = sum_k A[m, k] * B[k, n], with A and B read through views that are either
// plain row-major matrices (possibly transposed) or the im2col matrix of an NHWC input, built
// on the fly while packing, so no column buffer is ever formed for an operand.
//
//   GemmTile tile = ActiveGemmTile(sizeof(float));
//   WorkBuffer<float> work(GemmWorkspaceElements(tile, sizeof(float)));  // one per thread
//   GemmRows(a_view, b_view, m0, m1, n, k, c, ldc, work.data(), tile, ctx);
//
// Register tiles of MR rows by NR columns (NV 64-byte vectors) accumulate in registers over a
// block of Kc values of k; B is packed per Kc x Nc block into NR-column panels that stay in
// L2, A per Mc x Kc block into MR-row micro-panels that stay in L1, both into a bounded
// per-thread workspace. A plain row-major A (not transposed) is read in place instead, and the
// tiles of a block's first rows then pack B's panels as they read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "blocks/conv/conv_geometry.h"
#include "core/dtype.h"
#include "core/schema.h"

namespace blockflow::conv::internal {

/// A matrix operand of the GEMM, element (i, j) of a rows x cols matrix.
///   kDense:  data[i * ld + j], or data[j * ld + i] when `transposed`.
///   kIm2col: the im2col matrix of the NHWC input `data` of geometry `g` (groups == 1): row p is
///            an output pixel (n, oh, ow), column q = (kh * filter_w + kw) * in_depth + ci holds
///            x[n, input_row(oh, kh), input_col(ow, kw), ci], or 0 in the padding. With
///            `transposed`, element (i, j) is that matrix's (j, i).
/// Either way runs of elements along one axis are contiguous in memory (along j, or along i
/// when `transposed`); the packers copy whole runs. A kDense B may be stored as 16-bit floats
/// (C float): the packer widens each run as it reads it, so no float copy of the whole matrix is
/// made (a float16 fc6's 9.4 MB filter was widened into 18.9 MB before every call).
template <typename C>
struct MatrixView {
  enum class Kind { kDense, kIm2col };
  Kind kind = Kind::kDense;
  const C* data = nullptr;
  const Half* half = nullptr;          // kDense B stored as float16 (data null)
  const BFloat16* bfloat16 = nullptr;  // kDense B stored as bfloat16 (data null)
  int64_t ld = 0;                      // kDense: the row stride of the stored matrix
  int64_t extent = 0;                  // kDense: the length of the contiguous axis
  bool transposed = false;
  const ConvGeometry* g = nullptr;  // kIm2col

  /// A dense matrix of C, or of Half or BFloat16 (C float) for B.
  template <typename S>
  static MatrixView Dense(const S* data, int64_t ld, int64_t extent, bool transposed) {
    MatrixView v;
    if constexpr (std::is_same_v<S, Half>) {
      v.half = data;
    } else if constexpr (std::is_same_v<S, BFloat16>) {
      v.bfloat16 = data;
    } else {
      v.data = data;
    }
    v.ld = ld;
    v.extent = extent;
    v.transposed = transposed;
    return v;
  }
  /// The same view `offset` stored elements further on (a block of columns of a dense B).
  MatrixView Shifted(int64_t offset) const {
    MatrixView v = *this;
    if (v.data != nullptr) v.data += offset;
    if (v.half != nullptr) v.half += offset;
    if (v.bfloat16 != nullptr) v.bfloat16 += offset;
    return v;
  }
  static MatrixView Im2col(const C* x, const ConvGeometry& geometry, bool transposed) {
    MatrixView v;
    v.kind = Kind::kIm2col;
    v.data = x;
    v.transposed = transposed;
    v.g = &geometry;
    return v;
  }
};

/// The register tile of the ISA in use: MR rows by NR = NV * (64 / element size) columns.
struct GemmTile {
  int mr = 1, nv = 1, nr = 1;
};
/// The tile ActiveIsa() runs for elements of `elem_size` bytes (4 or 8).
GemmTile ActiveGemmTile(size_t elem_size);

/// Elements of one thread's workspace: one packed A block, one packed B block, and the runs of a
/// 16-bit B widened on their way to it.
int64_t GemmWorkspaceElements(const GemmTile& tile, size_t elem_size);

/// Receives each block of columns [j0, j1) of C once its sums are complete (see GemmRows).
struct ColumnSink {
  void (*fn)(void* state, int64_t j0, int64_t j1) = nullptr;
  void* state = nullptr;
};
/// The columns of C a ColumnSink receives at a time (at most), for an A view that is or is not
/// transposed.
int64_t GemmColumnBlock(const GemmTile& tile, size_t elem_size, bool a_transposed);

/// C[i, :] = A[i, :] * B for the rows i in [m0, m1) of the m x k A and the k x n B (B a kDense
/// view: only A may be an im2col matrix, only B may be stored as 16-bit floats), written at
/// c + (i - m0) * ldc + j, with `work` a workspace of GemmWorkspaceElements. With a `sink`, C is
/// computed one block of GemmColumnBlock columns [j0, j1) at a time into the same buffer (column
/// j at c + (i - m0) * ldc + j - j0, so ldc >= GemmColumnBlock suffices), and the sink takes
/// each block before the next overwrites it. Every row is summed over k in the same order
/// whichever range it is computed in, so results do not depend on how rows are shared among
/// threads. Stops between blocks once `ctx.cancelled()`. `stream`: C may be stored past the
/// caches (StreamVec), which it is where k fits one block of the packing (C written in one
/// pass, never read back), without a sink, and with c and ldc keeping rows 64-byte aligned.
/// `accumulate` (without a sink): C[i, :] += A[i, :] * B, each block of k's products summed in
/// registers and then added to what C holds (a sum over k split across calls).
template <typename C>
void GemmRows(const MatrixView<C>& a, const MatrixView<C>& b, int64_t m0, int64_t m1, int64_t n,
              int64_t k, C* c, int64_t ldc, C* work, const GemmTile& tile, const KernelContext& ctx,
              const ColumnSink* sink = nullptr, bool stream = false, bool accumulate = false);

}  // namespace blockflow::conv::internal
