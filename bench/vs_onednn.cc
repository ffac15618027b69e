// bf_vs_onednn: blockflow's optimized convolution kernels side by side with oneDNN on every
// (shape, op) of the shape suite (bench/shapes.json), float32, in one run.
//
//   bf_vs_onednn [--shapes FILE] [--threads 1,2] [--rounds 5] [--min-time 0.3]
//                [--filter REGEX] [--clock wall|cpu] [--stat median|best]
//                [--onednn-algorithm direct|auto|winograd] [--json FILE]
//   taskset -c 1 bf_vs_onednn --threads 1 --clock cpu --json vs_onednn.json
//   bf_vs_onednn --rounds 15 --min-time 1 --stat best     (a shared, noisy machine)
//
// For each (shape, op) and thread count three ways of computing the op are timed, interleaved
// round by round (each round runs every way, these and those below, at every thread count, one
// thread count after the other, so that a pair's thread counts share the minutes they ran in),
// and the median of the rounds is kept, or with `--stat best` the fastest round: where other
// tenants slow some rounds down for tens of milliseconds at a time, the fastest of many short
// rounds is the figure that repeats from run to run:
//   bf        blockflow's kernel (RunConv, optimized) on TensorFlow-layout tensors (NHWC, HWIO);
//   dnnl_blk  the oneDNN primitive alone, its operands already in the blocked layouts it prefers
//             (format_tag::any), the reorders done before timing;
//   dnnl_tf   the same primitive on TensorFlow-layout tensors: the reorders of its inputs from
//             and of its output back to TF layouts are timed with it.
// oneDNN's primitives compute by its direct algorithm (convolution_direct), unless
// --onednn-algorithm asks for `auto` (oneDNN picks; it takes its Winograd kernel for fc6) or
// `winograd` (where oneDNN has one: 3x3 stride-1 dense layers; the others stay direct). The
// implementation each case ran is printed and written to the JSON ("onednn_impl").
// Every result is checked: oneDNN's output, in TF layout, must equal blockflow's within float32
// tolerance, so that a wrongly set up primitive cannot flatter either side.
// The memory floor (RunFloor: the op's operands read and a result of its size written, nothing
// computed) is timed the same way, in every round: a bound no kernel of the op can beat, whose
// figure on a shared machine moves with what the neighbours do to memory (on the AVX-512 EPYC,
// two threads of mnv1_dw1_112x32's forward took 0.48 ms in one process and 0.34 in the next).
// The machine's FMA peak is measured in the same program with the widest vectors the CPU has
// (AVX-512, else AVX2), per thread count, as a fourth way timed in every round of every case:
// each blockflow figure is a share of the peak measured beside it, in the same minutes (on a
// shared machine whose neighbours take a core's other hyperthread, the peak itself moves by
// half, and a peak measured once at the start made 3x3 layers show 113-124% of it).
// With BLOCKFLOW_TEAMS=pool two thread runtimes share the machine: blockflow's teams run on its
// own pool of threads (core/team.h), oneDNN's primitives on GCC's OpenMP runtime, and the idle
// threads of each spin for about 5 ms after their last parallel step (GCC's default
// GOMP_SPINCOUNT; the pool's spin). On two CPUs a thread spinning in one runtime takes half a
// CPU from the other's second thread, so the batches hand the CPUs over (HandOver): blockflow's
// spinning threads are told to sleep before oneDNN's ways, and after them a blockflow team
// spins on every CPU until OpenMP's threads have gone to sleep. That is not enough: on the
// two-CPU machine measured, the scheduler still often put both threads of blockflow's team on
// one CPU (0.2-1 ms a two-thread depthwise call against 0.06 alone); the pool's figures here are
// not its figures in a process of its own. By default both sides run on OpenMP.
// Ratios are blockflow time / oneDNN time: below 1 means blockflow is faster. `--clock cpu`
// times process CPU time instead of wall time (meaningful at one thread on a busy machine).
// oneDNN is used only here: it is never linked into the blockflow libraries.
#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/shape_suite.h"
#include "blocks/conv/conv_kernels.h"
#include "blocks/conv/isa.h"
#include "core/team.h"
#include "core/tensor.h"

