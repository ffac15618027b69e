// blockflow._core: the compiled part of the `blockflow` Python package. A thin client of the
// core, like the CLI and the editor: LoadGraphFile / AnalyzeGraph / Session::Run / Scope, with
// NumPy arrays in and out without copies (arrays.h), the GIL released during runs, Ctrl-C
// cancelling them (interrupt.h), and failures raised as the CLI words them (errors.h).
// blockflow/__init__.py adds the GraphBuilder's generated methods on top.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "blocks/basic/basic_ops.h"
#include "blocks/register_blocks.h"
#include "core/graph.h"
#include "core/limits.h"
#include "core/scope.h"
#include "core/session.h"
#include "python/arrays.h"
#include "python/errors.h"
#include "python/interrupt.h"
#include "runtime/catalog.h"

namespace blockflow::python {
namespace {

// nlohmann JSON (either flavour) as Python objects: dicts, lists, str, int, float, bool, None.
template <typename Json>
py::object ToPython(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return py::none();
    case Json::value_t::boolean:
      return py::bool_(j.template get<bool>());
    case Json::value_t::number_integer:
      return py::int_(j.template get<int64_t>());
    case Json::value_t::number_unsigned:
      return py::int_(j.template get<uint64_t>());
    case Json::value_t::number_float:
      return py::float_(j.template get<double>());
    case Json::value_t::string:
      return py::str(j.template get_ref<const std::string&>());
    case Json::value_t::array: {
      py::list list;
      for (const auto& v : j) list.append(ToPython(v));
      return list;
    }
    case Json::value_t::object: {
      py::dict dict;
      for (auto it = j.begin(); it != j.end(); ++it) dict[py::str(it.key())] = ToPython(it.value());
      return dict;
    }
    default:
      return py::none();
  }
}

// Every issue of an analysis as the CLI prints them for `file`.
std::string IssuesText(const GraphAnalysis& analysis, const std::string& file) {
  std::string text;
  for (const NodeIssue& issue : analysis.issues) {
    if (!text.empty()) text += '\n';
    text += CliText(file, issue.ToString());
  }
  return text;
}

// One output of a node, as the builder returns it and Session.run accepts as a fetch or feed
// key: the C++ Output plus what analysis inferred for it.
struct PyOutput {
  std::string node;
  int index = 0;
  std::string dtype;           // "" when unknown
  std::vector<int64_t> shape;  // -1 for unknown sizes
  bool shape_known = false;
  std::string name() const { return Endpoint{node, index}.ToString(); }
};

// Records whether the run got past its plan (analysis with the feeds, fetch checks): an error
// after that is a block's.
class RunStarted : public ExecutionObserver {
 public:
  void OnRunBegin(const std::vector<std::string>&) override { started = true; }
  bool started = false;
};

// A graph being built: blockflow.GraphBuilder's compiled base, over a C++ Scope.
class PyScope {
 public:
  // Adds a node; raises InvalidGraph (and adds nothing) when the id is taken or invalid, or
  // when the node is not valid (unknown attr, wrong dtype, shapes that do not fit...).
  std::vector<PyOutput> AddNode(
      const std::string& op, const std::string& id,
      const std::vector<std::pair<std::string, std::vector<std::string>>>& inputs,
      const std::string& attrs_json) {
    CheckNewId(id);
    std::vector<std::pair<std::string, std::vector<Output>>> wired;
    for (const auto& [port, endpoints] : inputs) {
      std::vector<Output> outs;
      for (const std::string& text : endpoints) {
        std::optional<Endpoint> ep = Endpoint::Parse(text);
        if (!ep) {
          Raise(ErrorKind::kInvalidGraph, "node '" + id + "' (" + op + "): input '" + port +
                                              "': '" + text + "' is not \"node\" or \"node:K\"");
        }
        outs.emplace_back(ep->node, ep->index);
      }
      wired.emplace_back(port, std::move(outs));
    }
    nlohmann::json attrs;
    try {
      attrs = nlohmann::json::parse(attrs_json);
    } catch (const nlohmann::json::exception& e) {
      Raise(ErrorKind::kInvalidGraph, "node '" + id + "' (" + op + "): attrs: " + e.what());
    }
    root_.WithOpName(id).AddNode(op, wired, attrs);
    return Checked(id);
  }

