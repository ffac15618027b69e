#include "runtime/import_tf.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "blocks/basic/basic_ops.h"
#include "core/npy.h"
#include "tf_graph.pb.h"

namespace blockflow::tfimport {
namespace {

namespace pb = ::blockflow::tf;
using nlohmann::json;

// Attrs that steer TensorFlow's kernel selection or bookkeeping but carry nothing a
// blockflow block needs (its dtypes come from the wires, list lengths from the wiring).
const std::set<std::string>& TfOnlyAttrs() {
  // clang-format off
  static const std::set<std::string> names = {
      "T", "N", "Tshape", "Tidx", "Tpaddings", "Tperm", "Tmultiples", "Tindices", "Taxis",
      "Tparams", "TI", "Tout", "Tlen", "use_cudnn_on_gpu", "container", "shared_name",
      "validate_shape", "use_locking", "index_type"};
  // clang-format on
  return names;
}

std::optional<DType> FromTfDType(int t) {
  if (t > 100) t -= 100;  // reference types (old variables) carry the same values
  switch (t) {
    case pb::DT_FLOAT:
      return DType::kFloat32;
    case pb::DT_DOUBLE:
      return DType::kFloat64;
    case pb::DT_INT32:
      return DType::kInt32;
    case pb::DT_INT64:
      return DType::kInt64;
    case pb::DT_BOOL:
      return DType::kBool;
    case pb::DT_HALF:
      return DType::kFloat16;
    case pb::DT_BFLOAT16:
      return DType::kBFloat16;
    default:
      return std::nullopt;
  }
}

std::string TfDTypeName(int t) {
  const std::string& n = pb::DataType_Name(static_cast<pb::DataType>(t));
  return n.empty() ? "DataType " + std::to_string(t) : n;
}

Expected<DType> ToDType(int t, const std::string& what) {
  std::optional<DType> d = FromTfDType(t);
  if (!d)
    return InvalidArgument(what + ": dtype " + TfDTypeName(t) + " has no blockflow equivalent");
  return *d;
}

// A TensorShapeProto as dims (-1 unknown); nullopt for unknown rank.
std::optional<std::vector<int64_t>> ShapeDims(const pb::TensorShapeProto& s) {
  if (s.unknown_rank()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : s.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return dims;
}

// TensorFlow's typed value lists: missing trailing values repeat the last one, an
// empty list means zeros.
template <typename T, typename List, typename Convert>
Status FillFromList(const List& list, Tensor* t, const std::string& what, Convert convert) {
  const int64_t n = t->num_elements();
  if (static_cast<int64_t>(list.size()) > n) {
    return InvalidArgument(what + ": " + std::to_string(list.size()) + " values for shape " +
                           t->shape().ToString() + " (" + std::to_string(n) + " elements)");
  }
  if (list.empty()) return Status::OK();
  T* p = t->data<T>();
  for (int64_t i = 0; i < n; ++i) {
    p[i] = convert(list[static_cast<int>(std::min<int64_t>(i, list.size() - 1))]);
  }
  return Status::OK();
}

Expected<Tensor> TensorFromProto(const pb::TensorProto& tp, const std::string& what) {
  ASSIGN_OR_RETURN(DType dtype, ToDType(tp.dtype(), what));
  std::optional<std::vector<int64_t>> dims = ShapeDims(tp.tensor_shape());
  if (!dims) return InvalidArgument(what + ": a constant tensor needs a known shape");
  // Bound the size before allocating: a few repeated values can describe a huge tensor.
  constexpr int64_t kMaxBytes = int64_t{1} << 31;
  int64_t bytes = static_cast<int64_t>(DTypeSize(dtype));
  for (int64_t d : *dims) {
    if (d < 0) return InvalidArgument(what + ": a constant tensor needs a fully known shape");
    if (d > 0 && bytes > kMaxBytes / d) {
      return InvalidArgument(what + ": shape " + Shape(*dims).ToString() +
                             " is too large for a constant (over 2 GiB)");
    }
    bytes *= d;
  }
  Tensor t(dtype, Shape(*dims));
  const std::string& content = tp.tensor_content();
  if (!content.empty()) {
    if (content.size() != t.num_bytes()) {
      return InvalidArgument(what + ": tensor_content has " + std::to_string(content.size()) +
                             " bytes, shape " + t.shape().ToString() + " of " +
                             std::string(DTypeName(dtype)) + " needs " +
                             std::to_string(t.num_bytes()));
    }
    // TensorFlow writes tensor_content in host order, little-endian on every platform it
    // ships; copying it as is assumes a little-endian host too.
    static_assert(std::endian::native == std::endian::little, "tensor_content is little-endian");
    std::memcpy(t.raw(), content.data(), content.size());
    if (dtype == DType::kBool) {
      // A bool is one byte; anything but 0 is true (a bool object must hold 0 or 1).
      uint8_t* b = static_cast<uint8_t*>(t.raw());
      for (size_t i = 0; i < content.size(); ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  switch (dtype) {
    case DType::kFloat32:
      RETURN_IF_ERROR(FillFromList<float>(tp.float_val(), &t, what, [](float v) { return v; }));
      break;
    case DType::kFloat64:
      RETURN_IF_ERROR(FillFromList<double>(tp.double_val(), &t, what, [](double v) { return v; }));
      break;
    case DType::kInt32:
      RETURN_IF_ERROR(FillFromList<int32_t>(tp.int_val(), &t, what, [](int32_t v) { return v; }));
      break;
    case DType::kInt64:
      RETURN_IF_ERROR(FillFromList<int64_t>(tp.int64_val(), &t, what, [](int64_t v) { return v; }));
      break;
    case DType::kBool:
      RETURN_IF_ERROR(FillFromList<bool>(tp.bool_val(), &t, what, [](bool v) { return v; }));
      break;
    case DType::kFloat16:
      RETURN_IF_ERROR(FillFromList<Half>(tp.half_val(), &t, what, [](int32_t v) {
        return Half::FromBits(static_cast<uint16_t>(v));
      }));
      break;
    case DType::kBFloat16:
      RETURN_IF_ERROR(FillFromList<BFloat16>(tp.half_val(), &t, what, [](int32_t v) {
        return BFloat16::FromBits(static_cast<uint16_t>(v));
      }));
      break;
    default:
      return InvalidArgument(what + ": unsupported dtype");
  }
  return t;
}

json DimsJson(const std::vector<int64_t>& dims) {
  json a = json::array();
  for (int64_t d : dims) a.push_back(d);
  return a;
}

// Every problem, one per line, as one error.
Status JoinErrors(const std::vector<std::string>& errors) {
  std::string msg;
  for (const auto& e : errors) msg += e + "\n";
  return InvalidArgument(msg);
}

// One attr value in graph JSON form.
Expected<json> AttrToJson(const pb::AttrValue& v, const std::string& what) {
  switch (v.value_case()) {
    case pb::AttrValue::kS:
      return json(v.s());
    case pb::AttrValue::kI:
      return json(v.i());
    case pb::AttrValue::kF:
      return json(static_cast<double>(v.f()));
    case pb::AttrValue::kB:
      return json(v.b());
    case pb::AttrValue::kType: {
      ASSIGN_OR_RETURN(DType d, ToDType(v.type(), what));
      return json(std::string(DTypeName(d)));
    }
    case pb::AttrValue::kShape: {
      std::optional<std::vector<int64_t>> dims = ShapeDims(v.shape());
      if (!dims) return InvalidArgument(what + ": a shape of unknown rank has no blockflow form");
      return DimsJson(*dims);
    }
    case pb::AttrValue::kList: {
      const pb::AttrValue::ListValue& l = v.list();
      json a = json::array();
      for (int64_t i : l.i()) a.push_back(i);
      for (float f : l.f()) a.push_back(static_cast<double>(f));
      for (const std::string& s : l.s()) a.push_back(s);
      for (bool b : l.b()) a.push_back(b);
      for (int t : l.type()) {
        ASSIGN_OR_RETURN(DType d, ToDType(t, what));
        a.push_back(std::string(DTypeName(d)));
      }
      for (const auto& s : l.shape()) {
        std::optional<std::vector<int64_t>> dims = ShapeDims(s);
        if (!dims) return InvalidArgument(what + ": a shape of unknown rank has no blockflow form");
        a.push_back(DimsJson(*dims));
      }
      if (l.tensor_size() || l.func_size())
        return InvalidArgument(what + ": lists of tensors or functions are not supported");
      return a;
    }
    case pb::AttrValue::kTensor:
      return InvalidArgument(what + ": tensor values are supported on Const only");
    case pb::AttrValue::kFunc:
      return InvalidArgument(what + ": function attrs are not supported");
    case pb::AttrValue::kPlaceholder:
      return InvalidArgument(what + ": function placeholders are not supported");
    default:
      return InvalidArgument(what + ": empty attr value");
  }
}

// "name", "name:K" or "^name".
struct TfInput {
  std::string node;
  int index = 0;
  bool control = false;
};

std::optional<TfInput> ParseTfInput(const std::string& text) {
  TfInput in;
  std::string s = text;
  if (!s.empty() && s[0] == '^') {
    in.control = true;
    s = s.substr(1);
  }
  const size_t colon = s.rfind(':');
  if (colon != std::string::npos && colon + 1 < s.size() &&
      std::all_of(s.begin() + static_cast<long>(colon) + 1, s.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (s.size() - colon - 1 > 6) return std::nullopt;
    in.index = std::stoi(s.substr(colon + 1));
    s = s.substr(0, colon);
  }
  if (s.empty()) return std::nullopt;
  in.node = s;
  return in;
}

std::string TensorName(const std::string& node, int index) {
  return index == 0 ? node : node + ":" + std::to_string(index);
}

class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first.empty())
      first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  std::string first;
};

Expected<pb::GraphDef> ParseGraphDefBytes(const std::string& bytes, const std::string& origin,
                                          GraphDefFormat format) {
  pb::GraphDef gd;
  switch (format) {
    case GraphDefFormat::kBinary:
      if (!gd.ParseFromString(bytes))
        return InvalidArgument(origin + ": not a valid binary GraphDef");
      break;
    case GraphDefFormat::kText: {
      google::protobuf::TextFormat::Parser parser;
      TextErrors errors;
      parser.RecordErrorsTo(&errors);
      // Fields we do not declare (function libraries, debug info) are skipped, not errors.
      parser.AllowUnknownField(true);
      parser.AllowUnknownExtension(true);
      if (!parser.ParseFromString(bytes, &gd)) {
        return InvalidArgument(origin + ":" + (errors.first.empty() ? " " : errors.first + " ") +
                               "(not a valid text GraphDef)");
      }
      break;
    }
    case GraphDefFormat::kJson: {
      google::protobuf::util::JsonParseOptions opts;
      opts.ignore_unknown_fields = true;
      auto status = google::protobuf::util::JsonStringToMessage(bytes, &gd, opts);
      if (!status.ok()) {
        return InvalidArgument(origin +
                               ": not a valid JSON GraphDef: " + std::string(status.message()));
      }
      break;
    }
    case GraphDefFormat::kAuto:
      return Internal("format not detected");
  }
  return gd;
}

// Places nodes in columns by depth (longest path from a source) so the editor shows
// an imported graph readably.
void LayOut(Graph* graph) {
  std::map<std::string, int> depth;
  std::function<int(const Node&)> depth_of = [&](const Node& n) -> int {
    auto it = depth.find(n.id);
    if (it != depth.end()) return it->second;
    depth[n.id] = 0;  // guards against cycles
    int d = 0;
    for (const auto& [port, eps] : n.inputs) {
      for (const Endpoint& e : eps) {
        if (const Node* src = graph->FindNode(e.node)) d = std::max(d, depth_of(*src) + 1);
      }
    }
    return depth[n.id] = d;
  };
  std::map<int, int> rows;
  for (Node& n : graph->nodes()) {
    const int d = depth_of(n);
    const int row = rows[d]++;
    n.ui = json{{"x", 40 + 260 * d}, {"y", 40 + 110 * row}};
  }
}

}  // namespace

GraphDefFormat DetectFormat(const std::string& path, const std::string& bytes) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (ext == ".pb" || ext == ".graphdef") return GraphDefFormat::kBinary;
  if (ext == ".pbtxt" || ext == ".pbtext" || ext == ".txt" || ext == ".textproto")
    return GraphDefFormat::kText;
  if (ext == ".json") return GraphDefFormat::kJson;
  // Sniff: JSON opens with '{'; text format is printable; anything else is binary.
  size_t i = 0;
  while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
  if (i < bytes.size() && bytes[i] == '{') return GraphDefFormat::kJson;
  const bool printable = std::all_of(bytes.begin(), bytes.end(), [](char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    return u >= 0x20 || u == '\n' || u == '\r' || u == '\t';
  });
  return printable && !bytes.empty() ? GraphDefFormat::kText : GraphDefFormat::kBinary;
}

Expected<ImportResult> ImportGraphDef(const std::string& bytes, const std::string& origin,
                                      GraphDefFormat format, const ImportOptions& options,
                                      const OpRegistry& registry) {
  if (format == GraphDefFormat::kAuto) format = DetectFormat(origin, bytes);
  ASSIGN_OR_RETURN(pb::GraphDef gd, ParseGraphDefBytes(bytes, origin, format));
  if (gd.node_size() == 0) {
    // The parsers skip unknown fields, so any JSON object, an empty file and many byte
    // strings parse as an empty GraphDef: importing one is a mistake, not an empty graph.
    return InvalidArgument(origin +
                           ": the GraphDef has no nodes (is this a TensorFlow GraphDef? a "
                           "blockflow graph needs no import)");
  }

  std::vector<std::string> errors;
  std::map<std::string, int> by_name;
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    if (!by_name.emplace(n.name(), i).second)
      errors.push_back("two nodes are named '" + n.name() + "'");
  }
  auto who = [&](const pb::NodeDef& n) { return "node '" + n.name() + "' (" + n.op() + "): "; };

  // Data inputs of every node (control inputs dropped: they only order execution).
  std::vector<std::vector<TfInput>> inputs(static_cast<size_t>(gd.node_size()));
  for (int i = 0; i < gd.node_size(); ++i) {
    const pb::NodeDef& n = gd.node(i);
    for (const std::string& text : n.input()) {
      std::optional<TfInput> in = ParseTfInput(text);
      if (!in) {
        errors.push_back(who(n) + "malformed input '" + text + "'");
        continue;
      }
      if (in->control) continue;
      if (!by_name.count(in->node)) {
        errors.push_back(who(n) + "input '" + text + "' names no node in the graph");
        continue;
      }
      inputs[static_cast<size_t>(i)].push_back(*in);
    }
  }

  // Feeds: tensors where the graph is cut.
  std::set<std::pair<std::string, int>> feeds;
  for (const std::string& f : options.feeds) {
    std::optional<TfInput> in = ParseTfInput(f);
    if (!in || in->control) {
      errors.push_back("--feed " + f + ": expected NAME or NAME:K");
      continue;
    }
    if (!by_name.count(in->node)) {
      errors.push_back("--feed " + f + ": there is no node '" + in->node + "' in the GraphDef");
      continue;
    }
    feeds.insert({in->node, in->index});
  }
  // Roots: the fetched nodes, or every node.
  std::vector<std::string> roots;
  if (options.fetches.empty()) {
    for (const pb::NodeDef& n : gd.node()) roots.push_back(n.name());
  } else {
    for (const std::string& f : options.fetches) {
      std::optional<TfInput> in = ParseTfInput(f);
      if (!in || in->control || !by_name.count(in->node)) {
        errors.push_back("--fetch " + f + ": there is no node '" + (in ? in->node : f) +
                         "' in the GraphDef");
        continue;
      }
      roots.push_back(in->node);
    }
  }
  if (!errors.empty()) return JoinErrors(errors);

  // Walk back from the roots; a fed tensor ends the walk, and so does an op blockflow
  // lacks (it is reported, with the --feed that would cut it off).
  std::set<std::string> kept;
  std::set<std::pair<std::string, int>> used_feeds;
  std::vector<std::string> unsupported;  // in discovery order
  std::vector<std::string> stack(roots.rbegin(), roots.rend());
  std::set<std::string> root_set(roots.begin(), roots.end());
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (kept.count(name)) continue;
    if (feeds.count({name, 0}) && root_set.count(name) && !options.fetches.empty()) {
      used_feeds.insert({name, 0});  // fetching a fed tensor: the Placeholder itself
      continue;
    }
    kept.insert(name);
    const int i = by_name.at(name);
    const pb::NodeDef& n = gd.node(i);
    if (!registry.Find(n.op())) {
      unsupported.push_back(name);
      continue;
    }
    for (const TfInput& in : inputs[static_cast<size_t>(i)]) {
      if (feeds.count({in.node, in.index})) {
        used_feeds.insert({in.node, in.index});
        continue;
      }
      stack.push_back(in.node);
    }
  }
  for (const auto& f : feeds) {
    if (!used_feeds.count(f)) {
      errors.push_back(
          "--feed " + TensorName(f.first, f.second) +
          ": no kept node reads this tensor (check the name, the :K and the --fetch list)");
    }
  }
  // Report the ops blockflow lacks, each with the cut that removes it.
  for (const std::string& name : unsupported) {
    const pb::NodeDef& n = gd.node(by_name.at(name));
    std::set<int> consumed;
    for (const std::string& k : kept) {
      const int ki = by_name.at(k);
      if (!registry.Find(gd.node(ki).op())) continue;
      for (const TfInput& in : inputs[static_cast<size_t>(ki)]) {
        if (in.node == name && !feeds.count({in.node, in.index})) consumed.insert(in.index);
      }
    }
    std::string msg = who(n) + "blockflow has no block '" + n.op() + "'";
    if (!consumed.empty()) {
      msg += "; cut it off with";
      for (int k : consumed) msg += " --feed " + TensorName(name, k);
    }
    if (root_set.count(name) && !options.fetches.empty()) {
      msg += "; it is fetched, so it cannot be cut off";
    } else if (options.fetches.empty()) {
      msg += consumed.empty() ? "; choose the outputs you need with --fetch NAME"
                              : ", or choose outputs with --fetch NAME";
    }
    errors.push_back(msg);
  }
  if (!errors.empty()) return JoinErrors(errors);