namespace blockflow::conv {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Options {
  std::string shapes = BF_BENCH_SHAPES;
  std::vector<int> threads = {1, 2};
  int rounds = 5;
  double min_time = 0.3;  // seconds per (case, way, thread count), over all rounds
  std::string filter;
  bool cpu_clock = false;
  bool best = false;  // --stat best: the fastest round, not the median
  std::string json;
  std::string algorithm_name = "direct";  // --onednn-algorithm: direct, auto or winograd
  dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct;
};

// The oneDNN algorithm --onednn-algorithm names, or nullopt.
std::optional<dnnl::algorithm> OneDnnAlgorithm(const std::string& name) {
  if (name == "direct") return dnnl::algorithm::convolution_direct;
  if (name == "auto") return dnnl::algorithm::convolution_auto;
  if (name == "winograd") return dnnl::algorithm::convolution_winograd;
  return std::nullopt;
}

double Now(bool cpu) {
  if (cpu) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---------------------------------------------------------------------------------------------
// FMA peak: independent chains of fused multiply-adds on the widest vectors, on every thread.
// ---------------------------------------------------------------------------------------------
constexpr int kChains = 12;

// Vectors of 16 and 8 floats: one zmm, one ymm.
typedef float Floats16 __attribute__((vector_size(64)));
typedef float Floats8 __attribute__((vector_size(32)));

// kChains independent chains acc = acc * a + b on vectors V (contracted to one FMA each: GCC's
// default -ffp-contract=fast for C++), summed at the end so nothing is optimised away. Inlined
// into the per-ISA functions below, which give it its instruction set.
template <typename V>
inline __attribute__((always_inline)) float FmaChains(int64_t iters, float seed) {
  V acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = V{} + (seed + static_cast<float>(k));
  const V a = V{} + 0.999999f, b = V{} + 1e-7f;
  for (int64_t i = 0; i < iters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * a + b;
  }
  V s = acc[0];
  for (int k = 1; k < kChains; ++k) s += acc[k];
  float t = 0;
  for (size_t i = 0; i < sizeof(V) / sizeof(float); ++i) t += s[i];
  return t;
}

__attribute__((target("avx512f"))) float FmaLoopAvx512(int64_t iters, float seed) {
  return FmaChains<Floats16>(iters, seed);
}
__attribute__((target("avx2,fma"))) float FmaLoopAvx2(int64_t iters, float seed) {
  return FmaChains<Floats8>(iters, seed);
}

bool HasAvx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
}
const char* PeakIsa() { return HasAvx512() ? "avx512" : "avx2"; }

// One run of the FMA loop, `iters` steps on each of `threads` threads at once: returns the
// floating-point operations it did (the caller times it with the kernels' clock: process CPU
// time sums the threads' times, as it does for the kernels).
double RunFmaPeak(int threads, int64_t iters) {
  static volatile float sink = 0;
  const bool avx512 = HasAvx512();
  std::vector<float> totals(static_cast<size_t>(threads), 0.0f);
  RunTeam(threads, [&] {
    const int t = TeamThread();
    totals[static_cast<size_t>(t)] = avx512 ? FmaLoopAvx512(iters, static_cast<float>(t))
                                            : FmaLoopAvx2(iters, static_cast<float>(t));
  });
  for (float total : totals) sink = sink + total;
  return 2.0 * kChains * (avx512 ? 16 : 8) * static_cast<double>(iters) * threads;
}
// Steps of one FMA-peak call: about 0.4 ms at 3 GHz, a call as short as the kernels' shortest.
constexpr int64_t kPeakIters = 200'000;

// ---------------------------------------------------------------------------------------------
// Memory floor: the op's two operands read once and a result of its size written once, nothing
// computed, on every thread. No kernel of the op can take less than this where its bytes come
// from and go to memory; a thread count's goal that asks for less is out of any kernel's reach.
// The result is written to a buffer of its own (the op's result is checked) by plain stores or
// by stores past the caches (`stream`), the floor being the faster of the two: a result that
// stays in the caches is written faster by plain stores, one that goes to memory by streamed
// ones. Timed like the kernels, in the same rounds, against the same operand tensors.
// ---------------------------------------------------------------------------------------------
struct FloorOperands {
  const float* in[2];
  int64_t in_n[2];
  float* out;
  int64_t out_n;
};

// The range [begin, end) of n values that thread t of nt takes: whole 64-byte lines.
std::pair<int64_t, int64_t> ShareOf(int64_t n, int t, int nt) {
  const int64_t lines = (n + 15) / 16, per = (lines + nt - 1) / nt;
  return {std::min(n, t * per * 16), std::min(n, (t + 1) * per * 16)};
}

// Thread t's share of the floor's reads on vectors V (16 or 8 floats): four running sums over its
// share of each input, added into *sum (the values past the last whole vectors into *tail). The
// result is written with them, so that the reads are not dropped.
template <typename V>
inline __attribute__((always_inline)) void ReadShare(const FloorOperands& f, int t, int nt, V* sum,
                                                     float* tail) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  V acc[4] = {};
  for (int i = 0; i < 2; ++i) {
    const auto [b, e] = ShareOf(f.in_n[i], t, nt);
    int64_t j = b;
    for (; j + 4 * L <= e; j += 4 * L) {
      for (int u = 0; u < 4; ++u) {
        V v;
        std::memcpy(&v, f.in[i] + j + u * L, sizeof(V));
        acc[u] += v;
      }
    }
    for (; j < e; ++j) *tail += f.in[i][j];
  }
  *sum = acc[0] + acc[1] + acc[2] + acc[3];
}

// Thread t's share of the result: the values up to the first `align`-byte boundary stored one by
// one; returns the share's bounds from there. The caller stores whole vectors, then `value` into
// the values after the last.
std::pair<int64_t, int64_t> WriteHead(const FloorOperands& f, int t, int nt, size_t align,
                                      float value) {
  auto [j, e] = ShareOf(f.out_n, t, nt);
  for (; j < e && reinterpret_cast<uintptr_t>(f.out + j) % align != 0; ++j) f.out[j] = value;
  return {j, e};
}

