#include "runtime/cli.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/npy.h"
#include "core/session.h"
#include "core/text.h"
#include "runtime/catalog.h"
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
#include "runtime/import_tf.h"
#endif

#ifndef BLOCKFLOW_VERSION
#define BLOCKFLOW_VERSION "0.0.0"
#endif

namespace blockflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------------------
// Usage texts.

constexpr const char* kMainUsage =
    "usage: blockflow <command> [options]\n"
    "\n"
    "commands:\n"
    "  run GRAPH.json        run a graph, print its outputs, optionally save them as .npy\n"
    "  validate GRAPH.json   infer every port's dtype and shape, report every error\n"
    "  bench GRAPH.json      time every block's kernel\n"
    "  ops                   list the blocks (--json, --markdown)\n"
    "  import-tf GRAPHDEF    convert a TensorFlow GraphDef (.pb, .pbtxt, .json) to a graph\n"
    "\n"
    "  blockflow --version | --help;  blockflow <command> --help  (or blockflow help <command>)\n"
    "exit status: 0 success, 1 invalid graph or feed or a failed block, 2 bad command line,\n"
    "             130 cancelled by Ctrl-C (run, bench)\n";

struct CommandHelp {
  const char* usage;
  const char* details;
};

const std::map<std::string, CommandHelp>& Helps() {
  static const std::map<std::string, CommandHelp> helps = {
      {"run",
       {"usage: blockflow run GRAPH.json [--feed ID=FILE.npy]... [--fetch ID[:K]]... [--out DIR]\n"
        "                     [--threads N] [--profile] [--reference]\n",
        "Runs the graph and prints each fetched tensor's dtype, shape, min, max and mean.\n"
        "  --feed ID=FILE.npy  value for Placeholder ID (dtype and shape must match it)\n"
        "  --fetch ID[:K]      output K (default 0) of node ID; default: every output that\n"
        "                      feeds nothing\n"
        "  --out DIR           write DIR/ID.npy (output 0) and DIR/ID.K.npy (output K), a '/'\n"
        "                      in an ID making a subfolder; all files are written or none\n"
        "  --threads N         threads per kernel (default: all cores)\n"
        "  --profile           print every block's time after the run\n"
        "  --reference         use the reference kernels (the plain-loop definitions)\n"
        "Ctrl-C stops the run cleanly (exit 130) and writes nothing.\n"}},
      {"validate",
       {"usage: blockflow validate GRAPH.json\n",
        "Infers every output's dtype and shape and prints them; lists every error (exit 1).\n"}},
      {"bench",
       {"usage: blockflow bench GRAPH.json [--feed ID=FILE.npy]... [--warmup K] [--repeat N]\n"
        "                       [--threads N] [--reference] [--json]\n",
        "Runs the graph once, then times each block's kernel alone with its inputs ready\n"
        "(blocks whose values are known before the run, such as Consts, are not timed).\n"
        "  --feed ID=FILE.npy  value for Placeholder ID (dtype and shape must match it)\n"
        "  --warmup K          untimed runs per block first (default 2, may be 0)\n"
        "  --repeat N          timed runs per block (default 10, at least 1)\n"
        "  --threads N         threads per kernel (default: all cores)\n"
        "  --reference         time the reference kernels (the plain-loop definitions)\n"
        "  --json              print {\"nodes\": [{\"id\", \"op\", \"ms_min\", \"ms_median\",\n"
        "                      \"ms_max\"}...], \"total_ms_median\": ...}\n"}},
      {"ops",
       {"usage: blockflow ops [--json | --markdown]\n",
        "Lists every block: ports and dtypes, attributes with type, default, allowed values.\n"
        "  --json      one JSON object, {\"ops\": [...]}, for tools\n"
        "  --markdown  Markdown; docs/blocks.md is `blockflow ops --markdown`\n"}},
      {"import-tf",
       {"usage: blockflow import-tf GRAPHDEF -o GRAPH.json [--fetch NAME]... [--feed "
        "NAME[:K]]...\n",
        "Converts a TensorFlow GraphDef (binary .pb, text .pbtxt, or protobuf JSON .json) to a\n"
        "blockflow graph. Control edges are dropped; TensorFlow-only attrs are dropped.\n"
        "The result is validated first: when it is invalid, nothing is written (exit 1).\n"
        "  -o, --output GRAPH.json  the graph to write (Const values with more than 64\n"
        "                           elements go to GRAPH_consts/ID.npy beside it)\n"
        "  --fetch NAME             keep only what node NAME needs (repeatable)\n"
        "  --feed NAME[:K]          cut the graph at tensor NAME:K and put a Placeholder there\n"
        "                           (id NAME for output 0, NAME_K for output K)\n"}},
  };
  return helps;
}

// A usage error: prints the message, the command's usage line and a hint; returns 2.
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

void PrintHelp(std::ostream& out, const std::string& command) {
  const CommandHelp& h = Helps().at(command);
  out << h.usage << "\n" << h.details;
}

// ---------------------------------------------------------------------------
// Error printing: "error: GRAPH.json: node 'x' (Op): what and why", one line per problem.

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

// ---------------------------------------------------------------------------
// Formatting.

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string FormatMs(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.3f" : "%.1f", v);
  return buf;
}