  ImportResult result;
  Graph& graph = result.graph;
  auto placeholder_id = [](const std::string& name, int k) {
    return k == 0 ? name : name + "_" + std::to_string(k);
  };

  // Placeholders for the used feeds: dtype and shape from the cut node's attrs.
  std::map<std::pair<std::string, int>, Node> placeholders;
  for (const auto& [name, k] : used_feeds) {
    const pb::NodeDef& n = gd.node(by_name.at(name));
    const std::string what = "--feed " + TensorName(name, k);
    // The output's dtype: a per-output list first, then the attrs that name an output
    // type, and T last (T is the *input* type of Shape, Cast and the like).
    std::optional<int> tf_dtype;
    auto types = n.attr().find("_output_types");
    if (types != n.attr().end() && types->second.list().type_size() > k)
      tf_dtype = types->second.list().type(k);
    for (const char* key : {"out_type", "output_type", "DstT", "dtype", "T"}) {
      if (tf_dtype) break;
      auto it = n.attr().find(key);
      if (it != n.attr().end() && it->second.value_case() == pb::AttrValue::kType)
        tf_dtype = it->second.type();
    }
    if (!tf_dtype) {
      errors.push_back(what + ": cannot tell the dtype of '" + TensorName(name, k) + "': node '" +
                       name + "' (" + n.op() + ") has no out_type, DstT, dtype or T attr");
      continue;
    }
    Expected<DType> dtype = ToDType(*tf_dtype, what);
    if (!dtype.ok()) {
      errors.push_back(dtype.status().message());
      continue;
    }
    std::optional<std::vector<int64_t>> dims;
    auto shapes = n.attr().find("_output_shapes");
    if (shapes != n.attr().end() && shapes->second.list().shape_size() > k) {
      dims = ShapeDims(shapes->second.list().shape(k));
    }
    if (!dims && k == 0) {
      auto s = n.attr().find("shape");
      if (s != n.attr().end() && s->second.value_case() == pb::AttrValue::kShape)
        dims = ShapeDims(s->second.shape());
    }
    if (!dims) {
      errors.push_back(what + ": cannot tell the shape of '" + TensorName(name, k) + "': node '" +
                       name + "' (" + n.op() + ") has no _output_shapes or shape attr");
      continue;
    }
    Node p;
    p.id = placeholder_id(name, k);
    p.op = "Placeholder";
    p.attrs = json{{"dtype", std::string(DTypeName(*dtype))}, {"shape", DimsJson(*dims)}};
    placeholders[{name, k}] = std::move(p);
  }

