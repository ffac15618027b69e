// Helpers for the convolution tests: random tensors, attrs, random geometries, comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/conv_kernels.h"
#include "blocks/conv/isa.h"
#include "blocks/conv/winograd.h"
#include "core/tensor.h"

namespace blockflow::conv::testing {

/// Turns the Winograd path (blocks/conv/winograd.h) on or off for a scope, and the Winograd
/// path on and the ISA back to the CPU's best after it.
class WinogradSetting {
 public:
  explicit WinogradSetting(bool on) { internal::SetWinogradForTesting(on); }
  ~WinogradSetting() {
    internal::SetWinogradForTesting(true);
    internal::SetIsaForTesting(internal::Isa::kAvx512);
  }
  WinogradSetting(const WinogradSetting&) = delete;
  WinogradSetting& operator=(const WinogradSetting&) = delete;
};

/// Takes the shared L3 as `bytes` while alive: 0 holds nothing, so that large results store
/// past the caches on any host (a host's L3 keeps them otherwise: FitsSharedCache); 1 makes
/// every operand outgrow it (OutgrowsSharedCache), so that kernels prefetch the rows ahead; a
/// huge one keeps every result, stored plainly.
struct SharedCacheOf {
  explicit SharedCacheOf(int64_t bytes) { internal::SetSharedCacheForTesting(bytes); }
  ~SharedCacheOf() { internal::SetSharedCacheForTesting(-1); }
  SharedCacheOf(const SharedCacheOf&) = delete;
  SharedCacheOf& operator=(const SharedCacheOf&) = delete;
};

/// A tensor of `shape` with uniform values in [-1, 1), rounded to `dtype`. With `grid` > 0 the
/// values are multiples of 1/grid (exact in the 16-bit types).
inline Tensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng, int grid = 0) {
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = u(rng);
    if (grid > 0) v = std::round(v * grid) / grid;
    t.SetFromDouble(i, v);
  }
  return t;
}

/// Attrs as JSON, the way a graph holds them.
inline nlohmann::json AttrsJson(std::vector<int64_t> strides, const std::string& padding,
                                const std::string& format = "NHWC",
                                std::vector<int64_t> dilations = {1, 1, 1, 1},
                                std::vector<int64_t> explicit_paddings = {}) {
  return nlohmann::json{{"strides", strides},
                        {"padding", padding},
                        {"data_format", format},
                        {"dilations", dilations},
                        {"explicit_paddings", explicit_paddings}};
}

/// One convolution problem: attrs plus NHWC-order sizes.
struct Problem {
  bool depthwise = false;
  std::string format = "NHWC";
  std::string padding = "VALID";
  int64_t n = 1, h = 1, w = 1, c = 1;  // input
  int64_t fh = 1, fw = 1;
  int64_t groups = 1, cog = 1;  // Conv2D: out depth = groups * cog, filter in-depth c / groups
  int64_t mult = 1;             // depthwise
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // EXPLICIT

  bool nchw() const { return format == "NCHW"; }
  std::vector<int64_t> Spatial(int64_t a, int64_t b) const {
    return nchw() ? std::vector<int64_t>{1, 1, a, b} : std::vector<int64_t>{1, a, b, 1};
  }
  nlohmann::json Json() const {
    std::vector<int64_t> pads;
    if (padding == "EXPLICIT") {
      pads = nchw() ? std::vector<int64_t>{0, 0, 0, 0, pt, pb, pl, pr}
                    : std::vector<int64_t>{0, 0, pt, pb, pl, pr, 0, 0};
    }
    return AttrsJson(Spatial(sh, sw), padding, format, Spatial(dh, dw), pads);
  }
  Shape InputShape() const { return nchw() ? Shape{n, c, h, w} : Shape{n, h, w, c}; }
  Shape FilterShape() const {
    return depthwise ? Shape{fh, fw, c, mult} : Shape{fh, fw, c / groups, groups * cog};
  }
  std::string ToString() const {
    return std::string(depthwise ? "dw" : "conv") + " " + format + " " + padding + " in[" +
           std::to_string(n) + "," + std::to_string(h) + "," + std::to_string(w) + "," +
           std::to_string(c) + "] f[" + std::to_string(fh) + "x" + std::to_string(fw) + "] g" +
           std::to_string(groups) + " cog" + std::to_string(cog) + " m" + std::to_string(mult) +
           " s" + std::to_string(sh) + "x" + std::to_string(sw) + " d" + std::to_string(dh) + "x" +
           std::to_string(dw) + " p" + std::to_string(pt) + std::to_string(pb) +
           std::to_string(pl) + std::to_string(pr);
  }
};

/// A problem (a Conv2D of groups 1 until the caller says otherwise): input [n, h, w, c] in `format`
/// to `cog` output channels through an fh x fw filter, stride and dilation 1 until the caller sets
/// them.
inline Problem DenseProblem(const std::string& format, const std::string& padding, int64_t n,
                            int64_t h, int64_t w, int64_t c, int64_t cog, int64_t fh, int64_t fw) {
  Problem p;
  p.format = format;
  p.padding = padding;
  p.n = n;
  p.h = h;
  p.w = w;
  p.c = c;
  p.cog = cog;
  p.fh = fh;
  p.fw = fw;
  return p;
}