// A plain text table: columns padded to their widest cell, numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right_align = {})
      : header_(std::move(header)), right_(std::move(right_align)) {
    right_.resize(header_.size(), false);
  }
  void Add(std::vector<std::string> row) {
    row.resize(header_.size());
    rows_.push_back(std::move(row));
  }
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const {
    std::vector<size_t> w(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) w[c] = header_[c].size();
    for (const auto& r : rows_) {
      for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
    }
    auto line = [&](const std::vector<std::string>& r) {
      std::string s;
      for (size_t c = 0; c < r.size(); ++c) {
        const std::string pad(w[c] - r[c].size(), ' ');
        if (c) s += "  ";
        s += right_[c] ? pad + r[c] : (c + 1 == r.size() ? r[c] : r[c] + pad);
      }
      out << s << "\n";
    };
    line(header_);
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// A short rendering of a known constant value (small tensors only).
std::string ValueText(const std::shared_ptr<const Tensor>& value) {
  if (!value) return "";
  if (value->num_elements() > 8) return "(known)";
  std::string s = "[";
  for (int64_t i = 0; i < value->num_elements(); ++i) {
    if (i) s += ",";
    s += FormatNumber(value->GetAsDouble(i));
  }
  return s + "]";
}

// ---------------------------------------------------------------------------
// Graph loading, feeds and fetches, shared by run and bench.

struct Loaded {
  Graph graph;
  GraphAnalysis analysis;  // without feeds
};

// Loads and validates a graph; prints every problem and returns nullopt on failure.
std::optional<Loaded> LoadAndValidate(const std::string& path, std::ostream& err) {
  Expected<Graph> g = LoadGraphFile(path);
  if (!g.ok()) {
    PrintError(err, path, g.status().message());
    return std::nullopt;
  }
  Loaded l{std::move(g).value(), {}};
  l.analysis = AnalyzeGraph(l.graph, OpRegistry::Global());
  if (!l.analysis.ok()) {
    for (const NodeIssue& issue : l.analysis.issues) PrintError(err, path, issue.ToString());
    return std::nullopt;
  }
  return l;
}

// Reads the --feed files, checking each against its Placeholder's dtype and shape.
// Prints every problem; returns false when any.
bool ReadFeeds(const Loaded& l, const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& feeds,
               std::map<std::string, Tensor>* out, std::ostream& err) {
  bool ok = true;
  for (const auto& [id, file] : feeds) {
    const int index = l.graph.IndexOf(id);
    if (index < 0) {
      PrintError(err, path,
                 "--feed " + id + "=" + file + ": there is no node '" + id + "' in the graph");
      ok = false;
      continue;
    }
    const Node& node = l.graph.nodes()[static_cast<size_t>(index)];
    const std::string who = "node '" + id + "' (" + node.op + "): ";
    if (node.op != "Placeholder") {
      PrintError(err, path,
                 who + "cannot be fed from '" + file + "': only a Placeholder can be fed");
      ok = false;
      continue;
    }
    if (out->count(id)) {
      PrintError(err, path, who + "is fed twice");
      ok = false;
      continue;
    }
    const NodeInfo& info = l.analysis.nodes[static_cast<size_t>(index)];
    if (info.outputs.empty()) {
      PrintError(err, path, who + "has no inferred output to feed");
      ok = false;
      continue;
    }
    const PortInfo& want = info.outputs[0];
    Expected<Tensor> t = ReadNpy(file, want.dtype);
    if (!t.ok()) {
      PrintError(err, path, who + "cannot read feed: " + t.status().message());
      ok = false;
      continue;
    }
    if (t->dtype() != want.dtype) {
      PrintError(err, path,
                 who + "fed " + std::string(DTypeName(t->dtype())) + " from '" + file +
                     "', but the Placeholder's dtype is " + std::string(DTypeName(want.dtype)));
      ok = false;
      continue;
    }
    if (t->shape().rank() != want.shape.rank() || !want.shape.IsCompatibleWith(t->shape())) {
      PrintError(err, path,
                 who + "fed shape " + t->shape().ToString() + " from '" + file +
                     "', but the Placeholder's shape is " + want.shape.ToString());
      ok = false;
      continue;
    }
    (*out)[id] = std::move(t).value();
  }
  return ok;
}

// Checks the fetches and that every Placeholder they need is fed; prints problems.
bool CheckFetchesAndFeeds(const Loaded& l, const std::string& path,
                          const std::vector<std::string>& fetches,
                          const std::map<std::string, Tensor>& feeds, std::ostream& err) {
  bool ok = true;
  const auto& nodes = l.graph.nodes();
  std::vector<std::string> stack;
  for (const std::string& f : fetches) {
    std::optional<Endpoint> ep = Endpoint::Parse(f);
    if (!ep) {
      PrintError(err, path, "--fetch " + f + ": expected ID or ID:K");
      ok = false;
      continue;
    }
    const int index = l.graph.IndexOf(ep->node);
    if (index < 0) {
      PrintError(err, path, "--fetch " + f + ": there is no node '" + ep->node + "' in the graph");
      ok = false;
      continue;
    }
    const Node& node = nodes[static_cast<size_t>(index)];
    const size_t num_outputs = l.analysis.nodes[static_cast<size_t>(index)].outputs.size();
    if (ep->index < 0 || static_cast<size_t>(ep->index) >= num_outputs) {
      PrintError(err, path,
                 "node '" + node.id + "' (" + node.op + "): --fetch " + f + ": it has " +
                     std::to_string(num_outputs) + " output" + (num_outputs == 1 ? "" : "s"));
      ok = false;
      continue;
    }
    stack.push_back(ep->node);
  }
  // Walk back from the fetches; a fed Placeholder ends the walk.
  std::set<std::string> seen;
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Node* node = l.graph.FindNode(id);
    if (!node) continue;
    if (node->op == "Placeholder" && !feeds.count(id)) {
      std::string hint = "pass --feed " + id + "=FILE.npy";
      if (node->ui.is_object() && node->ui.contains("feed") && node->ui["feed"].is_string()) {
        std::filesystem::path f =
            std::filesystem::path(l.graph.base_dir) / node->ui["feed"].get<std::string>();
        hint += " (the graph suggests --feed " + id + "=" + f.lexically_normal().string() + ")";
      }
      PrintError(err, path, "node '" + id + "' (Placeholder): needs a value: " + hint);
      ok = false;
    }
    for (const auto& [port, eps] : node->inputs) {
      for (const Endpoint& e : eps) stack.push_back(e.node);
    }
  }
  return ok;
}

