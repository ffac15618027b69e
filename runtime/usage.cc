#include "runtime/usage.h"

#include <map>
#include <sstream>

#include "runtime/cli.h"

namespace blockflow::cli {
namespace {

struct CommandHelp {
  const char* usage;
  std::string details;
};

const std::map<std::string, CommandHelp>& Helps() {
  // The flags that lift or set a graph's safety limits, the same on run, validate and bench.
  static const std::string kGraphSafetyFlags =
      "  --allow-outside-files\n"
      "                      let the graph name files outside its folder (absolute paths,\n"
      "                      '..', links out); refused by default, as graphs get shared\n"
      "  --memory-limit BYTES\n"
      "                      refuse, before anything is allocated, a graph or feed whose\n"
      "                      tensors (any one, or those alive at once) need more than BYTES\n"
      "                      (suffixes K, M, G: 512M, 2G); default: half of this machine's\n"
      "                      memory\n";
  static const std::map<std::string, CommandHelp> helps = {
      {"run",
       {"usage: blockflow run GRAPH.json [--feed ID=FILE.npy]... [--fetch ID[:K]]... [--out DIR]\n"
        "                     [--threads N] [--profile] [--trace FILE.json] [--reference]\n"
        "                     [--allow-outside-files] [--memory-limit BYTES]\n"
        "       mpirun -n P blockflow run GRAPH.json --shard ID[:AXIS]... --feed ID=FILE.npy...\n"
        "                     [--combine ID[:K]=gather|sum|first]... [--deterministic] [...]\n",
        "Runs the graph and prints each fetched tensor's dtype, shape, min, max and mean.\n"
        "  --feed ID=FILE.npy  value for Placeholder ID (dtype and shape must match it); without\n"
        "                      one, a Placeholder is fed from its graph's ui.feed file if any\n"
        "  --fetch ID[:K]      output K (default 0) of node ID; default: every output that\n"
        "                      feeds nothing\n"
        "  --out DIR           write DIR/ID.npy (output 0) and DIR/ID.K.npy (output K), a '/'\n"
        "                      in an ID making a subfolder; all files are written or none\n"
        "  --threads N         threads per kernel (default: OMP_NUM_THREADS if set, else\n"
        "                      every core)\n"
        "  --profile           print every block's time and peak memory (pool bytes it added\n"
        "                      at its peak) after the run; blocks then run one at a time\n"
        "  --trace FILE.json   write a Chrome trace of the run (chrome://tracing, Perfetto):\n"
        "                      one event per node, on the thread that ran it\n"
        "  --reference         use the reference kernels (the plain-loop definitions)\n" +
            kGraphSafetyFlags +
            "Ctrl-C stops the run cleanly (exit 130) and writes nothing.\n"
            "\n"
            "Under MPI (a build with BLOCKFLOW_MPI=ON), one graph over a batch split over "
            "processes:\n"
            "  --shard ID[:AXIS]   Placeholder ID's batch (axis 0, or AXIS) is split over the P\n"
            "                      processes; each reads only its share of its --feed file\n"
            "                      (uneven shares differ by one; ranks past a small batch get "
            "none)\n"
            "  --combine ID[:K]=gather|sum|first\n"
            "                      how fetch ID[:K] is combined, where the blocks' batch rules\n"
            "                      cannot tell: join the shares in rank order, add them, or take\n"
            "                      rank 0's; by default split outputs are gathered, sums over the\n"
            "                      batch (filter gradients, Sum over the batch) all-reduced and\n"
            "                      batch-free ones taken from rank 0\n"
            "  --deterministic     one run per sample, sums added in sample order on rank 0: the\n"
            "                      same bits for any P (slower; see docs/mpi.md)\n"
            "Rank 0 prints and writes --out as one process would; a failure on any process is\n"
            "reported once and fails them all, with nothing written. --profile and --trace are\n"
            "not available with --shard.\n"}},
      {"validate",
       {"usage: blockflow validate GRAPH.json [--allow-outside-files] [--memory-limit BYTES]\n",
        "Infers every output's dtype and shape and prints them; lists every error (exit 1).\n" +
            kGraphSafetyFlags}},
      {"bench",
       {"usage: blockflow bench GRAPH.json [--feed ID=FILE.npy]... [--warmup K] [--repeat N]\n"
        "                       [--threads N] [--reference] [--json] [--allow-outside-files]\n"
        "                       [--memory-limit BYTES]\n",
        "Measures the steady state, after K warm-up runs with the buffer pool warm: the whole\n"
        "graph's run time (median of N runs), its peak memory and minor page faults per run;\n"
        "then each block's kernel alone with its inputs ready, and the memory it adds at its\n"
        "peak (blocks whose values are known before the run, such as Consts, are not timed).\n"
        "  --feed ID=FILE.npy  value for Placeholder ID (dtype and shape must match it); without\n"
        "                      one, a Placeholder is fed from its graph's ui.feed file if any\n"
        "  --warmup K          untimed runs first, of the graph and of each block (default 2)\n"
        "  --repeat N          timed runs, of the graph and of each block (default 10, >= 1)\n"
        "  --threads N         threads per kernel (default: OMP_NUM_THREADS if set, else\n"
        "                      every core)\n"
        "  --reference         time the reference kernels (the plain-loop definitions)\n" +
            kGraphSafetyFlags +
            "  --json              print {\"nodes\": [{\"id\", \"op\", \"ms_min\", \"ms_median\",\n"
            "                      \"ms_max\", \"peak_bytes\"}...], \"total_ms_median\",\n"
            "                      \"run_ms_median\", \"peak_bytes\", \"minor_faults_per_run\"}\n"
            "total_ms_median is the sum of the blocks' medians; run_ms_median the whole graph's.\n"
            "Peak bytes are buffer-pool bytes in use at the peak above those in use before.\n"}},
      {"ops",
       {"usage: blockflow ops [--json | --markdown]\n",
        "Lists every block: ports and dtypes, attributes with type, default, allowed values.\n"
        "  --json      one JSON object, {\"ops\": [...]}, for tools\n"
        "  --markdown  Markdown; docs/blocks.md is `blockflow ops --markdown`\n"}},
      {"import-tf",
       {"usage: blockflow import-tf GRAPHDEF -o GRAPH.json [--fetch NAME]... [--feed FEED]... "
        "[--verbose]\n"
        "       blockflow import-tf GRAPHDEF --gradients -o DIR [--feed FEED]...\n"
        "       blockflow import-tf GRAPHDEF --gradients --single -o GRAPH.json [--feed FEED]...\n",
        "Converts a TensorFlow GraphDef (binary .pb, text .pbtxt, or protobuf JSON .json) to a\n"
        "blockflow graph. Control edges are dropped; TensorFlow-only attrs are dropped.\n"
        "The result is validated first: when it is invalid, nothing is written (exit 1).\n"
        "  -o, --output GRAPH.json  the graph to write (Const values with more than 64\n"
        "                           elements go to GRAPH_consts/ID.npy beside it)\n"
        "  --fetch NAME             keep only what node NAME needs (repeatable)\n"
        "  --feed NAME[:K]          cut the graph at tensor NAME:K and put a Placeholder there\n"
        "                           (id NAME for output 0, NAME_K for output K); its dtype and\n"
        "                           shape come from the GraphDef or are inferred\n"
        "  --feed NAME[:K]=FILE.npy the same, dtype and shape from the file, which the\n"
        "                           Placeholder's ui.feed then names (inside GRAPH's folder)\n"
        "  --feed NAME[:K]:DTYPE[d0,d1,...]  the same, dtype and shape given (-1: any size)\n"
        "  --gradients              one runnable graph per convolution node (Conv2D,\n"
        "                           DepthwiseConv2dNative and their gradients) into DIR, each\n"
        "                           cut at the outputs of ops blockflow lacks; prints a table\n"
        "                           (exit 1 when some node has no graph)\n"
        "  --single                 with --gradients: one graph holding all of them\n"
        "  --verbose                list every node a failed import cannot take, not just 20\n"}},
  };
  return helps;
}

}  // namespace

const char* MainUsage() {
  return "usage: blockflow <command> [options]\n"
         "\n"
         "commands:\n"
         "  run GRAPH.json        run a graph, print its outputs, optionally save them as .npy\n"
         "  validate GRAPH.json   infer every port's dtype and shape, report every error\n"
         "  bench GRAPH.json      time the graph and every block's kernel\n"
         "  ops                   list the blocks (--json, --markdown)\n"
         "  import-tf GRAPHDEF    convert a TensorFlow GraphDef (.pb, .pbtxt, .json) to a graph\n"
         "\n"
         "  blockflow --version | --help;  blockflow <command> --help  (or blockflow help "
         "<command>)\n"
         "exit status: 0 success, 1 invalid graph or feed or a failed block, 2 bad command line,\n"
         "             130 cancelled by Ctrl-C (run, bench)\n"
         "environment:\n"
         "  OMP_NUM_THREADS=N           threads per kernel where --threads is not given\n"
         "                              (default: every core)\n"
         "  BLOCKFLOW_TEAMS=pool        run the kernels' teams on blockflow's own threads, which\n"
         "                              spin between teams, instead of OpenMP regions\n"
         "  BLOCKFLOW_POOL_LIMIT=BYTES  freed tensor memory kept for reuse (K, M, G suffixes;\n"
         "                              default: a quarter of the machine's memory)\n"
         "  BLOCKFLOW_CONV_ISA=ISA      the kernels' instructions at most: base, avx2, avx512\n"
         "  BLOCKFLOW_CONV_WINOGRAD=0   3x3 convolutions without the Winograd path\n"
         "  BLOCKFLOW_SHARD_TIMING=1    with --shard under MPI: rank 0 prints each phase's time\n"
         "  OMP_THREAD_LIMIT and OpenMP's other variables apply to the kernels' OpenMP teams\n";
}

bool HasHelp(const std::string& command) { return Helps().count(command) > 0; }

void PrintHelp(std::ostream& out, const std::string& command) {
  const CommandHelp& h = Helps().at(command);
  out << h.usage << "\n" << h.details;
}

int UsageError(std::ostream& err, const std::string& command, const std::string& message) {
  err << "error: " << message << "\n";
  auto it = Helps().find(command);
  if (it != Helps().end()) {
    err << it->second.usage << "(see 'blockflow " << command << " --help')\n";
  } else {
    err << "usage: blockflow <command> [options]  (see 'blockflow --help')\n";
  }
  return kExitUsage;
}

std::optional<int> HelpOrUsageError(const std::string& command, bool help, const Status& parsed,
                                    std::ostream& out, std::ostream& err) {
  if (help) {
    PrintHelp(out, command);
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(err, command, parsed.message());
  return std::nullopt;
}

void PrintError(std::ostream& err, const std::string& file, const std::string& message) {
  // Messages from the graph loader already start with the file name ("g.json:3:4: ...").
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    // "g.json:3:4: ..." or "g.json: ...": a bare prefix test would take "node 'x' ..." as
    // already named when the graph file is called "node".
    const bool named = !file.empty() && line.rfind(file + ":", 0) == 0;
    if (named || file.empty() || line.rfind("cannot read '" + file + "'", 0) == 0) {
      err << "error: " << line << "\n";
    } else {
      err << "error: " << file << ": " << line << "\n";
    }
  }
}

}  // namespace blockflow::cli