  // Kept nodes in GraphDef order, each after its producers (depth-first).
  std::vector<std::string> order;
  std::map<std::string, int> state;  // 1 visiting, 2 done
  std::set<std::string> emitted_placeholders;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    int& st = state[name];
    if (st == 2) return;
    if (st == 1) {
      errors.push_back("node '" + name +
                       "' is part of a cycle (TensorFlow control flow is not supported)");
      st = 2;
      return;
    }
    st = 1;
    for (const TfInput& in : inputs[static_cast<size_t>(by_name.at(name))]) {
      if (feeds.count({in.node, in.index})) {
        const std::string pid = placeholder_id(in.node, in.index);
        if (emitted_placeholders.insert(pid).second)
          order.push_back("\x01" + in.node + ":" + std::to_string(in.index));
        continue;
      }
      if (kept.count(in.node)) visit(in.node);
    }
    st = 2;
    order.push_back(name);
  };
  for (const pb::NodeDef& n : gd.node()) {
    if (kept.count(n.name())) visit(n.name());
  }
  // A fetched fed tensor with no consumer in the graph.
  for (const auto& [key, p] : placeholders) {
    if (!emitted_placeholders.count(p.id)) {
      emitted_placeholders.insert(p.id);
      order.push_back("\x01" + key.first + ":" + std::to_string(key.second));
    }
  }

