// bf_session_bench: the runtime around the kernels, in the steady state a training loop sees.
//
//   bf_session_bench [--threads N] [google benchmark flags]
//
// Cases:
//   DepthwiseChain/20x12.8MB     20 chained DepthwiseConv2dNative blocks on [8,56,56,128] float32
//                                activations (12.8 MB each), the last one fetched. Counters:
//                                peak_outputs (pool peak over one run / one activation), faults
//                                per run (minor page faults), and the time per run.
//   NpyConst/load/first|cached   a 100 MB .npy Const fetched as is: the first run of a fresh
//                                Session (file in the page cache) against `cat_ms` (reading the
//                                same file to nowhere in 1 MB chunks), then later runs.
//   NpyConst/sum/first|cached    the same Const reduced by Sum, so every byte is touched.
//   TinyGraph/run                Session::Run of a Const → Identity graph: the per-run overhead.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "blocks/register_blocks.h"
#include "core/allocator.h"
#include "core/npy.h"
#include "core/session.h"

namespace blockflow {
namespace {

namespace fs = std::filesystem;

int g_threads = 1;

Graph ParseOrDie(const std::string& text, const std::string& base_dir = "") {
  Expected<Graph> g = ParseGraphJson(text, "bench.json", base_dir);
  BF_CHECK(g.ok(), g.status().message());
  return std::move(g).value();
}

std::string GraphJson(const std::string& nodes) {
  return R"({"format": "blockflow.graph", "version": 1, "nodes": [)" + nodes + "]}";
}

Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Uninitialized(DType::kFloat32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = u(rng);
  return t;
}

long MinorFaults() {
  struct rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void DepthwiseChain(benchmark::State& state) {
  constexpr int kLength = 20;
  const Shape act{8, 56, 56, 128};
  std::string nodes =
      R"({"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [8, 56, 56, 128]}},
         {"id": "w", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [3, 3, 128, 1]}})";
  std::string prev = "x";
  for (int i = 0; i < kLength; ++i) {
    const std::string id = "dw" + std::to_string(i);
    nodes += R"(, {"id": ")" + id + R"(", "op": "DepthwiseConv2dNative", "inputs": {"input": ")" +
             prev + R"(", "filter": "w"}, "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}})";
    prev = id;
  }
  const Session session(ParseOrDie(GraphJson(nodes)));
  // Small weights keep the activations finite through twenty layers.
  Tensor w = Random(Shape{3, 3, 128, 1}, 2);
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] *= 0.3f;
  const std::map<std::string, Tensor> feeds{{"x", Random(act, 1)}, {"w", w}};
  RunOptions options;
  options.num_threads = g_threads;
  std::vector<Tensor> out;
  if (!session.Run(feeds, {prev}, &out, options).ok()) {
    state.SkipWithError("run failed");
    return;
  }
  out.clear();
  BufferPool& pool = BufferPool::Global();
  size_t peak = 0;
  long faults = 0;
  for (auto _ : state) {
    out.clear();
    const size_t before = pool.stats().bytes_in_use;
    pool.ResetPeak();
    const long f0 = MinorFaults();
    Status s = session.Run(feeds, {prev}, &out, options);
    faults += MinorFaults() - f0;
    peak = std::max(peak, pool.stats().peak_bytes_in_use - before);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  const double activation = static_cast<double>(act.num_elements()) * sizeof(float);
  state.counters["peak_outputs"] = static_cast<double>(peak) / activation;
  state.counters["peak_MB"] = static_cast<double>(peak) / 1e6;
  state.counters["faults_per_run"] =
      static_cast<double>(faults) / static_cast<double>(state.iterations());
}

// A 100 MB float32 .npy in a temporary folder, made once.
const fs::path& BigNpy() {
  static const fs::path path = [] {
    const fs::path dir =
        fs::temp_directory_path() / ("bf_session_bench_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path p = dir / "big.npy";
    Status s = WriteNpy(p.string(), Random(Shape{25'000'000}, 3));
    BF_CHECK(s.ok(), s.message());
    return p;
  }();
  return path;
}

double CatMs(const fs::path& path) {
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  BF_CHECK(fd >= 0, "cannot open " + path.string());
  std::vector<char> buf(size_t{1} << 20);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void NpyConst(benchmark::State& state, bool sum, bool first) {
  const fs::path& path = BigNpy();
  std::string nodes = R"({"id": "c", "op": "Const", "attrs": {"dtype": "float32", "file": ")" +
                      path.filename().string() + R"("}})";
  if (sum) {
    nodes += R"(, {"id": "axis", "op": "Const", "attrs": {"dtype": "int32", "value": [0]}},
                 {"id": "s", "op": "Sum", "inputs": {"input": "c", "axis": "axis"}})";
  }
  const Graph graph = ParseOrDie(GraphJson(nodes), path.parent_path().string());
  const std::string fetch = sum ? "s" : "c";
  RunOptions options;
  options.num_threads = g_threads;
  double cat_ms = 0;
  std::vector<Tensor> out;
  auto cached = std::make_unique<Session>(graph);
  if (!first && !cached->Run({}, {fetch}, &out, options).ok()) state.SkipWithError("run failed");
  for (auto _ : state) {
    out.clear();
    if (first) {
      state.PauseTiming();
      cat_ms += CatMs(path);  // also puts the file in the page cache, as a cat before a run would
      cached = std::make_unique<Session>(graph);
      state.ResumeTiming();
    }
    Status s = cached->Run({}, {fetch}, &out, options);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  if (first) state.counters["cat_ms"] = cat_ms / static_cast<double>(state.iterations());
}

void TinyGraph(benchmark::State& state) {
  const Session session(ParseOrDie(GraphJson(
      R"({"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [4]}},
         {"id": "y", "op": "Identity", "inputs": {"input": "x"}})")));
  const std::map<std::string, Tensor> feeds{{"x", Tensor::FromVector<float>({1, 2, 3, 4})}};
  std::vector<Tensor> out;
  RunOptions options;
  options.num_threads = 1;
  for (auto _ : state) {
    Status s = session.Run(feeds, {"y"}, &out, options);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
}

}  // namespace
}  // namespace blockflow

int main(int argc, char** argv) {
  using namespace blockflow;
  RegisterBuiltinBlocks();
  g_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--threads") == 0) {
      g_threads = std::atoi(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RegisterBenchmark("DepthwiseChain/20x12.8MB", DepthwiseChain)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (bool sum : {false, true}) {
    for (bool first : {true, false}) {
      const std::string name =
          std::string("NpyConst/") + (sum ? "sum" : "load") + (first ? "/first" : "/cached");
      benchmark::RegisterBenchmark(name.c_str(),
                                   [sum, first](benchmark::State& st) { NpyConst(st, sum, first); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(first ? 5 : 20);
    }
  }
  benchmark::RegisterBenchmark("TinyGraph/run", TinyGraph)->Unit(benchmark::kMicrosecond);
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("bf_session_bench_" + std::to_string(::getpid())),
                 ec);
  return 0;
}
