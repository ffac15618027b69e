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
//   TinyGraph/run                Session::Run of a Placeholder → Identity graph: the per-run
//                                overhead.
//   OneConst/run                 Session::Run fetching a one-Const graph's value (what
//                                bench/python_overhead.py compares the Python module with).
//   Overhead/<graph>             a whole Session::Run against the sum of its kernels called
//                                alone (RunNodeKernel, inputs ready, state prepared), alternating
//                                in one loop. Counters: kernels_ms, run_ms, overhead_us_per_node.
//                                Graphs: the training-step sample and a one-block depthwise
//                                layer (mnv1_dw4_56x128_s1).
//   Team/<runtime>/start         RunTeam of an empty body on --threads threads (at least 2):
//   Team/<runtime>/barrier       the cost of starting and joining a kernel's team, and of one
//                                TeamBarrier more (10 a team, per barrier), on the pool and on
//                                OpenMP (core/team.h). The OpenMP cases run last: GCC's runtime
//                                keeps its threads spinning for milliseconds after a region,
//                                which would take a CPU from the pool's threads.
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
#include "core/team.h"

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
    fs::path p = dir / "big.npy";
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

void OneConst(benchmark::State& state) {
  const Session session(ParseOrDie(GraphJson(
      R"({"id": "c", "op": "Const", "attrs": {"dtype": "float32", "shape": [4], "value": 1}})")));
  std::vector<Tensor> out;
  RunOptions options;
  options.num_threads = 1;
  for (auto _ : state) {
    Status s = session.Run({}, {"c"}, &out, options);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
}

// Runs `graph` whole and node by node, alternately; see Overhead/ above.
void GraphOverhead(benchmark::State& state, const Graph& graph,
                   const std::map<std::string, Tensor>& feeds) {
  const Session session(graph);
  RunOptions options;
  options.num_threads = g_threads;
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions keep = options;
  keep.all_outputs = &all;
  std::vector<Tensor> out;
  if (!session.Run(feeds, {}, &out, keep).ok()) {
    state.SkipWithError("run failed");
    return;
  }
  // Every kernel node with its inputs (from the full run) and its prepared state.
  struct Step {
    const OpSchema* schema;
    const NodeInfo* info;
    std::vector<const Tensor*> inputs;
    std::shared_ptr<const void> state;
  };
  const GraphAnalysis analysis = AnalyzeGraph(graph, OpRegistry::Global(), &feeds);
  std::vector<Step> steps;
  for (int i : analysis.topo_order) {
    const Node& node = graph.nodes()[static_cast<size_t>(i)];
    const NodeInfo& info = analysis.nodes[static_cast<size_t>(i)];
    const OpSchema* schema = OpRegistry::Global().Find(node.op);
    if (info.IsFolded() || IsFedBlock(*schema)) continue;
    Step step{schema, &info, {}, nullptr};
    for (const PortDef& port : schema->inputs()) {
      auto it = node.inputs.find(port.name);
      if (it == node.inputs.end()) continue;
      for (const Endpoint& e : it->second) {
        step.inputs.push_back(&all.at(e.node).at(static_cast<size_t>(e.index)));
      }
    }
    Expected<std::shared_ptr<const void>> prepared = PrepareNode(*schema, info);
    if (!prepared.ok()) {
      state.SkipWithError(prepared.status().message().c_str());
      return;
    }
    step.state = *prepared;
    steps.push_back(std::move(step));
  }
  using Clock = std::chrono::steady_clock;
  double kernels_ms = 0, run_ms = 0;
  auto kernels = [&] {
    const auto t0 = Clock::now();
    for (const Step& step : steps) {
      std::vector<Tensor> outs;
      Status s = RunNodeKernel(*step.schema, *step.info, step.inputs, &outs, options,
                               graph.base_dir, step.state.get());
      if (!s.ok()) state.SkipWithError(s.message().c_str());
    }
    kernels_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  auto whole = [&] {
    const auto t0 = Clock::now();
    Status s = session.Run(feeds, {}, &out, options);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    run_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    out.clear();
  };
  // Alternate which goes first, so neither always finds the other's data in cache.
  bool kernels_first = true;
  for (auto _ : state) {
    if (kernels_first) {
      kernels();
      whole();
    } else {
      whole();
      kernels();
    }
    kernels_first = !kernels_first;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["kernels_ms"] = kernels_ms / n;
  state.counters["run_ms"] = run_ms / n;
  state.counters["overhead_us_per_node"] =
      1000.0 * (run_ms - kernels_ms) / n / static_cast<double>(steps.size());
  state.counters["kernel_nodes"] = static_cast<double>(steps.size());
}

void TrainStepOverhead(benchmark::State& state) {
  const fs::path path = fs::path(BF_SAMPLES_DIR) / "mobilenet_block_train_step.json";
  Expected<Graph> g = LoadGraphFile(path.string());
  if (!g.ok()) {
    state.SkipWithError(g.status().message().c_str());
    return;
  }
  std::map<std::string, Tensor> feeds;
  for (const char* id : {"x", "target"}) {
    Expected<Tensor> t = ReadNpy(
        (fs::path(BF_SAMPLES_DIR) / "mobilenet_block_train_step" / (std::string(id) + ".npy"))
            .string());
    if (!t.ok()) {
      state.SkipWithError(t.status().message().c_str());
      return;
    }
    feeds[id] = *t;
  }
  GraphOverhead(state, *g, feeds);
}

void DepthwiseLayerOverhead(benchmark::State& state) {
  const Graph graph = ParseOrDie(GraphJson(
      R"({"id": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [8, 56, 56, 128]}},
         {"id": "w", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [3, 3, 128, 1]}},
         {"id": "y", "op": "DepthwiseConv2dNative", "inputs": {"input": "x", "filter": "w"},
          "attrs": {"strides": [1, 1, 1, 1], "padding": "SAME"}})"));
  GraphOverhead(state, graph,
                {{"x", Random(Shape{8, 56, 56, 128}, 4)}, {"w", Random(Shape{3, 3, 128, 1}, 5)}});
}

// An empty team on `runtime` per iteration; with `barriers`, ten TeamBarrier calls in it, timed
// per barrier (each figure includes a tenth of a start: Team/<runtime>/start's).
void TeamCost(benchmark::State& state, TeamRuntime runtime, bool barriers) {
  const TeamRuntime before = GetTeamRuntime();
  SetTeamRuntime(runtime);
  const int threads = std::max(2, g_threads);
  constexpr int kBarriers = 10;
  for (auto _ : state) {
    RunTeam(threads, [&] {
      if (barriers) {
        for (int i = 0; i < kBarriers; ++i) TeamBarrier();
      }
    });
  }
  if (barriers) {
    state.counters["per_barrier"] =
        benchmark::Counter(static_cast<double>(state.iterations() * kBarriers),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
  state.counters["threads"] = threads;
  SetTeamRuntime(before);
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
  benchmark::RegisterBenchmark("OneConst/run", OneConst)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Overhead/mobilenet_block_train_step", TrainStepOverhead)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("Overhead/mnv1_dw4_56x128_s1", DepthwiseLayerOverhead)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    for (bool barriers : {false, true}) {
      const std::string name = std::string("Team/") +
                               (runtime == TeamRuntime::kPool ? "pool" : "openmp") +
                               (barriers ? "/barrier" : "/start");
      benchmark::RegisterBenchmark(
          name.c_str(),
          [runtime, barriers](benchmark::State& st) { TeamCost(st, runtime, barriers); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("bf_session_bench_" + std::to_string(::getpid())),
                 ec);
  return 0;
}