// One thread's share of the floor, with the widest vectors: reads, then the result's vectors
// stored plainly or past the caches (`stream`). The two differ only in their vectors' width and
// store intrinsics, which need a function compiled for their ISA each.
__attribute__((target("avx512f"))) void FloorShareAvx512(const FloorOperands& f, int t, int nt,
                                                         bool stream) {
  float tail = 0;
  Floats16 sum;
  ReadShare(f, t, nt, &sum, &tail);
  auto [j, e] = WriteHead(f, t, nt, 64, tail);
  const __m512 v = reinterpret_cast<const __m512&>(sum);
  if (stream) {
    for (; j + 16 <= e; j += 16) _mm512_stream_ps(f.out + j, v);
    _mm_sfence();
  }
  for (; j + 16 <= e; j += 16) _mm512_store_ps(f.out + j, v);
  for (; j < e; ++j) f.out[j] = tail;
}
__attribute__((target("avx2"))) void FloorShareAvx2(const FloorOperands& f, int t, int nt,
                                                    bool stream) {
  float tail = 0;
  Floats8 sum;
  ReadShare(f, t, nt, &sum, &tail);
  auto [j, e] = WriteHead(f, t, nt, 32, tail);
  const __m256 v = reinterpret_cast<const __m256&>(sum);
  if (stream) {
    for (; j + 8 <= e; j += 8) _mm256_stream_ps(f.out + j, v);
    _mm_sfence();
  }
  for (; j + 8 <= e; j += 8) _mm256_store_ps(f.out + j, v);
  for (; j < e; ++j) f.out[j] = tail;
}