  // Adds a Const holding `value` (an ndarray, read in place, or a list or number).
  PyOutput AddConst(const std::string& id, py::handle value, const std::string& dtype) {
    CheckNewId(id);
    DType want = DType::kInvalid;
    if (!dtype.empty()) {
      std::optional<DType> parsed = ParseDType(dtype);
      if (!parsed) Raise(ErrorKind::kInvalidGraph, "unknown dtype '" + dtype + "'");
      want = *parsed;
    }
    // A list or number is values, also for bfloat16 (which NumPy lacks: as float32, then
    // rounded once); only arrays may carry raw bfloat16 bits, as uint16.
    const bool values = !py::isinstance<py::array>(value) && want == DType::kBFloat16;
    Expected<Tensor> t = TensorFromArray(value, values ? DType::kFloat32 : want);
    if (!t.ok())
      Raise(ErrorKind::kInvalidGraph, "node '" + id + "' (Const): " + t.status().message());
    if (want != DType::kInvalid && t->dtype() != want) t = t->CastTo(want);
    ops::Const(root_.WithOpName(id), *t);
    return Checked(id).front();
  }

  bool Remove(const std::string& id) { return root_.graph().RemoveNode(id); }
  std::string UniqueId(const std::string& base) const { return root_.graph().UniqueId(base); }
  bool Has(const std::string& id) const { return root_.graph().FindNode(id) != nullptr; }
  const Graph& graph() const { return root_.graph(); }

 private:
  void CheckNewId(const std::string& id) const {
    if (!IsValidNodeId(id)) {
      Raise(ErrorKind::kInvalidGraph,
            "invalid node id '" + id + "': use letters, digits and _ . - / (not starting with /)");
    }
    if (Has(id)) Raise(ErrorKind::kInvalidGraph, "node id '" + id + "' is already taken");
  }

  // The new node's outputs as analysis infers them; removes it and raises when it is invalid.
  std::vector<PyOutput> Checked(const std::string& id) {
    const GraphAnalysis analysis = AnalyzeGraph(root_.graph());
    const int index = root_.graph().IndexOf(id);
    const NodeInfo& info = analysis.nodes[static_cast<size_t>(index)];
    if (!info.errors.empty()) {
      std::string text;
      for (const NodeIssue& issue : analysis.issues) {
        if (issue.node_id != id) continue;
        if (!text.empty()) text += '\n';
        text += issue.ToString();
      }
      Remove(id);
      Raise(ErrorKind::kInvalidGraph, text);
    }
    std::vector<PyOutput> outs;
    for (size_t k = 0; k < info.outputs.size(); ++k) {
      const PortInfo& p = info.outputs[k];
      outs.push_back(PyOutput{id, static_cast<int>(k),
                              p.dtype == DType::kInvalid ? "" : std::string(DTypeName(p.dtype)),
                              p.shape.dims(), info.ok});
    }
    if (outs.empty()) outs.push_back(PyOutput{id, 0, "", {}, false});  // NoOp: no outputs
    return outs;
  }

  Scope root_ = Scope::NewRootScope();
};

// Session's memory_limit: None (half of memory), bytes, or a string such as "512M" or "2G".
uint64_t MemoryLimitArg(const py::object& value) {
  if (value.is_none()) return 0;
  if (py::isinstance<py::str>(value)) {
    Expected<uint64_t> bytes = ParseByteSize(value.cast<std::string>());
    if (!bytes.ok()) throw py::value_error("memory_limit: " + bytes.status().message());
    return *bytes;
  }
  if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value)) {
    const long long bytes = value.cast<long long>();
    if (bytes <= 0) throw py::value_error("memory_limit must be more than zero bytes");
    return static_cast<uint64_t>(bytes);
  }
  throw py::type_error("memory_limit must be None, a number of bytes or a string such as '2G'");
}

// blockflow.Session: one C++ Session (so its prepared plans and Const file cache are reused).
class PySession {
 public:
  PySession(const Graph& given, std::optional<int> threads, const py::object& memory_limit)
      : threads_(threads.value_or(0)) {
    if (threads_ < 0) throw py::value_error("threads must be positive (None: every core)");
    Graph graph = given;
    graph.memory_limit = MemoryLimitArg(memory_limit);
    const GraphAnalysis analysis = AnalyzeGraph(graph);
    if (!analysis.ok()) Raise(ErrorKind::kInvalidGraph, IssuesText(analysis, graph.source_path));
    outputs_per_node_.reserve(analysis.nodes.size());
    for (const NodeInfo& info : analysis.nodes) outputs_per_node_.push_back(info.outputs.size());
    session_ = std::make_shared<const Session>(graph);
  }