// A graph loaded, validated and fed, with its fetches checked: what run and bench share.
struct Prepared {
  Loaded loaded;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> fetches;  // "id" or "id:K"
  GraphAnalysis analysis;            // with the fed shapes and values
};

// Prints every problem and returns nullopt on failure. Empty `fetches` means the
// default ones: every output that feeds nothing.
std::optional<Prepared> Prepare(const std::string& path,
                                const std::vector<std::pair<std::string, std::string>>& feed_files,
                                const std::vector<std::string>& fetches, std::ostream& err) {
  std::optional<Loaded> l = LoadAndValidate(path, err);
  if (!l) return std::nullopt;
  Prepared p{std::move(*l), {}, fetches, {}};
  if (!ReadFeeds(p.loaded, path, feed_files, &p.feeds, err)) return std::nullopt;
  if (p.fetches.empty()) p.fetches = SinkOutputs(p.loaded.graph, p.loaded.analysis);
  if (!CheckFetchesAndFeeds(p.loaded, path, p.fetches, p.feeds, err)) return std::nullopt;
  if (p.feeds.empty()) {
    p.analysis = p.loaded.analysis;
    return p;
  }
  // Fed shapes can expose errors that unknown dims hid; report all of them, not the first.
  p.analysis = AnalyzeGraph(p.loaded.graph, OpRegistry::Global(), &p.feeds);
  if (!p.analysis.ok()) {
    for (const NodeIssue& issue : p.analysis.issues) PrintError(err, path, issue.ToString());
    return std::nullopt;
  }
  return p;
}

// True when analysis knew every output's value: the node runs no kernel.
bool IsFolded(const NodeInfo& info) {
  return !info.outputs.empty() && std::all_of(info.outputs.begin(), info.outputs.end(),
                                              [](const PortInfo& o) { return o.value; });
}

// "node 'ID' (Op)", the way errors name a node.
std::string NodeName(const Graph& graph, const std::string& id) {
  const Node* node = graph.FindNode(id);
  return "node '" + id + "' (" + (node ? node->op : std::string("?")) + ")";
}

// ---------------------------------------------------------------------------
// --out: one .npy file per fetched tensor, all written or none.

// "dir/ID.npy" for output 0, "dir/ID.K.npy" for output K; '/' in an id makes folders.
std::string OutputFile(const std::string& dir, const Endpoint& ep) {
  std::string name = ep.node + (ep.index == 0 ? "" : "." + std::to_string(ep.index)) + ".npy";
  return (std::filesystem::path(dir) / name).string();
}

struct PlannedFile {
  std::string path;
  size_t fetch;  // index into the fetches and the outputs
};

// The first of `path` and its ancestors that exists and is not a folder, or "".
std::string NonFolderOnPath(const std::filesystem::path& path) {
  for (std::filesystem::path p = path; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(p, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_directory(st)) return p.string();
    if (p == p.parent_path()) break;
  }
  return "";
}

// Maps each fetch to its file under `dir` and checks, before anything runs, that no two
// tensors share a file (output 1 of "a" and output 0 of "a.1" are both a.1.npy) and that
// every file's folder can exist. The same tensor fetched twice is written once.
bool PlanOutputs(const Prepared& p, const std::string& path, const std::string& dir,
                 std::vector<PlannedFile>* files, std::ostream& err) {
  if (std::string blocker = NonFolderOnPath(dir); !blocker.empty()) {
    PrintError(err, path, "--out " + dir + ": '" + blocker + "' exists and is not a folder");
    return false;
  }
  bool ok = true;
  std::map<std::string, Endpoint> by_file;
  for (size_t i = 0; i < p.fetches.size(); ++i) {
    const Endpoint ep = *Endpoint::Parse(p.fetches[i]);
    const std::string file = OutputFile(dir, ep);
    const std::string who =
        NodeName(p.loaded.graph, ep.node) + ": output " + std::to_string(ep.index);
    auto [it, fresh] = by_file.emplace(file, ep);
    if (!fresh) {
      if (it->second.node != ep.node || it->second.index != ep.index) {
        PrintError(err, path,
                   who + " and " + NodeName(p.loaded.graph, it->second.node) + " output " +
                       std::to_string(it->second.index) + " would both be written to '" + file +
                       "'; fetch one of them at a time");
        ok = false;
      }
      continue;
    }
    std::error_code ec;
    const std::string blocker = NonFolderOnPath(std::filesystem::path(file).parent_path());
    if (!blocker.empty() || std::filesystem::is_directory(file, ec)) {
      PrintError(err, path,
                 who + " cannot be written to '" + file + "': '" +
                     (blocker.empty() ? file : blocker) +
                     (blocker.empty() ? "' is a folder" : "' exists and is not a folder"));
      ok = false;
      continue;
    }
    files->push_back({file, i});
  }
  return ok;
}