// One call of the floor on `threads` threads.
void RunFloor(const FloorOperands& f, int threads, bool stream) {
  const bool avx512 = HasAvx512();
  RunTeam(threads, [&] {
    const int t = TeamThread(), nt = TeamSize();
    if (avx512) {
      FloorShareAvx512(f, t, nt, stream);
    } else {
      FloorShareAvx2(f, t, nt, stream);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// One (shape, op) in both libraries.
// ---------------------------------------------------------------------------------------------
// An operand of the oneDNN primitive: the TF-layout tensor it comes from (or goes to) and the
// memory in the primitive's own layout.
struct Operand {
  int arg = 0;
  bool output = false;
  memory user, prim;
};

struct DnnlCase {
  dnnl::primitive prim;
  std::vector<Operand> operands;
  std::vector<float> out_tf;  // oneDNN's result in TF layout, for the check
  std::string impl;           // the implementation oneDNN chose ("brg:avx512_core", ...)
};

memory::dims Dims(std::initializer_list<int64_t> d) { return memory::dims(d); }

// Builds the primitive of `op` with format_tag::any operands and the reorders to and from the TF
// layouts. `x`, `w`, `dy` are the TF-layout tensors (those the op does not read are unused).
DnnlCase MakeDnnl(const dnnl::engine& eng, dnnl::stream& strm, ConvOp op, const ConvGeometry& g,
                  Tensor& x, Tensor& w, Tensor& dy, dnnl::algorithm algo) {
  const auto f32 = memory::data_type::f32;
  const memory::dims src_dims = Dims({g.batch, g.in_depth, g.in_h, g.in_w});
  const memory::dims dst_dims = Dims({g.batch, g.out_depth, g.out_h, g.out_w});
  memory::dims w_dims;
  Tag w_tag;
  if (g.depthwise) {  // grouped: {G = C, OC/G = multiplier, IC/G = 1, KH, KW}, TF [KH,KW,C,M]
    w_dims = Dims({g.in_depth, g.multiplier, 1, g.filter_h, g.filter_w});
    w_tag = Tag::hwigo;
  } else {
    w_dims = Dims({g.out_depth, g.in_depth, g.filter_h, g.filter_w});
    w_tag = Tag::hwio;
  }
  const memory::dims strides = Dims({g.stride_h, g.stride_w});
  const memory::dims dil = Dims({g.dilation_h - 1, g.dilation_w - 1});
  const memory::dims pad_l = Dims({g.pad_top, g.pad_left});
  // oneDNN derives the output size from the padding; TF's may leave input rows unused.
  const memory::dims pad_r = Dims(
      {(g.out_h - 1) * g.stride_h + (g.filter_h - 1) * g.dilation_h + 1 - g.in_h - g.pad_top,
       (g.out_w - 1) * g.stride_w + (g.filter_w - 1) * g.dilation_w + 1 - g.in_w - g.pad_left});
  const memory::desc src_any(src_dims, f32, Tag::any), dst_any(dst_dims, f32, Tag::any);
  const memory::desc w_any(w_dims, f32, Tag::any);
  const memory::desc src_tf(src_dims, f32, Tag::nhwc), dst_tf(dst_dims, f32, Tag::nhwc);
  const memory::desc w_tf(w_dims, f32, w_tag);
  dnnl::convolution_forward::desc fwd_d(dnnl::prop_kind::forward_training, algo, src_any, w_any,
                                        dst_any, strides, dil, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc fwd_pd(fwd_d, eng);

  DnnlCase c;
  auto operand = [&](int arg, bool output, const memory::desc& tf, void* data,
                     const memory::desc& prim_md) {
    Operand o;
    o.arg = arg;
    o.output = output;
    o.user = memory(tf, eng, data);
    o.prim = prim_md == tf ? o.user : memory(prim_md, eng);
    c.operands.push_back(o);
  };
  // The TF layout of an execution argument.
  auto tf_layout = [&](int arg) -> const memory::desc& {
    if (arg == DNNL_ARG_SRC || arg == DNNL_ARG_DIFF_SRC) return src_tf;
    return arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_DST ? dst_tf : w_tf;
  };
  // The primitive of `pd`: its two inputs (execution argument, TF-layout data) and its result,
  // written to out_tf.
  auto bind = [&](const auto& pd, const dnnl::primitive& primitive,
                  std::initializer_list<std::pair<int, void*>> inputs, int result_arg) {
    c.prim = primitive;
    c.impl = pd.impl_info_str();
    for (const auto& [arg, data] : inputs)
      operand(arg, false, tf_layout(arg), data, pd.query_md(dnnl::query::exec_arg_md, arg));
    const memory::desc& out = tf_layout(result_arg);
    c.out_tf.resize(out.get_size() / sizeof(float));
    operand(result_arg, true, out, c.out_tf.data(),
            pd.query_md(dnnl::query::exec_arg_md, result_arg));
  };
  // A backward primitive `Prim` (data or weights), hinted by the forward one.
  auto bind_backward = [&]<typename Prim>(std::type_identity<Prim>,
                                          std::initializer_list<std::pair<int, void*>> inputs,
                                          int result_arg) {
    typename Prim::desc d(algo, src_any, w_any, dst_any, strides, dil, pad_l, pad_r);
    typename Prim::primitive_desc pd(d, eng, fwd_pd);
    bind(pd, Prim(pd), inputs, result_arg);
  };
  switch (op) {
    case ConvOp::kForward:
      bind(fwd_pd, dnnl::convolution_forward(fwd_pd),
           {{DNNL_ARG_SRC, x.raw()}, {DNNL_ARG_WEIGHTS, w.raw()}}, DNNL_ARG_DST);
      break;
    case ConvOp::kBackpropInput:
      bind_backward(std::type_identity<dnnl::convolution_backward_data>(),
                    {{DNNL_ARG_DIFF_DST, dy.raw()}, {DNNL_ARG_WEIGHTS, w.raw()}},
                    DNNL_ARG_DIFF_SRC);
      break;
    case ConvOp::kBackpropFilter:
      bind_backward(std::type_identity<dnnl::convolution_backward_weights>(),
                    {{DNNL_ARG_SRC, x.raw()}, {DNNL_ARG_DIFF_DST, dy.raw()}},
                    DNNL_ARG_DIFF_WEIGHTS);
      break;
  }
  strm.wait();
  return c;
}

// Runs the oneDNN case: with `tf`, the reorders from and to the TF layouts too.
void RunDnnl(DnnlCase& c, dnnl::stream& strm, bool tf) {
  std::unordered_map<int, memory> args;
  for (Operand& o : c.operands) {
    if (tf && !o.output && o.prim != o.user)
      dnnl::reorder(o.user, o.prim).execute(strm, o.user, o.prim);
    args[o.arg] = o.prim;
  }
  c.prim.execute(strm, args);
  for (Operand& o : c.operands) {
    if (tf && o.output && o.prim != o.user)
      dnnl::reorder(o.prim, o.user).execute(strm, o.prim, o.user);
  }
  strm.wait();
}

// ---------------------------------------------------------------------------------------------
// The runs.
// ---------------------------------------------------------------------------------------------
struct Row {
  std::string shape, op;
  int threads = 1;
  double gflop = 0;
  double bf = 0, blk = 0, tf = 0;  // seconds per call, median (or best) of the rounds
  double bf_wall = 0, blk_wall = 0, tf_wall = 0;
  std::vector<double> bf_walls, blk_walls;  // every round's wall times, for ThreadScaling
  double peak_gflops = 0;  // the FMA peak timed in the same rounds, by the same statistic
  // The memory floor's wall time (RunFloor), plain and streamed stores, the same statistic.
  double floor_plain_wall = 0, floor_stream_wall = 0;
  bool resnet_3x3 = false;  // a dense ResNet layer with a 3 x 3 filter (the peak goal's shapes)
  std::string blk_impl;
  double max_diff = 0, tolerance = 0;
  bool ok = true;
};

struct Timing {
  double clock = 0, wall = 0;
};

// The ways a case is timed (blockflow, oneDNN blocked, oneDNN on TF layouts, the FMA peak, the
// memory floor with plain and with streamed stores), and one thread count's state for a case:
// its oneDNN primitive, its ways and their batches, the times of its rounds.
constexpr int kWays = 6;
struct Lane {
  KernelContext k;
  DnnlCase dc;
  FloorOperands floor;
  double peak_flops = 0;  // per call of the peak way
  std::function<void()> ways[kWays];
  int64_t iters[kWays] = {};
  std::vector<double> clock[kWays], wall[kWays];
  Row row;
};

// Times `fn` over `iters` calls.
// The ways in a round's order: blockflow's kernel, oneDNN's two (OpenMP), then the peak and the
// floors (blockflow's pool). Before oneDNN's first way, blockflow's pool threads stop spinning;
// before the peak, on more than one thread, a pool team spins for 12 ms, past the end of
// OpenMP's spin (300000 pauses, about 5 ms, or twice that sharing a CPU with the team).
void HandOver(int way, int threads) {
  if (GetTeamRuntime() != TeamRuntime::kPool) return;  // one runtime: nothing to hand over
  if (way == 1) RestTeamThreads();
  if (way == 3 && threads > 1) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(12);
    RunTeam(threads, [&] {
      while (std::chrono::steady_clock::now() < until) _mm_pause();
    });
  }
}

Timing Time(const std::function<void()>& fn, int64_t iters, bool cpu) {
  const double c0 = Now(cpu), w0 = Now(false);
  for (int64_t i = 0; i < iters; ++i) fn();
  return {(Now(cpu) - c0) / static_cast<double>(iters),
          (Now(false) - w0) / static_cast<double>(iters)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The statistic --stat names: the median of the rounds, or the fastest.
double Summary(const std::vector<double>& v, bool best) {
  return best ? *std::min_element(v.begin(), v.end()) : Median(v);
}

double GeoMean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

// How t threads compare with one on a (shape, op): wall time at one thread over wall time at t
// (whatever --clock says: process CPU time adds up the threads' time): the median of the rounds'
// ratios, or with --stat best the fastest rounds' ratio (Speedup).
// The goal is 0.9 t (two threads at least 1.8x one), counted on the pairs above kScalingMflop MFLOP
// only: smaller ones are a few microseconds, where a parallel region's start is a visible share.
constexpr double kScalingMflop = 10;
// A goal whose time (one thread's over the goal) is below the memory floor at t threads is out
// of any kernel's reach on this machine: such pairs are still counted as below the goal, and
// shown with their floors. Below the streamed floor alone, it is out of reach of a kernel that
// stores its result past the caches (as the depthwise kernels do with results over 5 MiB).
struct Scaling {
  std::string shape, op;
  int threads = 2;
  double gflop = 0, bf = 0, blk = 0, goal = 0;
  double goal_ms = 0;                              // one thread's wall time over the goal
  double floor_plain_ms = 0, floor_stream_ms = 0;  // t threads' floors
  double floor_ms() const { return std::min(floor_plain_ms, floor_stream_ms); }
  bool counted = false;
  bool met() const { return bf >= goal; }
  bool below_floor() const { return goal_ms < floor_ms(); }
  bool below_stream_floor() const { return goal_ms < floor_stream_ms; }
};

// One thread's wall time over t threads' for a pair: with `best`, of the fastest rounds; else
// the median of the rounds' ratios (each round times both thread counts, seconds apart, so a
// round that the neighbours slowed at one thread count does not also set the median of that
// thread count).
double Speedup(const std::vector<double>& one, const std::vector<double>& many, bool best) {
  if (best || one.size() != many.size())
    return *std::min_element(one.begin(), one.end()) / *std::min_element(many.begin(), many.end());
  std::vector<double> ratios;
  for (size_t i = 0; i < one.size(); ++i) ratios.push_back(one[i] / many[i]);
  return Median(ratios);
}

std::vector<Scaling> ThreadScaling(const std::vector<Row>& rows, const std::vector<int>& threads,
                                   bool best) {
  std::vector<Scaling> out;
  if (std::find(threads.begin(), threads.end(), 1) == threads.end()) return out;
  for (const Row& one : rows) {
    if (one.threads != 1) continue;
    for (const Row& r : rows) {
      if (r.threads <= 1 || r.shape != one.shape || r.op != one.op) continue;
      Scaling s;
      s.shape = r.shape;
      s.op = r.op;
      s.threads = r.threads;
      s.gflop = r.gflop;
      s.bf = Speedup(one.bf_walls, r.bf_walls, best);
      s.blk = Speedup(one.blk_walls, r.blk_walls, best);
      s.goal = 0.9 * r.threads;
      s.goal_ms = one.bf_wall / s.goal * 1e3;
      s.floor_plain_ms = r.floor_plain_wall * 1e3;
      s.floor_stream_ms = r.floor_stream_wall * 1e3;
      s.counted = r.gflop * 1e3 > kScalingMflop;
      out.push_back(s);
    }
  }
  return out;
}

// Per op and thread count: how many of the counted pairs reach the goal, the lowest speedup,
// then every counted pair below the goal.
void PrintScaling(const std::vector<Scaling>& scaling, const std::vector<std::string>& ops,
                  const std::vector<int>& threads) {
  if (scaling.empty()) return;
  std::printf(
      "\nThreads over one thread, blockflow's wall time (goal: 0.9x the threads, on the "
      "pairs above %.0f MFLOP)\n\n",
      kScalingMflop);
  std::printf(
      "| op | threads | pairs counted | at the goal | goal below the floor (streamed floor) | "
      "lowest (oneDNN blocked there) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const std::string& o : ops) {
    for (int t : threads) {
      int counted = 0, met = 0, unreachable = 0, unstreamable = 0;
      const Scaling* low = nullptr;
      for (const Scaling& s : scaling) {
        if (s.op != o || s.threads != t || !s.counted) continue;
        ++counted;
        met += s.met() ? 1 : 0;
        unreachable += !s.met() && s.below_floor() ? 1 : 0;
        unstreamable += !s.met() && s.below_stream_floor() ? 1 : 0;
        if (!low || s.bf < low->bf) low = &s;
      }
      if (!low) continue;
      std::printf("| %s | %d | %d | %d | %d (%d) | %.2fx (%s; %.2fx) |\n", o.c_str(), t, counted,
                  met, unreachable, unstreamable, low->bf, low->shape.c_str(), low->blk);
    }
  }
  bool header = false;
  for (const Scaling& s : scaling) {
    if (!s.counted || s.met()) continue;
    if (!header) std::printf("\nBelow the goal:\n");
    header = true;
    std::printf(
        "  %-38s %-30s %d threads %.2fx (goal %.1fx: %.3f ms; memory floor %.3f ms plain, "
        "%.3f streamed%s; oneDNN blocked %.2fx)\n",
        s.op.c_str(), s.shape.c_str(), s.threads, s.bf, s.goal, s.goal_ms, s.floor_plain_ms,
        s.floor_stream_ms,
        s.below_floor()          ? ": the goal is below both"
        : s.below_stream_floor() ? ": the goal is below the streamed one"
                                 : "",
        s.blk);
  }
}

// Per op and thread count, the lowest share of the FMA peak blockflow reaches on the dense
// ResNet 3 x 3 layers (the goal: at least 85%), each row against the peak timed beside it.
void PrintPeakShares(const std::vector<Row>& rows, const std::vector<std::string>& ops,
                     const std::vector<int>& threads) {
  bool header = false;
  for (const std::string& o : ops) {
    for (int t : threads) {
      const Row* low = nullptr;
      for (const Row& r : rows) {
        if (r.op != o || r.threads != t || !r.resnet_3x3) continue;
        if (!low || r.gflop / r.bf / r.peak_gflops < low->gflop / low->bf / low->peak_gflops)
          low = &r;
      }
      if (!low) continue;
      if (!header) {
        std::printf(
            "\nShare of the FMA peak on the ResNet 3x3 layers, each against the peak timed "
            "beside it (goal: at least 85%%)\n\n| op | threads | lowest share | shape |\n"
            "|---|---|---|---|\n");
        header = true;
      }
      std::printf("| %s | %d | %.1f%% | %s |\n", o.c_str(), t,
                  100 * low->gflop / low->bf / low->peak_gflops, low->shape.c_str());
    }
  }
}

int Main(const Options& opt) {
  Expected<std::vector<SuiteShape>> suite = LoadShapeSuite(opt.shapes);
  if (!suite.ok()) {
    std::fprintf(stderr, "error: %s\n", suite.status().message().c_str());
    return 1;
  }
  const std::regex filter(opt.filter.empty() ? ".*" : opt.filter);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::vector<Row> rows;
  uint64_t seed = 1;
  for (const SuiteShape& s : *suite) {
    for (ConvOp op : s.ops) {
      const std::string op_name = ConvOpName(op, s.depthwise);
      if (!std::regex_search(op_name + "/" + s.name, filter)) continue;
      const ConvState state = *s.State(op);
      const ConvGeometry& g = state.geometry;
      Tensor x = RandomTensor(s.input, seed), w = RandomTensor(s.filter, seed + 1),
             dy = RandomTensor(s.output, seed + 2);
      seed += 3;
      Tensor out(DType::kFloat32, OperandShapes(state).out);
      Tensor floor_out(DType::kFloat32, OperandShapes(state).out);
      const Tensor& a = op == ConvOp::kBackpropInput ? w : x;
      const Tensor& b = op == ConvOp::kForward ? w : dy;
      // One lane per thread count, each with its own oneDNN primitive; every round times each
      // lane in turn, so that the thread counts of a pair are measured in the same seconds and
      // their ratio (ThreadScaling) does not take in what the neighbours did between them (on
      // the AVX-512 EPYC one thread of mnv2_dw_56x144's forward took 0.88 ms in one run and 1.34
      // in the next, when each thread count had its own minutes).
      std::vector<Lane> lanes(opt.threads.size());
      for (size_t li = 0; li < lanes.size(); ++li) {
        Lane& lane = lanes[li];
        const int threads = opt.threads[li];
        lane.k.num_threads = threads;
        // oneDNN's OpenMP runtime takes its threads from here, and some primitives fix their
        // thread count (and work split) when they are created: create them after it is set,
        // and set it again before each of the lane's runs.
        omp_set_num_threads(threads);
        // An algorithm oneDNN has no kernel of for this case: its direct one.
        try {
          lane.dc = MakeDnnl(eng, strm, op, g, x, w, dy, opt.algorithm);
        } catch (const dnnl::error&) {
          lane.dc = MakeDnnl(eng, strm, op, g, x, w, dy, dnnl::algorithm::convolution_direct);
        }
        DnnlCase& dc = lane.dc;
        const KernelContext& k = lane.k;
        lane.ways[0] = [&state, &a, &b, &out, &k, &op_name, &s] {
          const Status st = RunConv(KernelKind::kOptimized, state, a, b, &out, k);
          if (!st.ok()) {
            std::fprintf(stderr, "error: %s/%s: %s\n", op_name.c_str(), s.name.c_str(),
                         st.message().c_str());
            std::exit(1);
          }
        };
        lane.ways[1] = [&dc, &strm] { RunDnnl(dc, strm, false); };
        lane.ways[2] = [&dc, &strm] { RunDnnl(dc, strm, true); };
        lane.ways[3] = [&lane, threads] { lane.peak_flops = RunFmaPeak(threads, kPeakIters); };
        lane.floor = FloorOperands{.in = {a.data<float>(), b.data<float>()},
                                   .in_n = {a.num_elements(), b.num_elements()},
                                   .out = floor_out.data<float>(),
                                   .out_n = floor_out.num_elements()};
        lane.ways[4] = [&lane, threads] { RunFloor(lane.floor, threads, false); };
        lane.ways[5] = [&lane, threads] { RunFloor(lane.floor, threads, true); };
        // The blocked inputs once, then a warm-up call of each way, which also sizes the batches
        // of calls so that each round of each way takes about min_time / rounds.
        for (Operand& o : lane.dc.operands) {
          if (!o.output && o.prim != o.user)
            dnnl::reorder(o.user, o.prim).execute(strm, o.user, o.prim);
        }
        strm.wait();
        for (int i = 0; i < kWays; ++i) {
          const double t = Time(lane.ways[i], 1, false).wall;
          const double budget = opt.min_time / opt.rounds / (i >= 4 ? 4 : 1);
          lane.iters[i] = std::max<int64_t>(1, static_cast<int64_t>(budget / t));
        }
        // The check: blockflow's result against oneDNN's (the TF run leaves it in out_tf).
        Row& r = lane.row;
        r.shape = s.name;
        r.op = op_name;
        r.threads = threads;
        r.gflop = s.gflop;
        r.resnet_3x3 = !s.depthwise && s.name.rfind("resnet", 0) == 0 && s.filter.dim(0) == 3 &&
                       s.filter.dim(1) == 3;
        r.blk_impl = dc.impl;
        double max_ref = 0;
        const float* mine = out.data<float>();
        for (size_t i = 0; i < dc.out_tf.size(); ++i) {
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(dc.out_tf[i])));
          r.max_diff = std::max(r.max_diff, std::fabs(static_cast<double>(mine[i]) - dc.out_tf[i]));
        }
        // Both sum K products of values in [-1, 1) in float32, in different orders: their
        // rounding grows like sqrt(K) eps, far below this, and a misplaced operand changes the
        // result by the order of max_ref, far above it.
        const int64_t cog = g.out_depth / g.groups;  // output channels per group
        const int64_t k_terms = op == ConvOp::kBackpropFilter ? g.batch * g.out_h * g.out_w
                                : op == ConvOp::kBackpropInput
                                    ? g.filter_h * g.filter_w * cog
                                    : g.filter_h * g.filter_w * g.filter_in_depth;
        r.tolerance = 8 * 1.2e-7 * std::sqrt(static_cast<double>(k_terms)) * (1 + max_ref);
        r.ok = r.max_diff <= r.tolerance &&
               dc.out_tf.size() == static_cast<size_t>(out.num_elements());
      }
      for (int round = 0; round < opt.rounds; ++round) {
        for (Lane& lane : lanes) {
          omp_set_num_threads(lane.k.num_threads);
          for (int i = 0; i < kWays; ++i) {
            HandOver(i, lane.k.num_threads);
            const Timing t = Time(lane.ways[i], lane.iters[i], opt.cpu_clock);
            lane.clock[i].push_back(t.clock);
            lane.wall[i].push_back(t.wall);
          }
        }
      }
      for (Lane& lane : lanes) {
        Row& r = lane.row;
        r.bf = Summary(lane.clock[0], opt.best);
        r.blk = Summary(lane.clock[1], opt.best);
        r.tf = Summary(lane.clock[2], opt.best);
        r.bf_wall = Summary(lane.wall[0], opt.best);
        r.blk_wall = Summary(lane.wall[1], opt.best);
        r.tf_wall = Summary(lane.wall[2], opt.best);
        r.bf_walls = lane.wall[0];
        r.blk_walls = lane.wall[1];
        r.peak_gflops = lane.peak_flops / Summary(lane.clock[3], opt.best) / 1e9;
        r.floor_plain_wall = Summary(lane.wall[4], opt.best);
        r.floor_stream_wall = Summary(lane.wall[5], opt.best);
        const double pct = r.gflop / r.bf / r.peak_gflops * 100;
        std::printf(
            "%-38s %-28s t%d  bf %8.3f ms  blk %8.3f  tf %8.3f  bf/blk %5.2f  bf/tf %5.2f"
            "  %5.1f%% of %5.1f GFLOP/s  floor %.3f / %.3f  %s%s\n",
            op_name.c_str(), s.name.c_str(), r.threads, r.bf * 1e3, r.blk * 1e3, r.tf * 1e3,
            r.bf / r.blk, r.bf / r.tf, pct, r.peak_gflops, r.floor_plain_wall * 1e3,
            r.floor_stream_wall * 1e3,
            r.ok ? "" : ("MISMATCH " + std::to_string(r.max_diff) + " ").c_str(),
            r.blk_impl.c_str());
        std::fflush(stdout);
        rows.push_back(r);
      }
    }
  }

  // The summary: per op and thread count, the geometric mean of blockflow / oneDNN-blocked and
  // the worst blockflow / oneDNN-with-TF-layouts.
  const char* clock_name = opt.cpu_clock ? "process CPU time" : "wall time";
  std::printf("\nFMA peak (float32, %s), timed beside each case:", PeakIsa());
  for (int t : opt.threads) {
    std::vector<double> p;
    for (const Row& r : rows)
      if (r.threads == t) p.push_back(r.peak_gflops);
    if (p.empty()) continue;
    std::printf("  %d thread%s median %.1f GFLOP/s (%.1f-%.1f)", t, t > 1 ? "s" : "", Median(p),
                *std::min_element(p.begin(), p.end()), *std::max_element(p.begin(), p.end()));
  }
  std::printf("\nCaches as blockflow's kernels take them: %s\n", internal::CacheSummary().c_str());
  std::printf("\nRatios of %s, %s of %d rounds, blockflow / oneDNN (below 1: blockflow faster)\n\n",
              clock_name, opt.best ? "the best" : "the median", opt.rounds);
  std::printf(
      "| op | threads | shapes | geomean vs blocked | geomean vs TF layouts | worst vs TF layouts "
      "|\n");
  std::printf("|---|---|---|---|---|---|\n");
  bool all_ok = true;
  std::vector<std::string> ops;
  for (const Row& r : rows) {
    all_ok = all_ok && r.ok;
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  }
  for (const std::string& o : ops) {
    for (int t : opt.threads) {
      std::vector<double> blk, tf;
      const Row* worst = nullptr;
      for (const Row& r : rows) {
        if (r.op != o || r.threads != t) continue;
        blk.push_back(r.bf / r.blk);
        tf.push_back(r.bf / r.tf);
        if (!worst || r.bf / r.tf > worst->bf / worst->tf) worst = &r;
      }
      if (!worst) continue;
      std::printf("| %s | %d | %zu | %.2f | %.2f | %.2f (%s) |\n", o.c_str(), t, blk.size(),
                  GeoMean(blk), GeoMean(tf), worst->bf / worst->tf, worst->shape.c_str());
    }
  }
  PrintPeakShares(rows, ops, opt.threads);
  const std::vector<Scaling> scaling = ThreadScaling(rows, opt.threads, opt.best);
  PrintScaling(scaling, ops, opt.threads);
  if (!all_ok) std::printf("\nMISMATCH: some results differ from oneDNN's beyond tolerance\n");

  if (!opt.json.empty()) {
    nlohmann::json j;
    j["clock"] = opt.cpu_clock ? "cpu" : "wall";
    j["stat"] = opt.best ? "best" : "median";
    j["onednn_algorithm"] = opt.algorithm_name;
    j["onednn_version"] = std::to_string(dnnl::version()->major) + "." +
                          std::to_string(dnnl::version()->minor) + "." +
                          std::to_string(dnnl::version()->patch);
    j["fma_peak_isa"] = PeakIsa();
    j["caches"] = internal::CacheSummary();
    for (const Row& r : rows) {
      j["results"].push_back({{"shape", r.shape},
                              {"op", r.op},
                              {"threads", r.threads},
                              {"gflop", r.gflop},
                              {"bf_ms", r.bf * 1e3},
                              {"onednn_blocked_ms", r.blk * 1e3},
                              {"onednn_tf_ms", r.tf * 1e3},
                              {"bf_wall_ms", r.bf_wall * 1e3},
                              {"onednn_blocked_wall_ms", r.blk_wall * 1e3},
                              {"onednn_tf_wall_ms", r.tf_wall * 1e3},
                              {"ratio_blocked", r.bf / r.blk},
                              {"ratio_tf", r.bf / r.tf},
                              {"fma_peak_gflops", r.peak_gflops},
                              {"peak_fraction", r.gflop / r.bf / r.peak_gflops},
                              {"memory_floor_plain_wall_ms", r.floor_plain_wall * 1e3},
                              {"memory_floor_streamed_wall_ms", r.floor_stream_wall * 1e3},
                              {"onednn_impl", r.blk_impl},
                              {"max_abs_diff", r.max_diff},
                              {"tolerance", r.tolerance},
                              {"ok", r.ok}});
    }
    for (const Scaling& s : scaling) {
      j["scaling"].push_back({{"shape", s.shape},
                              {"op", s.op},
                              {"threads", s.threads},
                              {"gflop", s.gflop},
                              {"bf_speedup", s.bf},
                              {"onednn_blocked_speedup", s.blk},
                              {"goal", s.goal},
                              {"goal_ms", s.goal_ms},
                              {"memory_floor_ms", s.floor_ms()},
                              {"goal_below_memory_floor", s.below_floor()},
                              {"goal_below_streamed_floor", s.below_stream_floor()},
                              {"counted", s.counted},
                              {"met", s.met()}});
    }
    std::ofstream f(opt.json);
    f << j.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "error: cannot write '%s'\n", opt.json.c_str());
      return 1;
    }
  }
  return all_ok ? 0 : 2;
}

}  // namespace
}  // namespace blockflow::conv