inline Problem DepthwiseProblem(const std::string& format, const std::string& padding, int64_t n,
                                int64_t h, int64_t w, int64_t c, int64_t mult, int64_t fh,
                                int64_t fw) {
  Problem p = DenseProblem(format, padding, n, h, w, c, 1, fh, fw);
  p.depthwise = true;
  p.mult = mult;
  return p;
}

/// Attrs and geometry of a problem (the geometry may fail, e.g. VALID with a large filter).
struct Resolved {
  ConvAttrs attrs;
  ConvGeometry geometry;
};
inline Expected<Resolved> Resolve(const Problem& p) {
  AttrMap m(p.Json());
  ASSIGN_OR_RETURN(ConvAttrs a, ParseConvAttrs(m));
  ASSIGN_OR_RETURN(ConvGeometry g,
                   MakeConvGeometry(a, p.InputShape(), p.FilterShape(), p.depthwise));
  return Resolved{a, g};
}

/// A random problem biased to small and odd sizes that has a valid geometry.
inline Problem RandomProblem(std::mt19937_64& rng, bool depthwise) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (;;) {
    Problem p;
    p.depthwise = depthwise;
    p.format = pick(0, 1) ? "NCHW" : "NHWC";
    const int64_t pad = pick(0, 2);
    p.padding = pad == 0 ? "SAME" : pad == 1 ? "VALID" : "EXPLICIT";
    p.n = pick(0, 9) == 0 ? 0 : pick(1, 2);
    p.h = pick(1, 9);
    p.w = pick(1, 9);
    p.fh = pick(1, 3);
    p.fw = pick(1, 3);
    if (depthwise) {
      p.c = pick(1, 5);
      p.mult = pick(1, 3);
    } else {
      p.groups = pick(0, 3) == 0 ? pick(2, 3) : 1;
      p.c = p.groups * pick(1, 4);
      p.cog = pick(1, 4);
    }
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(0, 2) == 0 ? 2 : 1;
    p.dw = pick(0, 2) == 0 ? pick(2, 3) : 1;
    if (p.padding == "EXPLICIT") {
      p.pt = pick(0, 2);
      p.pb = pick(0, 2);
      p.pl = pick(0, 2);
      p.pr = pick(0, 2);
    }
    if (Resolve(p).ok()) return p;
  }
}

/// A 1-D int32 tensor of a shape's dims (the `input_sizes` and `filter_sizes` ports).
inline Tensor SizesTensor(const Shape& s) {
  Tensor t(DType::kInt32, Shape{s.rank()});
  for (int i = 0; i < s.rank(); ++i) t.SetFromDouble(i, static_cast<double>(s.dim(i)));
  return t;
}

/// Sum of x * y in double.
inline double Dot(const Tensor& x, const Tensor& y) {
  double s = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) s += x.GetAsDouble(i) * y.GetAsDouble(i);
  return s;
}
/// Sum of |x * y| in double (the scale of Dot's rounding error).
inline double AbsDot(const Tensor& x, const Tensor& y) {
  double s = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i)
    s += std::fabs(x.GetAsDouble(i) * y.GetAsDouble(i));
  return s;
}

/// The state of op 0..2 (forward, input grad, filter grad) on a resolved problem.
inline ConvState StateOf(int op, const Resolved& r) {
  return ConvState{static_cast<ConvOp>(op), r.attrs, r.geometry};
}

/// Runs one op's kernel directly (RunConv) and returns its output. `op` is 0..2 (forward, input
/// grad, filter grad). Inputs are x, w, dy as relevant. The output starts as NaN (all-ones
/// bytes, a NaN in every float type), as a reused buffer would hold garbage: an element a
/// kernel leaves unwritten, or adds into instead of writing, shows against the reference.
inline Expected<Tensor> RunOp(KernelKind kind, int op, const Resolved& r, const Tensor& x,
                              const Tensor& w, const Tensor& dy, int threads) {
  const ConvState s = StateOf(op, r);
  const Tensor& a = s.op == ConvOp::kBackpropInput ? w : x;
  const Tensor& b = s.op == ConvOp::kForward ? w : dy;
  Tensor out = Tensor::Uninitialized(a.dtype(), OperandShapes(s).out);
  std::memset(out.raw(), 0xff, out.num_bytes());
  KernelContext k;
  k.num_threads = threads;
  RETURN_IF_ERROR(RunConv(kind, s, a, b, &out, k));
  return out;
}

/// An NHWC tensor's elements in NCHW order (or back, with to_nchw false).
inline Tensor Transposed(const Tensor& t, bool to_nchw) {
  const Shape& s = t.shape();
  const int64_t n = s.dim(0);
  const int64_t h = to_nchw ? s.dim(1) : s.dim(2), w = to_nchw ? s.dim(2) : s.dim(3);
  const int64_t c = to_nchw ? s.dim(3) : s.dim(1);
  Tensor out(t.dtype(), to_nchw ? Shape{n, c, h, w} : Shape{n, h, w, c});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t nhwc = ((b * h + y) * w + x) * c + ch,
                        nchw = ((b * c + ch) * h + y) * w + x;
          out.SetFromDouble(to_nchw ? nchw : nhwc, t.GetAsDouble(to_nchw ? nhwc : nchw));
        }
  return out;
}

}  // namespace blockflow::conv::testing
