// bf_conv_bench: the convolution kernels over the shape suite (bench/shapes.json).
//
//   bf_conv_bench [--shapes FILE] [--threads N] [--dtype NAME] [--batch N] [google benchmark flags]
//   bf_conv_bench --benchmark_filter='Conv2DBackpropFilter/resnet' --benchmark_min_time=0.05
//
// One benchmark per (op, shape, kernel), named "<op>/<shape>/<optimized|reference>"; the
// reference kernel runs only where the suite marks the shape `naive`. Conv2D shapes also run
// the forward Conv2D. Every (op, shape) also runs in NCHW (data_format NCHW, the same problem
// with its activations transposed), named "<op>/<shape>/nchw/optimized", so the two layouts can
// be compared interleaved:
//
//   bf_conv_bench --threads 1 --benchmark_filter='Conv2DBackpropFilter/resnet_28x128_3x3_128_s1/'
//       --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//
// Counters: GFLOP/s with the suite's formula (2*N*OH*OW*KH*KW*Cin/groups*Cout, padding taps
// counted) and GB/s of the tensors read and written once. float32, or the floating dtype
// --dtype names (float64, float16, bfloat16: the same random values, rounded). --batch N sets
// every shape's batch to N (a training batch: activations past the caches and the kernels' kept
// buffers).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/shape_suite.h"
#include "blocks/conv/conv_kernels.h"
#include "blocks/conv/isa.h"
#include "core/tensor.h"

namespace blockflow::conv {
namespace {

struct BenchCase {
  std::string name;
  ConvState state;
  double gflop = 0;
  Shape x_shape, w_shape, dy_shape;
  uint64_t seed = 0;
  DType dtype = DType::kFloat32;
  bool nchw = false;  // the shapes above are then in NCHW order
  Tensor x, w, dy;    // made on first use, so a filtered run does not fill the whole suite
};

void RunCase(benchmark::State& state, BenchCase& c, KernelKind kind, int threads) {
  if (c.x.shape() != c.x_shape) {
    c.x = RandomTensor(c.x_shape, c.seed).CastTo(c.dtype);
    c.w = RandomTensor(c.w_shape, c.seed + 1).CastTo(c.dtype);
    c.dy = RandomTensor(c.dy_shape, c.seed + 2).CastTo(c.dtype);
  }
  const ConvOp op = c.state.op;
  Tensor out(c.dtype, OperandShapes(c.state).out);
  const Tensor& a = op == ConvOp::kBackpropInput ? c.w : c.x;
  const Tensor& b = op == ConvOp::kForward ? c.w : c.dy;
  KernelContext k;
  k.num_threads = threads;
  for (auto _ : state) {
    const Status s = RunConv(kind, c.state, a, b, &out, k);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.raw());
    benchmark::ClobberMemory();
  }
  // x, w and dy are each op's two inputs and its output.
  const double bytes = static_cast<double>(c.x.num_bytes() + c.w.num_bytes() + c.dy.num_bytes());
  state.counters["GFLOP/s"] =
      benchmark::Counter(c.gflop, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// `batch` > 0: every shape's batch set to it (its GFLOP scaled alike), for layers whose
// activations outgrow the caches and the kernels' kept buffers, as in training.
int RegisterSuite(const std::string& path, int threads, DType dtype, int64_t batch) {
  Expected<std::vector<SuiteShape>> suite = LoadShapeSuite(path);
  if (!suite.ok()) {
    std::fprintf(stderr, "error: %s\n", suite.status().message().c_str());
    return 1;
  }
  if (batch > 0) {
    for (SuiteShape& s : *suite) {
      if (s.input.dim(0) > 0) s.gflop *= static_cast<double>(batch) / s.input.dim(0);
      s.input.set_dim(0, batch);
      s.output.set_dim(0, batch);
    }
  }
  static std::vector<std::unique_ptr<BenchCase>> cases;
  uint64_t seed = 1;
  for (const SuiteShape& s : *suite) {
    for (ConvOp op : s.ops) {
      auto make_case = [&](bool nchw) {
        auto c = std::make_unique<BenchCase>();
        c->name = s.name;
        c->state = nchw ? *s.StateNCHW(op, s.input) : *s.State(op);
        c->gflop = s.gflop;
        c->nchw = nchw;
        c->x_shape = nchw ? SuiteShape::ToNCHW(s.input) : s.input;
        c->w_shape = s.filter;
        c->dy_shape = nchw ? SuiteShape::ToNCHW(s.output) : s.output;
        c->seed = seed;
        c->dtype = dtype;
        BenchCase* cp = c.get();
        cases.push_back(std::move(c));
        return cp;
      };
      BenchCase* cp = make_case(false);
      BenchCase* nchw = make_case(true);
      seed += 3;
      const std::string name = std::string(ConvOpName(op, s.depthwise)) + "/" + cp->name;
      benchmark::RegisterBenchmark((name + "/nchw/optimized").c_str(),
                                   [nchw, threads](benchmark::State& st) {
                                     RunCase(st, *nchw, KernelKind::kOptimized, threads);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark((name + "/optimized").c_str(),
                                   [cp, threads](benchmark::State& st) {
                                     RunCase(st, *cp, KernelKind::kOptimized, threads);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      if (s.naive) {
        benchmark::RegisterBenchmark((name + "/reference").c_str(),
                                     [cp, threads](benchmark::State& st) {
                                       RunCase(st, *cp, KernelKind::kReference, threads);
                                     })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(1);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace blockflow::conv

int main(int argc, char** argv) {
  std::string shapes = BF_BENCH_SHAPES;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  blockflow::DType dtype = blockflow::DType::kFloat32;
  int64_t batch = 0;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--shapes") == 0) {
      shapes = argv[++i];
    } else if (i + 1 < argc && std::strcmp(argv[i], "--threads") == 0) {
      threads = std::atoi(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(argv[i], "--dtype") == 0) {
      const std::optional<blockflow::DType> d = blockflow::ParseDType(argv[++i]);
      if (!d || !blockflow::IsFloatingDType(*d)) {
        std::fprintf(stderr,
                     "error: --dtype '%s': expected float32, float64, float16 or bfloat16\n",
                     argv[i]);
        return 1;
      }
      dtype = *d;
    } else if (i + 1 < argc && std::strcmp(argv[i], "--batch") == 0) {
      batch = std::atoll(argv[++i]);
      if (batch <= 0) {
        std::fprintf(stderr, "error: --batch '%s': expected a positive number of images\n",
                     argv[i]);
        return 1;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (blockflow::conv::RegisterSuite(shapes, threads, dtype, batch) != 0) return 1;
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("dtype", std::string(blockflow::DTypeName(dtype)));
  benchmark::AddCustomContext("kernel_caches", blockflow::conv::internal::CacheSummary());
  if (batch > 0) benchmark::AddCustomContext("batch", std::to_string(batch));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