// Writes every planned file or none: each tensor goes to a temporary file beside its
// target first, and only when all are written, and no Ctrl-C came meanwhile, are they
// renamed into place. On failure the temporary files and the folders made for them go.
Status WriteOutputs(const Prepared& p, const std::vector<PlannedFile>& files,
                    const std::vector<Tensor>& outputs, const std::atomic<bool>& cancel) {
  namespace fs = std::filesystem;
  std::set<fs::path> made;  // folders that do not exist yet
  for (const PlannedFile& f : files) {
    std::error_code ec;
    for (fs::path d = fs::path(f.path).parent_path(); !d.empty() && !fs::exists(d, ec);
         d = d.parent_path()) {
      made.insert(d);
    }
  }
  const std::string suffix = ".partial." + std::to_string(::getpid());
  std::vector<std::string> staged;
  auto discard = [&] {
    std::error_code ec;
    for (const std::string& s : staged) fs::remove(s, ec);
    // Deepest first; remove() leaves a folder that is not empty.
    for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
  };
  for (const PlannedFile& f : files) {
    const Endpoint ep = *Endpoint::Parse(p.fetches[f.fetch]);
    Status w = WriteNpy(f.path + suffix, outputs[f.fetch]);
    if (!w.ok()) {
      discard();
      return w.WithPrefix(NodeName(p.loaded.graph, ep.node) + ": output " +
                          std::to_string(ep.index) + ": ");
    }
    staged.push_back(f.path + suffix);
  }
  if (cancel.load()) {
    discard();
    return Cancelled("cancelled; no outputs were written");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    fs::rename(staged[i], files[i].path, ec);
    if (ec) {
      staged.erase(staged.begin(), staged.begin() + static_cast<long>(i));
      discard();
      return Internal("cannot rename '" + staged[0] + "' to '" + files[i].path +
                      "': " + ec.message());
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Observers: per-node times (--profile) and the progress line.

class RunObserver : public ExecutionObserver {
 public:
  RunObserver(bool progress, std::ostream& err) : progress_(progress), err_(err) {}
  ~RunObserver() override { StopProgress(); }

  void OnRunBegin(const std::vector<std::string>& node_ids) override {
    std::lock_guard<std::mutex> lock(mu_);
    total_ = node_ids.size();
    start_ = Clock::now();
    if (progress_ && !thread_.joinable()) thread_ = std::thread([this] { ProgressLoop(); });
  }
  void OnNodeEnd(const Node& node, double ms, const Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
    times_.push_back({node.id, node.op, ms});
  }
  void OnRunEnd(const Status& status) override { StopProgress(); }

  struct Timing {
    std::string id, op;
    double ms;
  };
  std::vector<Timing> times() const {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }

 private:
  void ProgressLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    bool shown = false;
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (stop_) break;
      const double s = MsSince(start_) / 1000.0;
      if (s < 1.0) continue;
      char buf[96];
      std::snprintf(buf, sizeof buf, "\rrunning: %zu/%zu nodes done, %.1f s ", done_, total_, s);
      err_ << buf << std::flush;
      shown = true;
    }
    if (shown) err_ << "\r\033[K" << std::flush;  // erase the progress line
  }
  void StopProgress() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  const bool progress_;
  std::ostream& err_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stop_ = false;
  size_t total_ = 0, done_ = 0;
  Clock::time_point start_ = Clock::now();
  std::vector<Timing> times_;
};

// ---------------------------------------------------------------------------
// run

// The table of fetched tensors: node, port, dtype, shape, min, max, mean.
void PrintOutputs(const std::vector<std::string>& fetches, const std::vector<Tensor>& outputs,
                  std::ostream& out) {
  Table table({"node", "port", "dtype", "shape", "min", "max", "mean"},
              {false, true, false, false, true, true, true});
  for (size_t i = 0; i < fetches.size(); ++i) {
    const Endpoint ep = *Endpoint::Parse(fetches[i]);
    const Tensor& t = outputs[i];
    const TensorStats st = t.Stats();
    std::vector<std::string> row = {ep.node, std::to_string(ep.index),
                                    std::string(DTypeName(t.dtype())), t.shape().ToString()};
    if (st.count == st.nan_count + st.inf_count) {
      row.insert(row.end(), {"-", "-", "-"});
    } else {
      row.insert(row.end(), {FormatNumber(st.min), FormatNumber(st.max), FormatNumber(st.mean)});
    }
    if (st.nan_count || st.inf_count) {
      row.back() +=
          "  (" + std::to_string(st.nan_count) + " NaN, " + std::to_string(st.inf_count) + " Inf)";
    }
    table.Add(std::move(row));
  }
  table.Print(out);
}

// --profile: every block that ran a kernel, with its time and share.
void PrintProfile(const Prepared& p, const RunObserver& observer, double wall_ms,
                  std::ostream& out) {
  // Nodes whose values analysis already knew (constants, fed Placeholders, what folds
  // from them) run no kernel; list only the blocks that computed something.
  std::vector<RunObserver::Timing> times;
  size_t folded = 0;
  for (const auto& t : observer.times()) {
    const int index = p.loaded.graph.IndexOf(t.id);
    if (IsFolded(p.analysis.nodes[static_cast<size_t>(index)])) {
      ++folded;
    } else {
      times.push_back(t);
    }
  }
  double sum = 0;
  for (const auto& t : times) sum += t.ms;
  out << "\nprofile: " << times.size() << " block" << (times.size() == 1 ? "" : "s")
      << " ran (kernel time " << FormatMs(sum) << " ms, wall " << FormatMs(wall_ms) << " ms); "
      << folded << " node" << (folded == 1 ? "" : "s") << " folded (values known before the run)\n";
  Table prof({"node", "op", "ms", "%"}, {false, false, true, true});
  for (const auto& t : times) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.1f", sum > 0 ? 100.0 * t.ms / sum : 0.0);
    prof.Add({t.id, t.op, FormatMs(t.ms), pct});
  }
  prof.Print(out);
}

int CommandRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool help = false;
  Expected<RunArgs> parsed = ParseRunArgs(args, &help);
  if (help) {
    PrintHelp(out, "run");
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(err, "run", parsed.status().message());
  const RunArgs& a = *parsed;

  // The cancel flag is not reset here: a Ctrl-C while the graph and feeds load counts.
  std::optional<Prepared> p = Prepare(a.graph, a.feeds, a.fetches, err);
  if (!p) return kExitFailure;
  if (p->fetches.empty()) {
    // A valid graph with no outputs (empty, or only NoOps): nothing to compute is not an error.
    err << "note: " << a.graph << ": the graph has no outputs; nothing to run\n";
    return kExitOk;
  }
  // Checked before the run, so that a long run is not wasted on an unusable --out.
  std::vector<PlannedFile> files;
  if (!a.out_dir.empty() && !PlanOutputs(*p, a.graph, a.out_dir, &files, err)) return kExitFailure;

  RunObserver observer(isatty(STDERR_FILENO) == 1, err);
  RunOptions options;
  options.num_threads = a.threads;
  options.force_reference_kernels = a.reference;
  options.cancel = &CancelFlag();
  options.observer = &observer;
  std::vector<Tensor> outputs;
  const Clock::time_point t0 = Clock::now();
  Status s = Session(p->loaded.graph).Run(p->feeds, p->fetches, &outputs, options);
  const double wall_ms = MsSince(t0);
  if (s.code() == StatusCode::kCancelled || (CancelFlag().load() && s.ok())) {
    PrintError(err, a.graph, "cancelled; no outputs were written");
    return kExitCancelled;
  }
  if (!s.ok()) {
    PrintError(err, a.graph, s.message());
    return kExitFailure;
  }
  if (outputs.size() != p->fetches.size()) {
    PrintError(err, a.graph,
               "internal error: " + std::to_string(outputs.size()) + " outputs for " +
                   std::to_string(p->fetches.size()) + " fetches");
    return kExitFailure;
  }
  PrintOutputs(p->fetches, outputs, out);
  if (a.profile) PrintProfile(*p, observer, wall_ms, out);
  if (!a.out_dir.empty()) {
    Status w = WriteOutputs(*p, files, outputs, CancelFlag());
    if (!w.ok()) {
      PrintError(err, a.graph, w.message());
      return w.code() == StatusCode::kCancelled ? kExitCancelled : kExitFailure;
    }
    err << "wrote " << files.size() << " file" << (files.size() == 1 ? "" : "s") << " to "
        << a.out_dir << "\n";
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------
// validate

int CommandValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(args, {});
  if (!p.ok()) return UsageError(err, "validate", p.status().message());
  if (p->help) {
    PrintHelp(out, "validate");
    return kExitOk;
  }
  if (p->positional.size() != 1) {
    return UsageError(err, "validate",
                      p->positional.empty() ? "missing GRAPH.json" : "expected one GRAPH.json");
  }
  const std::string path = p->positional[0];
  Expected<Graph> g = LoadGraphFile(path);
  if (!g.ok()) {
    PrintError(err, path, g.status().message());
    return kExitFailure;
  }
  GraphAnalysis a = AnalyzeGraph(*g, OpRegistry::Global());
  Table table({"node", "op", "port", "dtype", "shape", "value"});
  const auto& nodes = g->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& info = a.nodes[i];
    if (!info.ok) {
      table.Add({nodes[i].id, nodes[i].op, "-", "error", "", ""});
      continue;
    }
    if (info.outputs.empty()) table.Add({nodes[i].id, nodes[i].op, "-", "", "", ""});
    for (size_t k = 0; k < info.outputs.size(); ++k) {
      const PortInfo& o = info.outputs[k];
      table.Add({k == 0 ? nodes[i].id : "", k == 0 ? nodes[i].op : "", std::to_string(k),
                 std::string(DTypeName(o.dtype)), o.shape.ToString(), ValueText(o.value)});
    }
  }
  table.Print(out);
  for (const NodeIssue& issue : a.issues) PrintError(err, path, issue.ToString());
  out << path << ": " << nodes.size() << " node" << (nodes.size() == 1 ? "" : "s") << ", "
      << a.issues.size() << " error" << (a.issues.size() == 1 ? "" : "s") << "\n";
  return a.ok() ? kExitOk : kExitFailure;
}

