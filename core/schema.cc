#include "core/schema.h"

#include <algorithm>

#include "core/text.h"

namespace blockflow {

std::string_view AttrTypeName(AttrType type) {
  static constexpr EnumName<AttrType> kNames[] = {
      {AttrType::kInt, "int"},       {AttrType::kFloat, "float"}, {AttrType::kBool, "bool"},
      {AttrType::kString, "string"}, {AttrType::kEnum, "enum"},   {AttrType::kInts, "ints"},
      {AttrType::kFloats, "floats"}, {AttrType::kDType, "dtype"}, {AttrType::kShape, "shape"},
      {AttrType::kAny, "any"}};
  return NameIn(kNames, type, "any");
}

std::string_view LayoutRoleName(LayoutRole role) {
  static constexpr EnumName<LayoutRole> kNames[] = {{LayoutRole::kActivation, "activation"},
                                                    {LayoutRole::kFilter, "filter"}};
  return NameIn(kNames, role, "");
}

std::string_view FileKindName(FileKind kind) {
  static constexpr EnumName<FileKind> kNames[] = {{FileKind::kNpy, "npy"}};
  return NameIn(kNames, kind, "");
}

// ---- AttrMap ----

const nlohmann::json& AttrMap::Get(const std::string& name) const {
  static const nlohmann::json kNull;
  auto it = json_.find(name);
  return it == json_.end() ? kNull : *it;
}

int64_t AttrMap::GetInt(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_number_integer(), "attr '" + name + "' is not an int");
  return v.get<int64_t>();
}

double AttrMap::GetFloat(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_number(), "attr '" + name + "' is not a number");
  return v.get<double>();
}

bool AttrMap::GetBool(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_boolean(), "attr '" + name + "' is not a bool");
  return v.get<bool>();
}

std::string AttrMap::GetString(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_string(), "attr '" + name + "' is not a string");
  return v.get<std::string>();
}