  // `span`, when given, receives the run's start and end (seconds of the monotonic clock that
  // Python's time.perf_counter reads), taken while the GIL is released.
  py::object Run(py::handle fetches, py::handle feeds,
                 std::pair<double, double>* span = nullptr) const {
    // Fetches: one name or Output (one array back), or a list of them (a list back).
    std::vector<std::string> names;
    bool single = false;
    if (py::isinstance<py::str>(fetches)) {
      names.push_back(fetches.cast<std::string>());
      single = true;
    } else if (py::isinstance<PyOutput>(fetches)) {
      names.push_back(fetches.cast<const PyOutput&>().name());
      single = true;
    } else if (py::isinstance<py::list>(fetches) || py::isinstance<py::tuple>(fetches)) {
      for (py::handle f : fetches) {
        if (py::isinstance<py::str>(f)) {
          names.push_back(f.cast<std::string>());
        } else if (py::isinstance<PyOutput>(f)) {
          names.push_back(f.cast<const PyOutput&>().name());
        } else {
          throw py::type_error("a fetch is a node name (\"id\" or \"id:K\") or an Output, not " +
                               std::string(py::str(py::type::handle_of(f))));
        }
      }
    } else {
      throw py::type_error("fetches: a name, an Output, or a list of them");
    }
    if (names.empty()) throw py::value_error("fetches: nothing to fetch");

    // Feeds: Placeholder name (or Output) -> array, read in place.
    std::map<std::string, Tensor> feed_tensors;
    std::vector<const void*> readonly_feeds;
    if (!feeds.is_none()) {
      if (!py::isinstance<py::dict>(feeds)) throw py::type_error("feeds: a dict {name: array}");
      for (auto [key, value] : py::reinterpret_borrow<py::dict>(feeds)) {
        std::string id;
        if (py::isinstance<py::str>(key)) {
          id = key.cast<std::string>();
        } else if (py::isinstance<PyOutput>(key)) {
          id = key.cast<const PyOutput&>().node;
        } else {
          throw py::type_error("a feed key is a Placeholder's name or Output");
        }
        // The Placeholder's dtype matters only for what is not an ndarray already, and for
        // uint16 arrays (bfloat16 bits).
        DType want = DType::kInvalid;
        if (!py::isinstance<py::array>(value) ||
            py::reinterpret_borrow<py::array>(value).dtype().kind() == 'u') {
          want = PlaceholderDType(id);
        }
        bool readonly = false;
        Expected<Tensor> t = TensorFromArray(value, want, &readonly);
        if (!t.ok()) Raise(ErrorKind::kInvalidFeed, FeedText(id, t.status().message()));
        if (readonly) readonly_feeds.push_back(t->raw());
        feed_tensors.insert_or_assign(std::move(id), std::move(t).value());
      }
    }

    std::vector<Tensor> outputs;
    Status s;
    RunStarted started;
    bool interrupted = false;
    {
      // _signal.getsignal (signal.getsignal without its enum conversion), kept for the life of the
      // process (never released at exit).
      static PyObject* const getsignal =
          py::object{py::module_::import("_signal").attr("getsignal")}.release().ptr();
      const py::object python_handler =
          py::reinterpret_steal<py::object>(PyObject_CallFunction(getsignal, "i", SIGINT));
      if (!python_handler) throw py::error_already_set();
      SigintCancel sigint(python_handler.ptr());
      RunOptions options;
      options.num_threads = threads_;
      options.cancel = sigint.flag();
      options.observer = &started;
      py::gil_scoped_release release;
      const auto start = std::chrono::steady_clock::now();
      s = session_->Run(feed_tensors, names, &outputs, options);
      if (span) {
        const auto end = std::chrono::steady_clock::now();
        span->first = std::chrono::duration<double>(start.time_since_epoch()).count();
        span->second = std::chrono::duration<double>(end.time_since_epoch()).count();
      }
      interrupted = sigint.interrupted();
    }
    if (interrupted) {
      // Python's handler has marked the signal: it raises KeyboardInterrupt (or whatever the
      // program's own SIGINT handler does) on the main thread.
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (s.code() == StatusCode::kCancelled) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw py::error_already_set();
      }
    }
    if (!s.ok()) Raise(Classify(s, started.started, names), CliText(path(), s.message()));

