// bf_conv_bench: the convolution kernels over the shape suite (bench/shapes.json).
//
//   bf_conv_bench [--shapes FILE] [--threads N] [google benchmark flags]
//   bf_conv_bench --benchmark_filter='Conv2DBackpropFilter/resnet' --benchmark_min_time=0.05
//
// One benchmark per (op, shape, kernel), named "<op>/<shape>/<optimized|reference>"; the
// reference kernel runs only where the suite marks the shape `naive`. Conv2D shapes also run
// the forward Conv2D. Counters: GFLOP/s with the suite's formula (2*N*OH*OW*KH*KW*Cin/groups*Cout,
// padding taps counted) and GB/s of the tensors read and written once. float32, NHWC.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "blocks/conv/conv2d.h"
#include "blocks/conv/conv_geometry.h"
#include "blocks/conv/depthwise_conv2d.h"
#include "core/tensor.h"

namespace blockflow::conv {
namespace {

struct BenchCase {
  std::string name, op;
  ConvAttrs attrs;
  ConvGeometry geometry;
  double gflop = 0;
  Shape x_shape, w_shape, dy_shape;
  uint64_t seed = 0;
  Tensor x, w, dy;  // made on first use, so a filtered run does not fill the whole suite
};

Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = u(rng);
  return t;
}

void RunCase(benchmark::State& state, BenchCase& c, KernelKind kind, int threads) {
  if (c.x.shape() != c.x_shape) {
    c.x = Random(c.x_shape, c.seed);
    c.w = Random(c.w_shape, c.seed + 1);
    c.dy = Random(c.dy_shape, c.seed + 2);
  }
  const ConvGeometry& g = c.geometry;
  Tensor out(DType::kFloat32, c.op == "Conv2D" || c.op == "DepthwiseConv2dNative" ? c.dy.shape()
                              : c.op.find("BackpropInput") != std::string::npos   ? c.x.shape()
                                                                                  : c.w.shape());
  for (auto _ : state) {
    Status s;
    if (c.op == "Conv2D")
      s = RunConv2D(kind, c.attrs, g, c.x, c.w, &out, threads);
    else if (c.op == "Conv2DBackpropInput")
      s = RunConv2DBackpropInput(kind, c.attrs, g, c.w, c.dy, &out, threads);
    else if (c.op == "Conv2DBackpropFilter")
      s = RunConv2DBackpropFilter(kind, c.attrs, g, c.x, c.dy, &out, threads);
    else if (c.op == "DepthwiseConv2dNative")
      s = RunDepthwiseConv2d(kind, c.attrs, g, c.x, c.w, &out, threads);
    else if (c.op == "DepthwiseConv2dNativeBackpropInput")
      s = RunDepthwiseConv2dBackpropInput(kind, c.attrs, g, c.w, c.dy, &out, threads);
    else
      s = RunDepthwiseConv2dBackpropFilter(kind, c.attrs, g, c.x, c.dy, &out, threads);
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

std::vector<int64_t> Ints(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

int RegisterSuite(const std::string& path, int threads) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "error: cannot open shape suite '%s'\n", path.c_str());
    return 1;
  }
  const nlohmann::json suite = nlohmann::json::parse(f);
  static std::vector<std::unique_ptr<BenchCase>> cases;
  uint64_t seed = 1;
  for (const nlohmann::json& s : suite["shapes"]) {
    const bool depthwise = s["kind"] == "depthwise";
    AttrMap attrs(nlohmann::json{{"strides", s["strides"]}, {"padding", s["padding"]}});
    Expected<ConvAttrs> a = ParseConvAttrs(attrs);
    const Shape in(Ints(s["input"])), filter(Ints(s["filter"]));
    Expected<ConvGeometry> g =
        a.ok() ? MakeConvGeometry(*a, in, filter, depthwise) : Expected<ConvGeometry>(a.status());
    if (!g.ok()) {
      std::fprintf(stderr, "error: shape '%s': %s\n", s["name"].get<std::string>().c_str(),
                   g.status().message().c_str());
      return 1;
    }
    // The suite lists the output and pads for reference: they must agree with our geometry.
    const Shape out = OutputShape(*a, *g);
    const std::vector<int64_t> pads = {g->pad_top, g->pad_bottom, g->pad_left, g->pad_right};
    if (out != Shape(Ints(s["output"])) || pads != Ints(s["pads_tblr"]) ||
        std::abs(g->Flops() / 1e9 - s["gflop"].get<double>()) > 1e-5) {
      std::fprintf(stderr, "error: shape '%s': output %s pads %s flops %g differ from the suite\n",
                   s["name"].get<std::string>().c_str(), out.ToString().c_str(),
                   IntsToString(pads).c_str(), g->Flops() / 1e9);
      return 1;
    }
    std::vector<std::string> ops = s["ops"].get<std::vector<std::string>>();
    if (!depthwise) ops.push_back("Conv2D");
    for (const std::string& op : ops) {
      auto c = std::make_unique<BenchCase>();
      c->name = s["name"];
      c->op = op;
      c->attrs = *a;
      c->geometry = *g;
      c->gflop = g->Flops() / 1e9;
      c->x_shape = in;
      c->w_shape = filter;
      c->dy_shape = out;
      c->seed = seed;
      seed += 3;
      BenchCase* cp = c.get();
      cases.push_back(std::move(c));
      benchmark::RegisterBenchmark((op + "/" + cp->name + "/optimized").c_str(),
                                   [cp, threads](benchmark::State& st) {
                                     RunCase(st, *cp, KernelKind::kOptimized, threads);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      if (s.value("naive", false)) {
        benchmark::RegisterBenchmark((op + "/" + cp->name + "/reference").c_str(),
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
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--shapes") == 0) {
      shapes = argv[++i];
    } else if (i + 1 < argc && std::strcmp(argv[i], "--threads") == 0) {
      threads = std::atoi(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (blockflow::conv::RegisterSuite(shapes, threads) != 0) return 1;
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