  for (const std::string& entry : order) {
    if (entry[0] == '\x01') {
      const size_t colon = entry.rfind(':');
      auto it = placeholders.find({entry.substr(1, colon - 1), std::stoi(entry.substr(colon + 1))});
      if (it == placeholders.end()) continue;  // its dtype or shape error is already reported
      if (Status s = graph.AddNode(it->second); !s.ok()) {
        errors.push_back("--feed " + TensorName(it->first.first, it->first.second) +
                         ": Placeholder '" + it->second.id + "': " + s.message() +
                         (kept.count(it->second.id) ? " (the node itself is still needed: feed "
                                                      "its other outputs too)"
                                                    : ""));
      }
      continue;
    }
    const pb::NodeDef& n = gd.node(by_name.at(entry));
    const OpSchema* schema = registry.Find(n.op());
    Node node;
    node.id = n.name();
    node.op = n.op();
    if (!IsValidNodeId(node.id)) {
      errors.push_back(who(n) +
                       "the name is not a valid blockflow id (letters, digits and _ . - /)");
      continue;
    }
    // Inputs: schema ports in order; a list port takes what the others leave.
    std::vector<Endpoint> eps;
    for (const TfInput& in : inputs[static_cast<size_t>(by_name.at(entry))]) {
      eps.push_back(feeds.count({in.node, in.index})
                        ? Endpoint{placeholder_id(in.node, in.index), 0}
                        : Endpoint{in.node, in.index});
    }
    const auto& ports = schema->inputs();
    const size_t singles = static_cast<size_t>(
        std::count_if(ports.begin(), ports.end(), [](const PortDef& p) { return !p.is_list; }));
    const bool has_list = singles != ports.size();
    if (eps.size() < singles || (!has_list && eps.size() != singles)) {
      std::string names;
      for (const PortDef& p : ports)
        names += (names.empty() ? "" : ", ") + p.name + (p.is_list ? "..." : "");
      errors.push_back(who(n) + "has " + std::to_string(eps.size()) + " data inputs, blockflow's " +
                       n.op() + " takes " + (has_list ? "at least " : "") +
                       std::to_string(singles) + " (" + (names.empty() ? "none" : names) + ")");
      continue;
    }
    size_t next = 0;
    for (const PortDef& p : ports) {
      const size_t take = p.is_list ? eps.size() - singles : 1;
      std::vector<Endpoint>& dst = node.inputs[p.name];
      for (size_t t = 0; t < take; ++t) dst.push_back(eps[next++]);
    }
    // Attributes.
    json attrs = json::object();
    bool failed = false;
    if (n.op() == "Const") {
      auto v = n.attr().find("value");
      if (v == n.attr().end() || v->second.value_case() != pb::AttrValue::kTensor) {
        errors.push_back(who(n) + "has no tensor 'value' attr");
        continue;
      }
      Expected<Tensor> t = TensorFromProto(v->second.tensor(), who(n) + "attr 'value'");
      if (!t.ok()) {
        errors.push_back(t.status().message());
        continue;
      }
      attrs["dtype"] = std::string(DTypeName(t->dtype()));
      if (t->num_elements() <= options.inline_limit) {
        attrs["shape"] = DimsJson(t->shape().dims());
        attrs["value"] = ops::TensorToJsonValues(*t);  // exact ints; "nan"/"inf" for floats
      } else {
        const std::string file = options.const_dir + "/" + node.id + ".npy";
        attrs["file"] = file;
        result.const_files.emplace_back(file, std::move(t).value());
      }
    } else if (n.op() == "Placeholder") {
      auto d = n.attr().find("dtype");
      if (d == n.attr().end() || d->second.value_case() != pb::AttrValue::kType) {
        errors.push_back(who(n) + "has no 'dtype' attr");
        continue;
      }
      Expected<DType> dtype = ToDType(d->second.type(), who(n) + "attr 'dtype'");
      if (!dtype.ok()) {
        errors.push_back(dtype.status().message());
        continue;
      }
      std::optional<std::vector<int64_t>> dims;
      auto s = n.attr().find("shape");
      if (s != n.attr().end() && s->second.value_case() == pb::AttrValue::kShape)
        dims = ShapeDims(s->second.shape());
      auto shapes = n.attr().find("_output_shapes");
      if (!dims && shapes != n.attr().end() && shapes->second.list().shape_size() > 0) {
        dims = ShapeDims(shapes->second.list().shape(0));
      }
      if (!dims) {
        errors.push_back(who(n) +
                         "its shape has unknown rank; blockflow needs the rank (sizes may be -1)");
        continue;
      }
      attrs["dtype"] = std::string(DTypeName(*dtype));
      attrs["shape"] = DimsJson(*dims);
    } else {
      std::vector<std::string> keys;
      for (const auto& [key, value] : n.attr()) keys.push_back(key);
      std::sort(keys.begin(), keys.end());  // proto maps have no order; keep the output stable
      for (const std::string& key : keys) {
        if (key.empty() || key[0] == '_' || TfOnlyAttrs().count(key)) continue;
        if (!schema->FindAttr(key)) {
          result.notes.push_back(who(n) + "attr '" + key + "' dropped: blockflow's " + n.op() +
                                 " has no such attr");
          continue;
        }
        Expected<json> j = AttrToJson(n.attr().at(key), who(n) + "attr '" + key + "'");
        if (!j.ok()) {
          errors.push_back(j.status().message());
          failed = true;
          continue;
        }
        attrs[key] = std::move(j).value();
      }
      // TensorFlow writes explicit_paddings: [] whatever the padding; it only means
      // something with EXPLICIT, and blockflow rejects it elsewhere.
      if (attrs.contains("explicit_paddings") && attrs["explicit_paddings"].empty() &&
          attrs.value("padding", "") != "EXPLICIT") {
        attrs.erase("explicit_paddings");
      }
    }
    if (failed) continue;
    node.attrs = std::move(attrs);
    if (Status s = graph.AddNode(std::move(node)); !s.ok()) errors.push_back(who(n) + s.message());
  }
  if (!errors.empty()) return JoinErrors(errors);
  LayOut(&graph);
  return result;
}