    if (single) return ArrayFromTensor(outputs[0], IsReadonlyFeed(outputs[0], readonly_feeds));
    py::list result(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      result[i] = ArrayFromTensor(outputs[i], IsReadonlyFeed(outputs[i], readonly_feeds));
    }
    return result;
  }

  const Graph& graph() const { return session_->graph(); }
  const std::string& path() const { return session_->graph().source_path; }
  int threads() const { return threads_; }
  std::vector<std::string> DefaultFetches() const { return session_->DefaultFetches(); }

 private:
  // A fed Placeholder's dtype attr, or kInvalid (the run then reports what is wrong).
  DType PlaceholderDType(const std::string& id) const {
    const Node* node = session_->graph().FindNode(id);
    if (!node || !node->attrs.contains("dtype") || !node->attrs["dtype"].is_string()) {
      return DType::kInvalid;
    }
    return ParseDType(node->attrs["dtype"].get<std::string>()).value_or(DType::kInvalid);
  }

  std::string FeedText(const std::string& id, const std::string& message) const {
    const Node* node = session_->graph().FindNode(id);
    const std::string who = node ? "node '" + id + "' (" + node->op + "): " : "feed '" + id + "': ";
    return CliText(path(), who + message);
  }

  // An output that is a read-only feed passed through (a fetched Placeholder, an Identity)
  // stays read-only.
  static bool IsReadonlyFeed(const Tensor& t, const std::vector<const void*>& readonly_feeds) {
    for (const void* p : readonly_feeds) {
      if (t.raw() == p) return true;
    }
    return false;
  }

  // Which exception a failed run raises. The graph was valid without feeds (checked when the
  // session was made), so an error before the run began is about its fetches or its feeds.
  ErrorKind Classify(const Status& s, bool started, const std::vector<std::string>& names) const {
    if (started) return ErrorKind::kKernelError;
    for (const std::string& f : names) {
      std::optional<Endpoint> ep = Endpoint::Parse(f);
      if (!ep) return ErrorKind::kInvalidFetch;
      const int i = session_->graph().IndexOf(ep->node);
      if (i < 0 || ep->index < 0) return ErrorKind::kInvalidFetch;
      if (static_cast<size_t>(ep->index) >= outputs_per_node_[static_cast<size_t>(i)] &&
          s.message().rfind("cannot fetch", 0) == 0) {
        return ErrorKind::kInvalidFetch;
      }
    }
    return ErrorKind::kInvalidFeed;
  }

  int threads_ = 0;
  std::vector<size_t> outputs_per_node_;  // without feeds; a variadic node may have more
  std::shared_ptr<const Session> session_;
};

Graph LoadGraph(const std::string& path, bool allow_outside_files) {
  Expected<Graph> g = LoadGraphFile(path);
  if (!g.ok()) Raise(ErrorKind::kInvalidGraph, CliText(path, g.status().message()));
  g->allow_outside_files = allow_outside_files;
  return std::move(g).value();
}

Graph GraphFromJson(const std::string& text, const std::string& base_dir) {
  Expected<Graph> g = ParseGraphJson(text, "<json>", base_dir);
  if (!g.ok()) Raise(ErrorKind::kInvalidGraph, g.status().message());
  return std::move(g).value();
}

void SaveGraph(const Graph& graph, const std::string& path) {
  Status s = SaveGraphFile(graph, path);
  if (!s.ok()) Raise(ErrorKind::kError, CliText(path, s.message()));
}

py::list GraphNodes(const Graph& graph) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(SerializeGraph(graph));
  return ToPython(j["nodes"]);
}

std::string ShapeText(const std::vector<int64_t>& dims) { return Shape(dims).ToString(); }

// uint16 bfloat16 bits <-> float32, with the core's rounding (to nearest even; NaN stays NaN).
py::array BFloat16ToFloat32(
    const py::array_t<uint16_t, py::array::c_style | py::array::forcecast>& bits) {
  py::array_t<float> out(std::vector<py::ssize_t>(bits.shape(), bits.shape() + bits.ndim()));
  const uint16_t* in = bits.data();
  float* o = out.mutable_data();
  for (py::ssize_t i = 0; i < bits.size(); ++i) o[i] = BFloat16BitsToFloat(in[i]);
  return out;
}