int main(int argc, char** argv) {
  blockflow::conv::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--shapes" && has_value) {
      opt.shapes = argv[++i];
    } else if (a == "--threads" && has_value) {
      opt.threads.clear();
      std::string list = argv[++i];
      for (size_t p = 0; p <= list.size();) {
        const size_t q = std::min(list.find(',', p), list.size());
        opt.threads.push_back(std::max(1, std::atoi(list.substr(p, q - p).c_str())));
        p = q + 1;
      }
    } else if (a == "--rounds" && has_value) {
      opt.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--min-time" && has_value) {
      opt.min_time = std::atof(argv[++i]);
    } else if (a == "--filter" && has_value) {
      opt.filter = argv[++i];
    } else if ((a == "--clock" || a == "--stat") && has_value) {
      // Two-way choices: the first value named clears the option, the second sets it.
      const bool clock = a == "--clock";
      const char* off = clock ? "wall" : "median";
      const char* on = clock ? "cpu" : "best";
      const std::string c = argv[++i];
      if (c != off && c != on) {
        std::fprintf(stderr, "error: %s takes %s or %s, not '%s'\n", a.c_str(), off, on, c.c_str());
        return 1;
      }
      (clock ? opt.cpu_clock : opt.best) = c == on;
    } else if (a == "--json" && has_value) {
      opt.json = argv[++i];
    } else if (a == "--onednn-algorithm" && has_value) {
      opt.algorithm_name = argv[++i];
      const std::optional<dnnl::algorithm> algorithm =
          blockflow::conv::OneDnnAlgorithm(opt.algorithm_name);
      if (!algorithm) {
        std::fprintf(stderr, "error: --onednn-algorithm takes direct, auto or winograd, not '%s'\n",
                     opt.algorithm_name.c_str());
        return 1;
      }
      opt.algorithm = *algorithm;
    } else {
      const bool help = a == "--help" || a == "-h";
      std::fprintf(help ? stdout : stderr,
                   "usage: bf_vs_onednn [--shapes FILE] [--threads 1,2] [--rounds N] "
                   "[--min-time SECONDS] [--filter REGEX] [--clock wall|cpu] [--stat median|best] "
                   "[--onednn-algorithm direct|auto|winograd] [--json FILE]\n");
      return help ? 0 : 1;
    }
  }
  try {
    return blockflow::conv::Main(opt);
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "error: oneDNN: %s (status %d)\n", e.what(), static_cast<int>(e.status));
    return 1;
  }
}