Expected<ImportResult> ImportGraphDefFile(const std::string& path, const ImportOptions& options,
                                          const OpRegistry& registry) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ImportGraphDef(bytes, path, DetectFormat(path, bytes), options, registry);
}

Status WriteValidImport(const ImportResult& result, const std::string& path,
                        const OpRegistry& registry) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  // The Const files go to a fresh staging folder beside the graph first, so that the
  // graph can be checked as it will load without touching what is already there.
  const fs::path stage =
      dir / ("." + fs::path(path).filename().string() + ".import." + std::to_string(::getpid()));
  std::error_code ec;
  if (fs::exists(stage, ec))
    return IoError("staging folder '" + stage.string() + "' already exists");
  struct RemoveStage {
    const fs::path& stage;
    ~RemoveStage() {
      std::error_code e;
      fs::remove_all(stage, e);
    }
  } remove_stage{stage};
  for (const auto& [file, tensor] : result.const_files) {
    RETURN_IF_ERROR(WriteNpy((stage / file).string(), tensor));
  }
  Graph staged = result.graph;
  staged.base_dir = stage.string();
  GraphAnalysis analysis = AnalyzeGraph(staged, registry);
  if (!analysis.ok()) {
    std::vector<std::string> issues;
    for (const NodeIssue& issue : analysis.issues) issues.push_back(issue.ToString());
    return JoinErrors(issues);
  }
  for (const auto& [file, tensor] : result.const_files) {
    fs::create_directories((dir / file).parent_path(), ec);
    fs::rename(stage / file, dir / file, ec);
    if (ec) return IoError("cannot write '" + (dir / file).string() + "': " + ec.message());
  }
  return SaveGraphFile(result.graph, path, registry);
}

Status WriteImport(const ImportResult& result, const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  for (const auto& [file, tensor] : result.const_files) {
    RETURN_IF_ERROR(WriteNpy((dir / file).string(), tensor));
  }
  return SaveGraphFile(result.graph, path);
}

}  // namespace blockflow::tfimport