py::array Float32ToBFloat16(
    const py::array_t<float, py::array::c_style | py::array::forcecast>& values) {
  py::array_t<uint16_t> out(
      std::vector<py::ssize_t>(values.shape(), values.shape() + values.ndim()));
  const float* in = values.data();
  uint16_t* o = out.mutable_data();
  for (py::ssize_t i = 0; i < values.size(); ++i) o[i] = FloatToBFloat16Bits(in[i]);
  return out;
}

// The address of an array's data, as Tensor::raw() would give it (tests check zero-copy).
uintptr_t DataAddress(const py::array& a) { return reinterpret_cast<uintptr_t>(a.data()); }

// Whether a run's output `array` is a tensor's buffer (its base, a capsule, holds the Tensor).
py::object TensorAddress(const py::array& array) {
  py::handle base = array.base();
  if (!base || !py::isinstance<py::capsule>(base)) return py::none();
  auto* tensor = static_cast<Tensor*>(py::reinterpret_borrow<py::capsule>(base).get_pointer());
  return py::int_(reinterpret_cast<uintptr_t>(tensor->raw()));
}

}  // namespace
}  // namespace blockflow::python

PYBIND11_MODULE(_core, m) {
  using namespace blockflow;
  using namespace blockflow::python;
  RegisterBuiltinBlocks();
  m.doc() = "blockflow's compiled core; import `blockflow`, not this module.";
  RegisterErrors(m);

  py::class_<NodeIssue>(m, "GraphIssue", "One problem that Graph.validate() found.")
      .def_property_readonly(
          "node", [](const NodeIssue& i) { return i.node_id; },
          "The node's id ('' for a problem of the whole graph).")
      .def_readonly("op", &NodeIssue::op, "The node's op.")
      .def_readonly("message", &NodeIssue::message, "What is wrong and why.")
      .def("__str__", &NodeIssue::ToString)
      .def("__repr__", [](const NodeIssue& i) {
        return "<blockflow.GraphIssue " + py::repr(py::str(i.ToString())).cast<std::string>() + ">";
      });

  py::class_<Graph>(m, "Graph", "A blockflow graph (data only; a Session runs it).")
      .def(py::init<>(), "An empty graph.")
      .def_static("load", &LoadGraph, py::arg("path"), py::arg("allow_outside_files") = false,
                  "Reads a graph JSON file; raises InvalidGraph when it cannot be read or parsed.\n"
                  "The files it names must be inside its folder (validate() and Session refuse\n"
                  "others) unless allow_outside_files=True.")
      .def_static("from_json", &GraphFromJson, py::arg("text"), py::arg("base_dir") = "",
                  "Parses graph JSON text; Const files resolve against base_dir.")
      .def("save", &SaveGraph, py::arg("path"),
           "Writes the graph as canonical JSON, atomically (a temporary file renamed).")
      .def(
          "to_json", [](const Graph& g) { return SerializeGraph(g); },
          "The canonical JSON text that save() writes.")
      .def_property_readonly("nodes", &GraphNodes,
                             "The nodes as dicts (id, op, inputs, attrs, ui), as in the JSON.")
      .def_property_readonly(
          "path", [](const Graph& g) { return g.source_path; },
          "The file the graph was loaded from or saved to ('' when new).")
      .def(
          "validate", [](const Graph& g) { return AnalyzeGraph(g).issues; },
          "Every problem in the graph (a list of GraphIssue: node, op, message); empty when "
          "valid.")
      .def("__len__", [](const Graph& g) { return g.nodes().size(); })
      .def("__repr__", [](const Graph& g) {
        return "<blockflow.Graph " + std::to_string(g.nodes().size()) + " nodes" +
               (g.source_path.empty() ? "" : " from '" + g.source_path + "'") + ">";
      });

  py::class_<PyOutput>(m, "Output",
                       "One output of a node, as GraphBuilder methods return it; a fetch or a "
                       "feed key for Session.run.")
      .def(py::init([](const std::string& node, int index) {
             return PyOutput{node, index, "", {}, false};
           }),
           py::arg("node"), py::arg("index") = 0)
      .def_readonly("node", &PyOutput::node, "The node's id.")
      .def_readonly("index", &PyOutput::index, "Which output of the node.")
      .def_property_readonly("name", &PyOutput::name, "\"node\" or \"node:K\".")
      .def_property_readonly(
          "dtype",
          [](const PyOutput& o) -> py::object {
            if (o.dtype.empty()) return py::none();
            return py::str(o.dtype);
          },
          "The inferred dtype name, or None.")
      .def_property_readonly(
          "shape",
          [](const PyOutput& o) -> py::object {
            if (!o.shape_known) return py::none();
            py::list dims;
            for (int64_t d : o.shape) dims.append(d);
            return py::tuple(dims);
          },
          "The inferred shape (a tuple, -1 for sizes known only at run time), or None.")
      .def("__repr__", [](const PyOutput& o) {
        std::string text = "<blockflow.Output '" + o.name() + "'";
        if (!o.dtype.empty()) text += " " + o.dtype + (o.shape_known ? ShapeText(o.shape) : "");
        return text + ">";
      });

  py::class_<PyScope>(m, "_Scope", "The C++ Scope under blockflow.GraphBuilder.")
      .def(py::init<>())
      .def("_add_node", &PyScope::AddNode, py::arg("op"), py::arg("id"), py::arg("inputs"),
           py::arg("attrs_json"))
      .def("_add_const", &PyScope::AddConst, py::arg("id"), py::arg("value"), py::arg("dtype") = "")
      .def("_remove", &PyScope::Remove, py::arg("id"))
      .def("_unique_id", &PyScope::UniqueId, py::arg("base"))
      .def("_has", &PyScope::Has, py::arg("id"))
      .def_property_readonly(
          "graph", [](const PyScope& s) { return s.graph(); }, "A copy of the graph built so far.");

  py::class_<PySession>(m, "Session",
                        "Runs a graph: Session(graph, threads=None, memory_limit=None)"
                        ".run(fetches, feeds).")
      .def(py::init<const Graph&, std::optional<int>, const py::object&>(), py::arg("graph"),
           py::arg("threads") = py::none(), py::arg("memory_limit") = py::none(),
           "Raises InvalidGraph (every problem) when the graph is not valid. threads: the "
           "threads each block uses (None: OMP_NUM_THREADS if set, else every core). memory_limit: "
           "bytes, or a string such "
           "as '512M' or '2G' (None: half of this machine's memory); a graph or feed whose "
           "tensors need more is refused before anything is allocated.")
      .def(py::init([](const PyScope& scope, std::optional<int> threads,
                       const py::object& memory_limit) {
             return PySession(scope.graph(), threads, memory_limit);
           }),
           py::arg("graph"), py::arg("threads") = py::none(), py::arg("memory_limit") = py::none(),
           "A GraphBuilder's graph.")
      .def(
          "run",
          [](const PySession& s, py::handle fetches, py::handle feeds) {
            return s.Run(fetches, feeds);
          },
          py::arg("fetches"), py::arg("feeds") = py::none(),
          "Runs what `fetches` needs and returns one array for a single fetch, a list for a "
          "list. fetches: \"id\", \"id:K\" or an Output, or a list of them. feeds: {Placeholder "
          "name or Output: array}. Arrays are read in place and results own the runtime's "
          "buffers (no copies); bfloat16 travels as uint16 bits. The GIL is released while the "
          "graph runs; Ctrl-C cancels it (KeyboardInterrupt).")
      .def(
          "_run_timed",
          [](const PySession& s, py::handle fetches, py::handle feeds) {
            std::pair<double, double> span;
            py::object result = s.Run(fetches, feeds, &span);
            return py::make_tuple(result, span.first, span.second);
          },
          py::arg("fetches"), py::arg("feeds") = py::none(),
          "run(), also returning when the graph started and stopped running (perf_counter "
          "seconds, taken with the GIL released); for tests.")
      .def_property_readonly(
          "graph", [](const PySession& s) { return s.graph(); }, "A copy of the graph it runs.")
      .def_property_readonly("threads", &PySession::threads)
      .def("default_fetches", &PySession::DefaultFetches,
           "Every output that feeds nothing (what `blockflow run` fetches by default).");

  m.def(
      "_op_catalog", [] { return ToPython(cli::CatalogJson(OpRegistry::Global())["ops"]); },
      "The registered ops as dicts (what `blockflow ops --json` prints).");
  m.def("bfloat16_to_float32", &BFloat16ToFloat32, py::arg("bits"),
        "bfloat16 raw bits (uint16, as runs return them) as float32 values (exact).");
  m.def("float32_to_bfloat16", &Float32ToBFloat16, py::arg("values"),
        "float32 values as bfloat16 raw bits (uint16), rounded to nearest even.");
  m.def("_data_address", &DataAddress, py::arg("array"));
  m.def("_tensor_address", &TensorAddress, py::arg("array"),
        "For an array a run returned: the address of the Tensor buffer its base holds.");
}