// ---------------------------------------------------------------------------
// bench

// A node's input tensors for timing it alone: from the full run's outputs, the values
// analysis folded, or the feeds. False when one cannot be found.
bool GatherInputs(const Prepared& p, const Node& node, const OpSchema& schema,
                  const std::map<std::string, std::vector<Tensor>>& all,
                  std::vector<const Tensor*>* inputs) {
  for (const PortDef& port : schema.inputs()) {
    auto it = node.inputs.find(port.name);
    if (it == node.inputs.end()) continue;
    for (const Endpoint& e : it->second) {
      const size_t k = static_cast<size_t>(e.index);
      auto produced = all.find(e.node);
      if (produced != all.end() && k < produced->second.size()) {
        inputs->push_back(&produced->second[k]);
        continue;
      }
      const int src = p.loaded.graph.IndexOf(e.node);
      if (src < 0) return false;
      const NodeInfo& src_info = p.analysis.nodes[static_cast<size_t>(src)];
      if (k < src_info.outputs.size() && src_info.outputs[k].value) {
        inputs->push_back(src_info.outputs[k].value.get());
        continue;
      }
      auto fed = p.feeds.find(e.node);
      if (fed == p.feeds.end()) return false;
      inputs->push_back(&fed->second);
    }
  }
  return true;
}

struct BenchRow {
  std::string id, op;
  double min, median, max;
};

void PrintBench(const BenchArgs& a, const std::vector<BenchRow>& rows, std::ostream& out) {
  double total = 0;
  for (const BenchRow& r : rows) total += r.median;
  if (a.json) {
    nlohmann::ordered_json j;  // keys in the contract's order
    j["nodes"] = nlohmann::ordered_json::array();
    for (const BenchRow& r : rows) {
      j["nodes"].push_back(nlohmann::ordered_json{{"id", r.id},
                                                  {"op", r.op},
                                                  {"ms_min", r.min},
                                                  {"ms_median", r.median},
                                                  {"ms_max", r.max}});
    }
    j["total_ms_median"] = total;
    out << j.dump(2) << "\n";
    return;
  }
  Table t({"node", "op", "ms_min", "ms_median", "ms_max"}, {false, false, true, true, true});
  for (const BenchRow& r : rows)
    t.Add({r.id, r.op, FormatMs(r.min), FormatMs(r.median), FormatMs(r.max)});
  t.Print(out);
  out << "total (sum of medians): " << FormatMs(total) << " ms over " << rows.size() << " blocks, "
      << a.repeat << " runs each after " << a.warmup << " warm-up, "
      << (a.threads > 0 ? a.threads : DefaultNumThreads()) << " threads\n";
}

int CommandBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool help = false;
  Expected<BenchArgs> parsed = ParseBenchArgs(args, &help);
  if (help) {
    PrintHelp(out, "bench");
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(err, "bench", parsed.status().message());
  const BenchArgs& a = *parsed;
  std::optional<Prepared> p = Prepare(a.graph, a.feeds, {}, err);
  if (!p) return kExitFailure;

  // One full run gives every executed node's outputs, hence every node's inputs.
  std::map<std::string, std::vector<Tensor>> all;
  RunOptions options;
  options.num_threads = a.threads;
  options.force_reference_kernels = a.reference;
  options.all_outputs = &all;
  options.cancel = &CancelFlag();
  std::vector<Tensor> ignored;
  Status s = Session(p->loaded.graph).Run(p->feeds, p->fetches, &ignored, options);
  if (!s.ok()) {
    PrintError(err, a.graph, s.message());
    return s.code() == StatusCode::kCancelled ? kExitCancelled : kExitFailure;
  }

  std::vector<BenchRow> rows;
  const auto& nodes = p->loaded.graph.nodes();
  for (int index : p->analysis.topo_order) {
    const Node& node = nodes[static_cast<size_t>(index)];
    const NodeInfo& info = p->analysis.nodes[static_cast<size_t>(index)];
    // Nodes the run skipped, or whose values analysis already knew (constants and what
    // folds from them), run no kernel at run time: nothing to time.
    if (!all.count(node.id) || IsFolded(info)) continue;
    const std::string who = "node '" + node.id + "' (" + node.op + "): ";
    const OpSchema& schema = *OpRegistry::Global().Find(node.op);
    std::vector<const Tensor*> inputs;
    if (!GatherInputs(*p, node, schema, all, &inputs)) {
      PrintError(err, a.graph, who + "bench could not gather its inputs");
      return kExitFailure;
    }
    std::vector<double> ms;
    for (int r = 0; r < a.warmup + a.repeat; ++r) {
      if (CancelFlag().load()) {
        PrintError(err, a.graph, "cancelled");
        return kExitCancelled;
      }
      std::vector<Tensor> outs;
      const Clock::time_point t0 = Clock::now();
      Status ks = RunNodeKernel(schema, info, inputs, &outs, options, p->loaded.graph.base_dir);
      const double t = MsSince(t0);
      if (!ks.ok()) {
        PrintError(err, a.graph, ks.WithPrefix(who).message());
        return kExitFailure;
      }
      if (r >= a.warmup) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    rows.push_back({node.id, node.op, ms.front(), median, ms.back()});
  }
  PrintBench(a, rows, out);
  return kExitOk;
}

// ---------------------------------------------------------------------------
// ops

int CommandOps(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(args, {{"--json"}, {"--markdown"}});
  if (!p.ok()) return UsageError(err, "ops", p.status().message());
  if (p->help) {
    PrintHelp(out, "ops");
    return kExitOk;
  }
  if (!p->positional.empty())
    return UsageError(err, "ops", "unexpected argument '" + p->positional[0] + "'");
  if (p->Has("--json") && p->Has("--markdown"))
    return UsageError(err, "ops", "--json and --markdown exclude each other");
  const OpRegistry& registry = OpRegistry::Global();
  if (p->Has("--json")) {
    out << CatalogJson(registry).dump(2) << "\n";
  } else if (p->Has("--markdown")) {
    out << CatalogMarkdown(registry);
  } else {
    out << CatalogText(registry);
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------
// import-tf

int CommandImportTf(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Expected<ParsedArgs> p = ParseFlags(
      args, {{"-o", true}, {"--output", true}, {"--fetch", true, true}, {"--feed", true, true}});
  if (!p.ok()) return UsageError(err, "import-tf", p.status().message());
  if (p->help) {
    PrintHelp(out, "import-tf");
    return kExitOk;
  }
  if (p->positional.size() != 1) {
    return UsageError(err, "import-tf",
                      p->positional.empty() ? "missing GRAPHDEF" : "expected one GRAPHDEF");
  }
  std::optional<std::string> output = p->Last("-o");
  if (!output) output = p->Last("--output");
  if (!output || output->empty()) return UsageError(err, "import-tf", "missing -o GRAPH.json");
#ifdef BLOCKFLOW_HAVE_IMPORT_TF
  const std::string& path = p->positional[0];
  tfimport::ImportOptions options;
  options.fetches = p->All("--fetch");
  options.feeds = p->All("--feed");
  options.const_dir = std::filesystem::path(*output).stem().string() + "_consts";
  Expected<tfimport::ImportResult> r =
      tfimport::ImportGraphDefFile(path, options, OpRegistry::Global());
  if (!r.ok()) {
    PrintError(err, path, r.status().message());
    return kExitFailure;
  }
  for (const std::string& note : r->notes) err << "note: " << path << ": " << note << "\n";
  // The result must be a valid graph: say so now rather than at run time, and write
  // nothing (no graph, no Const files) when it is not.
  Status w = tfimport::WriteValidImport(*r, *output, OpRegistry::Global());
  if (!w.ok()) {
    PrintError(err, *output, w.message());
    return kExitFailure;
  }
  size_t placeholders = 0;
  for (const Node& n : r->graph.nodes()) placeholders += n.op == "Placeholder";
  out << "wrote " << *output << ": " << r->graph.nodes().size() << " nodes (" << placeholders
      << " Placeholder" << (placeholders == 1 ? "" : "s") << ")";
  if (!r->const_files.empty()) out << ", " << r->const_files.size() << " Const .npy files";
  out << "\n";
  return kExitOk;
#else
  err << "error: this blockflow was built without TensorFlow import "
         "(BLOCKFLOW_BUILD_IMPORT_TF=OFF, or protobuf was not found)\n";
  return kExitFailure;
#endif
}

// Constant-initialised at namespace scope, so that the SIGINT handler touches nothing
// but a lock-free atomic: no function-local static and its initialisation guard.
constinit std::atomic<bool> g_cancel{false};

void OnSigint(int) {
  // A lock-free atomic store is async-signal-safe.
  g_cancel.store(true);
}

}  // namespace

// ---------------------------------------------------------------------------
// Argument parsing.

bool ParsedArgs::Has(const std::string& name) const {
  return std::any_of(flags.begin(), flags.end(), [&](const auto& f) { return f.first == name; });
}

std::optional<std::string> ParsedArgs::Last(const std::string& name) const {
  std::optional<std::string> v;
  for (const auto& f : flags) {
    if (f.first == name) v = f.second;
  }
  return v;
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  std::vector<std::string> v;
  for (const auto& f : flags) {
    if (f.first == name) v.push_back(f.second);
  }
  return v;
}

Expected<ParsedArgs> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<FlagSpec>& specs) {
  ParsedArgs p;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      p.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      p.help = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) {
      std::vector<std::string> names;
      for (const FlagSpec& s : specs) names.push_back(s.name);
      return InvalidArgument("unknown option '" + name + "'" + DidYouMean(name, names, 2));
    }
    if (!spec->takes_value && inline_value)
      return InvalidArgument("option '" + name + "' takes no value");
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= args.size()) return InvalidArgument("option '" + name + "' needs a value");
      value = args[++i];
    }
    if (!spec->repeatable && p.Has(name))
      return InvalidArgument("option '" + name + "' given twice");
    p.flags.emplace_back(name, value);
  }
  return p;
}

