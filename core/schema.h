// Block schemas and the registry: one declarative description per block that
// drives validation, shape inference, the editor, `blockflow ops` and the docs.
//
//   registry.Register(OpSchema("Identity")
//       .Category("Basic").Doc("Returns its input unchanged.")
//       .Input("input", AllDTypes(), "Any tensor.")
//       .Output("output", AllDTypes(), "The same tensor.")
//       .SameDType({"input"})
//       .SetShapeFn([](InferContext& c) { c.SetOutput(0, c.input(0)); return Status::OK(); })
//       .SetKernel([](KernelContext& k) { k.outputs[0] = *k.inputs[0]; return Status::OK(); }));
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace blockflow {

class TensorFileCache;

/// The type of an attribute's value in graph JSON.
enum class AttrType { kInt, kFloat, kBool, kString, kEnum, kInts, kFloats, kDType, kShape, kAny };
/// "int", "float", "bool", "string", "enum", "ints", "floats", "dtype", "shape", "any".
std::string_view AttrTypeName(AttrType type);

/// How a view lays out a rank-4 tensor on a port.
enum class LayoutRole {
  kNone,        // no fixed layout (a view shows it as NHWC)
  kActivation,  // NHWC or NCHW, as the node's `data_format` attr says (NHWC without one)
  kFilter,      // HWIO: [height, width, in_channels, out_channels]
};
/// "", "activation", "filter".
std::string_view LayoutRoleName(LayoutRole role);

/// What kind of file a string attribute (or a run-time feed) names.
enum class FileKind { kNone, kNpy };
/// "", "npy".
std::string_view FileKindName(FileKind kind);

/// An input port: name, allowed dtypes, doc. A list port takes any number of tensors.
struct PortDef {
  std::string name;
  std::vector<DType> dtypes;
  std::string doc;
  bool is_list = false;
  LayoutRole layout = LayoutRole::kNone;
};

/// An output port. When the schema's outputs are variadic, the last one repeats.
struct OutputDef {
  std::string name;
  std::vector<DType> dtypes;
  std::string doc;
  LayoutRole layout = LayoutRole::kNone;
  /// Not kNone: the tensor is fed when the graph runs, and a file of this kind can hold it.
  FileKind feed_file = FileKind::kNone;
  /// How the output depends on a batch split over processes (`blockflow run --shard`).
  BatchRule batch;
};

/// An attribute that only means something while attribute `attr` has the value `value`.
struct VisibleWhen {
  std::string attr;   // empty: always
  std::string value;  // compared with the string value of `attr` (given or default)
};

/// An attribute: name, type, default (null when required), allowed values (enums), doc, and
/// the facts that editors and importers read instead of knowing blocks by name.
struct AttrDef {
  std::string name;
  AttrType type = AttrType::kAny;
  nlohmann::json default_value;  // null: required
  bool required = false;
  std::vector<std::string> allowed;  // kEnum only
  std::string doc;
  /// kInts, kFloats: the number of values the list holds when given (0: any). The block's own
  /// checks enforce it; editors give one field per value.
  int length = 0;
  VisibleWhen visible_when;
  /// kString: the attribute names a file of this kind, relative to the graph file.
  FileKind file_kind = FileKind::kNone;
  /// With a file kind: the attribute whose value the file gives instead; exactly one of the
  /// two is set (Const: `file` instead of `value`). Editors show the pair as one value editor.
  std::string alternative_to;
};

/// A node's attributes with defaults filled in; typed getters CHECK the (already validated) type.
class AttrMap {
 public:
  AttrMap() : json_(nlohmann::json::object()) {}
  explicit AttrMap(nlohmann::json json) : json_(std::move(json)) {}
  /// True when the attribute is present (given or defaulted).
  bool Has(const std::string& name) const { return json_.contains(name) && !json_[name].is_null(); }
  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  std::string GetString(const std::string& name) const;
  std::vector<int64_t> GetInts(const std::string& name) const;
  std::vector<double> GetFloats(const std::string& name) const;
  DType GetDType(const std::string& name) const;
  Shape GetShape(const std::string& name) const;
  /// The raw JSON of one attribute (null when absent).
  const nlohmann::json& Get(const std::string& name) const;
  /// All attributes as a JSON object.
  const nlohmann::json& json() const { return json_; }

 private:
  nlohmann::json json_;
};

/// What inference knows about one tensor: dtype, shape (maybe partly unknown) and,
/// for constants and values derived from them, the value itself.
struct PortInfo {
  DType dtype = DType::kInvalid;
  Shape shape;
  std::shared_ptr<const Tensor> value;  // known value, or null
  bool from_feed = false;               // the value is (or passes on) a run's feed, not a constant
};

/// Given to a schema's shape function: the node's attrs and input infos; it sets the outputs.
class InferContext {
 public:
  InferContext(const std::string& node_id, const std::string& op, const AttrMap& attrs,
               std::vector<PortInfo> inputs, std::vector<int> port_starts, std::string base_dir,
               const Tensor* feed)
      : node_id_(node_id),
        op_(op),
        attrs_(attrs),
        inputs_(std::move(inputs)),
        port_starts_(std::move(port_starts)),
        base_dir_(std::move(base_dir)),
        feed_(feed) {}

  const std::string& node_id() const { return node_id_; }
  const std::string& op() const { return op_; }
  const AttrMap& attrs() const { return attrs_; }
  /// Flattened inputs (list ports expanded in place).
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const PortInfo& input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  /// Index of the first flattened input of schema port `port` (for list ports).
  int port_start(int port) const { return port_starts_[static_cast<size_t>(port)]; }
  /// Folder that relative file names (Const `file`) resolve against.
  const std::string& base_dir() const { return base_dir_; }
  /// For a Placeholder: the tensor fed at run time, or null.
  const Tensor* feed() const { return feed_; }

  /// Sets output i (grows the output list as needed).
  void SetOutput(int i, PortInfo info);
  void SetOutput(int i, DType dtype, Shape shape) {
    SetOutput(i, PortInfo{dtype, std::move(shape), nullptr});
  }
  const std::vector<PortInfo>& outputs() const { return outputs_; }
  std::vector<PortInfo>& mutable_outputs() { return outputs_; }

 private:
  const std::string& node_id_;
  const std::string& op_;
  const AttrMap& attrs_;
  std::vector<PortInfo> inputs_;
  std::vector<int> port_starts_;
  std::string base_dir_;
  const Tensor* feed_;
  std::vector<PortInfo> outputs_;
};

/// Given to a kernel: inputs (all ready), attrs, the inferred outputs; the kernel fills `outputs`.
struct KernelContext {
  const AttrMap* attrs = nullptr;
  std::vector<const Tensor*> inputs;          // flattened, as in InferContext
  std::vector<PortInfo> output_infos;         // fully defined shapes from inference
  std::vector<Tensor> outputs;                // to be set by the kernel
  int num_threads = 1;                        // OpenMP threads the kernel may use
  const std::atomic<bool>* cancel = nullptr;  // poll cancelled() between large chunks of work
  const std::atomic<bool>* stop = nullptr;    // set when another node of the run failed
  std::string base_dir;                       // as InferContext::base_dir

  /// Per-node state made once by the schema's prepare function (null when it has none).
  const void* state = nullptr;
  /// Where file-backed tensors (Const `file`) are read through, so a Session reads each once;
  /// null: read the file directly.
  TensorFileCache* file_cache = nullptr;

  const Tensor& input(int i) const { return *inputs[static_cast<size_t>(i)]; }
  /// Allocates output i zero-filled with its inferred dtype and shape, and returns it.
  Tensor& AllocateOutput(int i);
  /// Allocates output i with its inferred dtype and shape, contents unspecified: for kernels
  /// that write every element. Pooled memory is reused without the cost of zeroing it.
  Tensor& AllocateUninitializedOutput(int i);
  /// Makes `t` the kernel's only output, or returns its error.
  Status SetOutput(Expected<Tensor> t);
  /// The state the schema's prepare function made for this node, as its concrete type.
  template <typename T>
  const T& State() const {
    BF_CHECK(state != nullptr, "kernel expects a prepared state but the node has none");
    return *static_cast<const T*>(state);
  }
  /// True when the run was cancelled or another node failed: stop and return Cancelled().
  bool cancelled() const {
    return (cancel && cancel->load(std::memory_order_relaxed)) ||
           (stop && stop->load(std::memory_order_relaxed));
  }

 private:
  Tensor& PlaceOutput(int i, bool zeroed);
};

/// What a prepare function sees: a node's attrs (defaults filled) and its inferred, fully
/// defined input and output ports.
struct PrepareContext {
  const AttrMap* attrs = nullptr;
  const std::vector<PortInfo>* inputs = nullptr;
  const std::vector<PortInfo>* outputs = nullptr;
};

using ShapeFn = std::function<Status(InferContext&)>;
using KernelFn = std::function<Status(KernelContext&)>;
/// Computes a node's kernel state once per input signature (parsed attrs, geometry...).
using PrepareFn = std::function<Expected<std::shared_ptr<const void>>(const PrepareContext&)>;

/// The declarative description of one block (TensorFlow op).
class OpSchema {
 public:
  explicit OpSchema(std::string name) : name_(std::move(name)) {}

  OpSchema& Category(std::string category) {
    category_ = std::move(category);
    return *this;
  }
  OpSchema& Doc(std::string doc) {
    doc_ = std::move(doc);
    return *this;
  }
  OpSchema& Input(std::string name, std::vector<DType> dtypes, std::string doc = "");
  OpSchema& InputList(std::string name, std::vector<DType> dtypes, std::string doc = "");
  OpSchema& Output(std::string name, std::vector<DType> dtypes, std::string doc = "");
  /// The last output repeats as many times as the shape function sets outputs.
  OpSchema& VariadicOutputs() {
    variadic_outputs_ = true;
    return *this;
  }
  /// An attribute with a default value.
  OpSchema& Attr(std::string name, AttrType type, nlohmann::json default_value,
                 std::string doc = "");
  /// An attribute that must be given.
  OpSchema& RequiredAttr(std::string name, AttrType type, std::string doc = "");
  /// A string attribute restricted to `allowed`; an empty default makes it required.
  OpSchema& EnumAttr(std::string name, std::vector<std::string> allowed, std::string default_value,
                     std::string doc = "");
  /// The last attribute added holds exactly `n` values when given (lists only).
  OpSchema& Length(int n);
  /// The last attribute added applies only while attribute `attr` is `value`.
  OpSchema& VisibleWhen(std::string attr, std::string value);
  /// The last attribute added names a file of `kind`; with `alternative_to`, the file gives
  /// that attribute's value instead (exactly one of the two is set).
  OpSchema& FileKind(blockflow::FileKind kind, std::string alternative_to = "");
  /// The layout of the last port added (input or output).
  OpSchema& Layout(LayoutRole role);
  /// The last output added is fed at run time; a file of `kind` can hold the fed tensor.
  OpSchema& FedFrom(blockflow::FileKind kind);
  /// How the last output added depends on a batch split over processes (core/batch.h); an
  /// output without one is batch-free when its inputs are, undecided otherwise.
  OpSchema& Batch(BatchRule rule);
  /// Input ports (and the outputs' dtype) that must share one dtype, TensorFlow's `T`.
  OpSchema& SameDType(std::vector<std::string> ports) {
    same_dtype_ = std::move(ports);
    return *this;
  }
  OpSchema& SetShapeFn(ShapeFn fn) {
    shape_fn_ = std::move(fn);
    return *this;
  }
  /// Marks a block whose kernel has effects or must run when the graph runs; such a block
  /// is never computed ahead of time (constant folding) during analysis.
  OpSchema& SetIsStateful() {
    stateful_ = true;
    return *this;
  }
  /// The optimized kernel (used unless reference kernels are forced).
  OpSchema& SetKernel(KernelFn fn) {
    kernel_ = std::move(fn);
    return *this;
  }
  /// Per-node state for both kernels, computed once per input signature and handed to every
  /// run as KernelContext::state (a prepared Session keeps it between runs).
  OpSchema& SetPrepare(PrepareFn fn) {
    prepare_ = std::move(fn);
    return *this;
  }
  /// The reference kernel: the definition in plain loops. Used when no optimized kernel is set.
  OpSchema& SetReferenceKernel(KernelFn fn) {
    reference_kernel_ = std::move(fn);
    return *this;
  }

  const std::string& name() const { return name_; }
  const std::string& category() const { return category_; }
  const std::string& doc() const { return doc_; }
  const std::vector<PortDef>& inputs() const { return inputs_; }
  const std::vector<OutputDef>& outputs() const { return outputs_; }
  bool variadic_outputs() const { return variadic_outputs_; }
  const std::vector<AttrDef>& attrs() const { return attrs_; }
  const std::vector<std::string>& same_dtype() const { return same_dtype_; }
  const ShapeFn& shape_fn() const { return shape_fn_; }
  const KernelFn& kernel() const { return kernel_ ? kernel_ : reference_kernel_; }
  const KernelFn& reference_kernel() const {
    return reference_kernel_ ? reference_kernel_ : kernel_;
  }
  bool has_optimized_kernel() const { return kernel_ && reference_kernel_; }
  const PrepareFn& prepare() const { return prepare_; }
  bool is_stateful() const { return stateful_; }
  /// Port index by name, or -1.
  int InputIndex(const std::string& name) const;
  const AttrDef* FindAttr(const std::string& name) const;

 private:
  std::string name_, category_ = "Other", doc_;
  std::vector<PortDef> inputs_;
  std::vector<OutputDef> outputs_;
  bool variadic_outputs_ = false;
  bool stateful_ = false;
  std::vector<AttrDef> attrs_;
  std::vector<std::string> same_dtype_;
  ShapeFn shape_fn_;
  KernelFn kernel_, reference_kernel_;
  PrepareFn prepare_;
  enum class Added { kNothing, kInput, kOutput, kAttr } last_added_ = Added::kNothing;
};

/// Name → schema. The process-wide registry is filled by blocks::RegisterBuiltinBlocks().
class OpRegistry {
 public:
  /// Adds a schema; CHECKs that the name is new.
  void Register(OpSchema schema);
  /// The schema of `op`, or null.
  const OpSchema* Find(const std::string& op) const;
  /// All schemas sorted by name.
  std::vector<const OpSchema*> All() const;
  /// The process-wide registry.
  static OpRegistry& Global();

 private:
  std::map<std::string, std::unique_ptr<OpSchema>> schemas_;
};

/// Checks one attribute value against its definition; the message names the attr, value and rule.
Status CheckAttrValue(const AttrDef& def, const nlohmann::json& value);

/// Whether attribute `def` of `schema` applies to a node with `attrs`: its visible_when holds
/// for the controlling attribute's value, given in `attrs` or its default.
bool AttrIsVisible(const OpSchema& schema, const AttrDef& def, const nlohmann::json& attrs);

/// True for blocks whose value is fed at run time: an output with a feed file kind (Placeholder).
bool IsFedBlock(const OpSchema& schema);
/// True for blocks that hold a value given inline or in a file: an attr with a file kind that is
/// the alternative to another attr (Const's `file` or `value`).
bool HoldsValue(const OpSchema& schema);

/// The layout of a rank-4 tensor on a port with `role`, for a node of `schema` with `attrs`:
/// "NHWC", "NCHW" (the `data_format` attr, given or default), "HWIO", or "" for kNone.
std::string PortLayout(LayoutRole role, const OpSchema& schema, const nlohmann::json& attrs);

}  // namespace blockflow