std::vector<int64_t> AttrMap::GetInts(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_array(), "attr '" + name + "' is not a list");
  std::vector<int64_t> out;
  for (const auto& e : v) {
    BF_CHECK(e.is_number_integer(), "attr '" + name + "' holds a non-int");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<double> AttrMap::GetFloats(const std::string& name) const {
  const auto& v = Get(name);
  BF_CHECK(v.is_array(), "attr '" + name + "' is not a list");
  std::vector<double> out;
  for (const auto& e : v) out.push_back(e.get<double>());
  return out;
}

DType AttrMap::GetDType(const std::string& name) const {
  auto d = ParseDType(GetString(name));
  BF_CHECK(d.has_value(), "attr '" + name + "' is not a dtype");
  return *d;
}

Shape AttrMap::GetShape(const std::string& name) const { return Shape(GetInts(name)); }

// ---- InferContext / KernelContext ----

void InferContext::SetOutput(int i, PortInfo info) {
  if (static_cast<int>(outputs_.size()) <= i) outputs_.resize(static_cast<size_t>(i) + 1);
  outputs_[static_cast<size_t>(i)] = std::move(info);
}

Tensor& KernelContext::AllocateOutput(int i) { return PlaceOutput(i, /*zeroed=*/true); }

Status KernelContext::SetOutput(Expected<Tensor> t) {
  if (!t.ok()) return t.status();
  outputs = {std::move(t).value()};
  return Status::OK();
}

Tensor& KernelContext::AllocateUninitializedOutput(int i) {
  return PlaceOutput(i, /*zeroed=*/false);
}

Tensor& KernelContext::PlaceOutput(int i, bool zeroed) {
  if (static_cast<int>(outputs.size()) <= i) outputs.resize(static_cast<size_t>(i) + 1);
  const PortInfo& info = output_infos.at(static_cast<size_t>(i));
  Tensor& out = outputs[static_cast<size_t>(i)];
  out = zeroed ? Tensor(info.dtype, info.shape) : Tensor::Uninitialized(info.dtype, info.shape);
  return out;
}

// ---- OpSchema ----

OpSchema& OpSchema::Input(std::string name, std::vector<DType> dtypes, std::string doc) {
  inputs_.push_back(PortDef{std::move(name), std::move(dtypes), std::move(doc), false});
  last_added_ = Added::kInput;
  return *this;
}

OpSchema& OpSchema::InputList(std::string name, std::vector<DType> dtypes, std::string doc) {
  inputs_.push_back(PortDef{std::move(name), std::move(dtypes), std::move(doc), true});
  last_added_ = Added::kInput;
  return *this;
}

OpSchema& OpSchema::Output(std::string name, std::vector<DType> dtypes, std::string doc) {
  OutputDef def;
  def.name = std::move(name);
  def.dtypes = std::move(dtypes);
  def.doc = std::move(doc);
  outputs_.push_back(std::move(def));
  last_added_ = Added::kOutput;
  return *this;
}

OpSchema& OpSchema::Attr(std::string name, AttrType type, nlohmann::json default_value,
                         std::string doc) {
  AttrDef def;
  def.name = std::move(name);
  def.type = type;
  def.default_value = std::move(default_value);
  def.doc = std::move(doc);
  attrs_.push_back(std::move(def));
  last_added_ = Added::kAttr;
  return *this;
}

OpSchema& OpSchema::RequiredAttr(std::string name, AttrType type, std::string doc) {
  AttrDef def;
  def.name = std::move(name);
  def.type = type;
  def.required = true;
  def.doc = std::move(doc);
  attrs_.push_back(std::move(def));
  last_added_ = Added::kAttr;
  return *this;
}

OpSchema& OpSchema::EnumAttr(std::string name, std::vector<std::string> allowed,
                             std::string default_value, std::string doc) {
  AttrDef def;
  def.name = std::move(name);
  def.type = AttrType::kEnum;
  def.allowed = std::move(allowed);
  def.required = default_value.empty();
  if (!def.required) def.default_value = std::move(default_value);
  def.doc = std::move(doc);
  attrs_.push_back(std::move(def));
  last_added_ = Added::kAttr;
  return *this;
}

OpSchema& OpSchema::Length(int n) {
  BF_CHECK(last_added_ == Added::kAttr, name_ + ": Length() must follow an attribute");
  AttrDef& def = attrs_.back();
  BF_CHECK(def.type == AttrType::kInts || def.type == AttrType::kFloats,
           name_ + "." + def.name + ": Length() needs a list attribute");
  BF_CHECK(n > 0, name_ + "." + def.name + ": Length() must be positive");
  def.length = n;
  return *this;
}

OpSchema& OpSchema::VisibleWhen(std::string attr, std::string value) {
  BF_CHECK(last_added_ == Added::kAttr, name_ + ": VisibleWhen() must follow an attribute");
  BF_CHECK(FindAttr(attr) != nullptr && attr != attrs_.back().name,
           name_ + "." + attrs_.back().name + ": VisibleWhen() names no earlier attribute '" +
               attr + "'");
  attrs_.back().visible_when = blockflow::VisibleWhen{std::move(attr), std::move(value)};
  return *this;
}

OpSchema& OpSchema::FileKind(blockflow::FileKind kind, std::string alternative_to) {
  BF_CHECK(last_added_ == Added::kAttr, name_ + ": FileKind() must follow an attribute");
  AttrDef& def = attrs_.back();
  BF_CHECK(def.type == AttrType::kString,
           name_ + "." + def.name + ": FileKind() needs a string attribute");
  BF_CHECK(
      alternative_to.empty() || FindAttr(alternative_to) != nullptr,
      name_ + "." + def.name + ": FileKind() names no earlier attribute '" + alternative_to + "'");
  def.file_kind = kind;
  def.alternative_to = std::move(alternative_to);
  return *this;
}

OpSchema& OpSchema::Layout(LayoutRole role) {
  if (last_added_ == Added::kInput) {
    inputs_.back().layout = role;
  } else {
    BF_CHECK(last_added_ == Added::kOutput, name_ + ": Layout() must follow a port");
    outputs_.back().layout = role;
  }
  return *this;
}

OpSchema& OpSchema::FedFrom(blockflow::FileKind kind) {
  BF_CHECK(last_added_ == Added::kOutput, name_ + ": FedFrom() must follow an output");
  outputs_.back().feed_file = kind;
  return *this;
}

OpSchema& OpSchema::Batch(BatchRule rule) {
  BF_CHECK(last_added_ == Added::kOutput, name_ + ": Batch() must follow an output");
  outputs_.back().batch = std::move(rule);
  return *this;
}

int OpSchema::InputIndex(const std::string& name) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const AttrDef* OpSchema::FindAttr(const std::string& name) const {
  for (const auto& a : attrs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// ---- OpRegistry ----

void OpRegistry::Register(OpSchema schema) {
  const std::string name = schema.name();
  BF_CHECK(!schemas_.count(name), "op registered twice: " + name);
  BF_CHECK(schema.shape_fn() != nullptr, "op has no shape function: " + name);
  schemas_[name] = std::make_unique<OpSchema>(std::move(schema));
}

const OpSchema* OpRegistry::Find(const std::string& op) const {
  auto it = schemas_.find(op);
  return it == schemas_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> OpRegistry::All() const {
  std::vector<const OpSchema*> out;
  for (const auto& [name, schema] : schemas_) out.push_back(schema.get());
  return out;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: used until exit
  return *registry;
}

// ---- attribute checking ----

namespace {
// An integer that fits int64 (JSON's unsigned integers above INT64_MAX do not).
bool IsInt64(const nlohmann::json& e) {
  return e.is_number_integer() &&
         (!e.is_number_unsigned() || e.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
}
}  // namespace

Status CheckAttrValue(const AttrDef& def, const nlohmann::json& value) {
  auto fail = [&](const std::string& rule) {
    return InvalidArgument("attr '" + def.name + "' " + rule + ", got " +
                           value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  auto all_of = [&](auto pred) {
    if (!value.is_array()) return false;
    for (const auto& e : value) {
      if (!pred(e)) return false;
    }
    return true;
  };
  switch (def.type) {
    case AttrType::kInt:
      if (!IsInt64(value)) return fail("must be an integer");
      break;
    case AttrType::kFloat:
      if (!value.is_number()) return fail("must be a number");
      break;
    case AttrType::kBool:
      if (!value.is_boolean()) return fail("must be true or false");
      break;
    case AttrType::kString:
      if (!value.is_string()) return fail("must be a string");
      break;
    case AttrType::kEnum: {
      const std::string list = JoinNames(def.allowed);
      if (!value.is_string()) return fail("must be one of " + list);
      for (const auto& a : def.allowed) {
        if (value.get<std::string>() == a) return Status::OK();
      }
      return fail("must be one of " + list);
    }
    case AttrType::kInts:
      if (!all_of(IsInt64)) return fail("must be a list of integers");
      break;
    case AttrType::kFloats:
      if (!all_of([](const nlohmann::json& e) { return e.is_number(); }))
        return fail("must be a list of numbers");
      break;
    case AttrType::kDType:
      if (!value.is_string() || !ParseDType(value.get<std::string>())) {
        return fail(
            "must be a dtype name (float16, bfloat16, float32, float64, int32, int64, bool)");
      }
      break;
    case AttrType::kShape:
      if (!all_of([](const nlohmann::json& e) { return IsInt64(e) && e.get<int64_t>() >= -1; })) {
        return fail("must be a list of dimensions (integers >= 0, or -1 for any size)");
      }
      break;
    case AttrType::kAny:
      break;
  }
  return Status::OK();
}

bool AttrIsVisible(const OpSchema& schema, const AttrDef& def, const nlohmann::json& attrs) {
  if (def.visible_when.attr.empty()) return true;
  const std::string& name = def.visible_when.attr;
  nlohmann::json value;
  if (attrs.is_object() && attrs.contains(name)) {
    value = attrs[name];
  } else if (const AttrDef* controlling = schema.FindAttr(name)) {
    value = controlling->default_value;
  }
  return value.is_string() && value.get<std::string>() == def.visible_when.value;
}

std::string PortLayout(LayoutRole role, const OpSchema& schema, const nlohmann::json& attrs) {
  switch (role) {
    case LayoutRole::kNone:
      return "";
    case LayoutRole::kFilter:
      return "HWIO";
    case LayoutRole::kActivation: {
      nlohmann::json format;
      if (attrs.is_object() && attrs.contains("data_format")) {
        format = attrs["data_format"];
      } else if (const AttrDef* def = schema.FindAttr("data_format")) {
        format = def->default_value;
      }
      return format.is_string() && format.get<std::string>() == "NCHW" ? "NCHW" : "NHWC";
    }
  }
  return "";
}

bool IsFedBlock(const OpSchema& schema) {
  return std::any_of(schema.outputs().begin(), schema.outputs().end(),
                     [](const OutputDef& o) { return o.feed_file != FileKind::kNone; });
}

bool HoldsValue(const OpSchema& schema) {
  return std::any_of(schema.attrs().begin(), schema.attrs().end(), [](const AttrDef& a) {
    return a.file_kind != FileKind::kNone && !a.alternative_to.empty();
  });
}

}  // namespace blockflow