Expected<std::pair<std::string, std::string>> ParseFeedFlag(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgument("--feed '" + text + "': expected ID=FILE.npy");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Expected<int> ParseIntFlag(const std::string& flag, const std::string& text, int min) {
  try {
    size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= min && v <= 1'000'000) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  return InvalidArgument(flag + " '" + text + "': expected an integer >= " + std::to_string(min));
}

Expected<RunArgs> ParseRunArgs(const std::vector<std::string>& args, bool* help) {
  ASSIGN_OR_RETURN(ParsedArgs p, ParseFlags(args, {{"--feed", true, true},
                                                   {"--fetch", true, true},
                                                   {"--out", true},
                                                   {"--threads", true},
                                                   {"--profile"},
                                                   {"--reference"}}));
  if (help) *help = p.help;
  if (p.help) return RunArgs{};
  if (p.positional.empty()) return InvalidArgument("missing GRAPH.json");
  if (p.positional.size() > 1)
    return InvalidArgument("unexpected argument '" + p.positional[1] + "'");
  RunArgs r;
  r.graph = p.positional[0];
  for (const std::string& f : p.All("--feed")) {
    ASSIGN_OR_RETURN(auto feed, ParseFeedFlag(f));
    r.feeds.push_back(std::move(feed));
  }
  for (const std::string& f : p.All("--fetch")) {
    if (!Endpoint::Parse(f)) return InvalidArgument("--fetch '" + f + "': expected ID or ID:K");
    r.fetches.push_back(f);
  }
  if (auto o = p.Last("--out")) {
    if (o->empty()) return InvalidArgument("--out needs a folder");
    r.out_dir = *o;
  }
  if (auto t = p.Last("--threads")) {
    ASSIGN_OR_RETURN(r.threads, ParseIntFlag("--threads", *t, 1));
  }
  r.profile = p.Has("--profile");
  r.reference = p.Has("--reference");
  return r;
}

Expected<BenchArgs> ParseBenchArgs(const std::vector<std::string>& args, bool* help) {
  ASSIGN_OR_RETURN(ParsedArgs p, ParseFlags(args, {{"--feed", true, true},
                                                   {"--warmup", true},
                                                   {"--repeat", true},
                                                   {"--threads", true},
                                                   {"--reference"},
                                                   {"--json"}}));
  if (help) *help = p.help;
  if (p.help) return BenchArgs{};
  if (p.positional.empty()) return InvalidArgument("missing GRAPH.json");
  if (p.positional.size() > 1)
    return InvalidArgument("unexpected argument '" + p.positional[1] + "'");
  BenchArgs b;
  b.graph = p.positional[0];
  for (const std::string& f : p.All("--feed")) {
    ASSIGN_OR_RETURN(auto feed, ParseFeedFlag(f));
    b.feeds.push_back(std::move(feed));
  }
  if (auto v = p.Last("--warmup")) {
    ASSIGN_OR_RETURN(b.warmup, ParseIntFlag("--warmup", *v, 0));
  }
  if (auto v = p.Last("--repeat")) {
    ASSIGN_OR_RETURN(b.repeat, ParseIntFlag("--repeat", *v, 1));
  }
  if (auto v = p.Last("--threads")) {
    ASSIGN_OR_RETURN(b.threads, ParseIntFlag("--threads", *v, 1));
  }
  b.json = p.Has("--json");
  b.reference = p.Has("--reference");
  return b;
}

std::atomic<bool>& CancelFlag() { return g_cancel; }

void InstallSigintHandler() {
  static_assert(std::atomic<bool>::is_always_lock_free,
                "the SIGINT handler needs a lock-free flag");
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  // SA_RESETHAND: a second Ctrl-C gets the default action and ends a stuck process.
  // SA_RESTART: a Ctrl-C must not fail a blocking read or the progress line's write with
  // EINTR (a failed write would leave std::cerr bad and swallow the "cancelled" message).
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
}

std::string VersionString() { return std::string("blockflow ") + BLOCKFLOW_VERSION; }

int Main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RegisterBuiltinBlocks();
  if (args.empty()) {
    err << "error: missing command\n" << kMainUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    if (command == "help" && !rest.empty() && Helps().count(rest[0])) {
      PrintHelp(out, rest[0]);
    } else {
      out << kMainUsage;
    }
    return kExitOk;
  }
  if (command == "--version" || command == "-V") {
    out << VersionString() << "\n";
    return kExitOk;
  }
  try {
    if (command == "run") return CommandRun(rest, out, err);
    if (command == "validate") return CommandValidate(rest, out, err);
    if (command == "bench") return CommandBench(rest, out, err);
    if (command == "ops") return CommandOps(rest, out, err);
    if (command == "import-tf") return CommandImportTf(rest, out, err);
  } catch (const std::exception& e) {
    // Library code reports errors as Status; this is the last line of defence.
    err << "error: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
  return UsageError(err, "",
                    command.rfind("-", 0) == 0 ? "unknown option '" + command + "'"
                                               : "unknown command '" + command + "'");
}

}  // namespace blockflow::cli
