#include "runtime/catalog.h"

#include <cctype>
#include <map>
#include <sstream>
#include <vector>

namespace blockflow::cli {
namespace {

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::string s;
  for (DType t : dtypes) {
    if (!s.empty()) s += ", ";
    s += DTypeName(t);
  }
  return s;
}

nlohmann::json DTypeJson(const std::vector<DType>& dtypes) {
  nlohmann::json a = nlohmann::json::array();
  for (DType t : dtypes) a.push_back(std::string(DTypeName(t)));
  return a;
}

// A default value as a user writes it in graph JSON.
std::string DefaultText(const AttrDef& a) {
  if (a.required) return "required";
  if (a.default_value.is_null()) return "none";  // optional, no default (e.g. Const's `file`)
  return a.default_value.dump();
}

std::string AllowedText(const AttrDef& a) {
  std::string s;
  for (const std::string& v : a.allowed) {
    if (!s.empty()) s += ", ";
    s += v;
  }
  return s;
}

// The type as the docs show it: a list with a length reads "ints (4)".
std::string TypeText(const AttrDef& a) {
  std::string s(AttrTypeName(a.type));
  if (a.length > 0) s += " (" + std::to_string(a.length) + ")";
  return s;
}

// Sentences for the schema facts of an attribute, appended to its doc.
std::string AttrFacts(const AttrDef& a) {
  std::string s;
  if (!a.visible_when.attr.empty()) {
    s += " Only with " + a.visible_when.attr + " " + a.visible_when.value + ".";
  }
  if (a.file_kind != FileKind::kNone) {
    s += " Names a ." + std::string(FileKindName(a.file_kind)) + " file";
    s += a.alternative_to.empty() ? "." : ", given instead of " + a.alternative_to + ".";
  }
  return s;
}

// Sentences for the schema facts of a port, appended to its doc.
std::string PortFacts(LayoutRole layout, FileKind feed_file) {
  std::string s;
  if (layout == LayoutRole::kActivation) s += " Layout: data_format (NHWC or NCHW).";
  if (layout == LayoutRole::kFilter) s += " Layout: HWIO.";
  if (feed_file != FileKind::kNone) {
    s += " Fed at run time, e.g. from a ." + std::string(FileKindName(feed_file)) + " file.";
  }
  return s;
}

// A doc followed by fact sentences, without a leading space when the doc is empty.
std::string WithFacts(const std::string& doc, const std::string& facts) {
  if (doc.empty() && !facts.empty()) return facts.substr(1);
  return doc + facts;
}

// Markdown table cells must not contain a bare '|' or a newline.
std::string Cell(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '|')
      s += "\\|";
    else if (c == '\n')
      s += ' ';
    else
      s += c;
  }
  return s.empty() ? " " : s;
}

// Ops grouped by category, categories and ops sorted by name (registry order is by name).
std::map<std::string, std::vector<const OpSchema*>> ByCategory(const OpRegistry& registry) {
  std::map<std::string, std::vector<const OpSchema*>> groups;
  for (const OpSchema* s : registry.All()) groups[s->category()].push_back(s);
  return groups;
}

// GitHub-style heading anchor: lower case, spaces to '-', punctuation dropped.
std::string Anchor(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      a += static_cast<char>(std::tolower(c));
    else if (c == ' ' || c == '-')
      a += '-';
    else if (c == '_')
      a += '_';
  }
  return a;
}

}  // namespace

std::string CatalogText(const OpRegistry& registry) {
  std::ostringstream o;
  for (const OpSchema* s : registry.All()) {
    o << s->name() << "  [" << s->category() << "]\n";
    if (!s->doc().empty()) o << "  " << s->doc() << "\n";
    for (const PortDef& p : s->inputs()) {
      o << "  input  " << p.name << (p.is_list ? " (list)" : "") << ": " << DTypeList(p.dtypes);
      const std::string doc = WithFacts(p.doc, PortFacts(p.layout, FileKind::kNone));
      if (!doc.empty()) o << "  -- " << doc;
      o << "\n";
    }
    for (size_t i = 0; i < s->outputs().size(); ++i) {
      const OutputDef& p = s->outputs()[i];
      bool repeats = s->variadic_outputs() && i + 1 == s->outputs().size();
      o << "  output " << p.name << (repeats ? " (repeated)" : "") << ": " << DTypeList(p.dtypes);
      const std::string doc = WithFacts(p.doc, PortFacts(p.layout, p.feed_file));
      if (!doc.empty()) o << "  -- " << doc;
      o << "\n";
    }
    for (const AttrDef& a : s->attrs()) {
      o << "  attr   " << a.name << ": " << TypeText(a) << " = " << DefaultText(a);
      if (!a.allowed.empty()) o << "  {" << AllowedText(a) << "}";
      const std::string doc = WithFacts(a.doc, AttrFacts(a));
      if (!doc.empty()) o << "  -- " << doc;
      o << "\n";
    }
    o << "\n";
  }
  o << registry.All().size() << " blocks\n";
  return o.str();
}

nlohmann::ordered_json CatalogJson(const OpRegistry& registry) {
  using ojson = nlohmann::ordered_json;
  ojson ops = ojson::array();
  for (const OpSchema* s : registry.All()) {
    ojson op;
    op["name"] = s->name();
    op["category"] = s->category();
    op["doc"] = s->doc();
    op["inputs"] = ojson::array();
    for (const PortDef& p : s->inputs()) {
      ojson j{
          {"name", p.name}, {"dtypes", DTypeJson(p.dtypes)}, {"list", p.is_list}, {"doc", p.doc}};
      if (p.layout != LayoutRole::kNone) j["layout"] = LayoutRoleName(p.layout);
      op["inputs"].push_back(std::move(j));
    }
    op["outputs"] = ojson::array();
    for (const OutputDef& p : s->outputs()) {
      ojson j{{"name", p.name}, {"dtypes", DTypeJson(p.dtypes)}, {"doc", p.doc}};
      if (p.layout != LayoutRole::kNone) j["layout"] = LayoutRoleName(p.layout);
      if (p.feed_file != FileKind::kNone) j["feed_file"] = FileKindName(p.feed_file);
      op["outputs"].push_back(std::move(j));
    }
    op["variadic_outputs"] = s->variadic_outputs();
    op["attrs"] = ojson::array();
    for (const AttrDef& a : s->attrs()) {
      ojson j{{"name", a.name},
              {"type", std::string(AttrTypeName(a.type))},
              {"required", a.required},
              {"default", ojson::parse(a.default_value.dump())},
              {"doc", a.doc}};
      if (!a.allowed.empty()) j["allowed"] = a.allowed;
      if (a.length > 0) j["length"] = a.length;
      if (!a.visible_when.attr.empty()) {
        j["visible_when"] = ojson{{"attr", a.visible_when.attr}, {"value", a.visible_when.value}};
      }
      if (a.file_kind != FileKind::kNone) j["file_kind"] = FileKindName(a.file_kind);
      if (!a.alternative_to.empty()) j["alternative_to"] = a.alternative_to;
      op["attrs"].push_back(std::move(j));
    }
    op["same_dtype"] = s->same_dtype();
    op["has_optimized_kernel"] = s->has_optimized_kernel();
    ops.push_back(std::move(op));
  }
  return ojson{{"ops", std::move(ops)}};
}

std::string CatalogMarkdown(const OpRegistry& registry) {
  std::ostringstream o;
  auto groups = ByCategory(registry);
  o << "# Block catalogue\n\n"
    << "<!-- Generated by `blockflow ops --markdown > docs/blocks.md`; do not edit by hand. -->\n\n"
    << "Every block blockflow knows, from its schema: input ports with the dtypes they accept, "
       "outputs, and attributes with their type, default and allowed values. Names follow "
       "TensorFlow. An attribute whose default is *required* must be given in the graph JSON; "
       "*none* marks an optional attribute without a default; a list type with a count, such as "
       "ints (4), holds exactly that many values. A port's layout says how a rank-4 tensor is "
       "read: data_format (NHWC or NCHW, from the block's data_format attribute) or HWIO "
       "(filters).\n\n";
  o << registry.All().size() << " blocks in " << groups.size() << " categories:\n\n";
  for (const auto& [category, ops] : groups) {
    o << "- **" << category << "**:";
    bool first = true;
    for (const OpSchema* s : ops) {
      o << (first ? " " : ", ") << "[" << s->name() << "](#" << Anchor(s->name()) << ")";
      first = false;
    }
    o << "\n";
  }
  for (const auto& [category, ops] : groups) {
    o << "\n## " << category << "\n";
    for (const OpSchema* s : ops) {
      o << "\n### " << s->name() << "\n\n";
      if (!s->doc().empty()) o << s->doc() << "\n\n";
      if (!s->inputs().empty()) {
        o << "| input | dtypes | description |\n|---|---|---|\n";
        for (const PortDef& p : s->inputs()) {
          o << "| `" << p.name << "`" << (p.is_list ? " (list)" : "") << " | "
            << Cell(DTypeList(p.dtypes)) << " | "
            << Cell(WithFacts(p.doc, PortFacts(p.layout, FileKind::kNone))) << " |\n";
        }
        o << "\n";
      }
      if (!s->outputs().empty()) {
        o << "| output | dtypes | description |\n|---|---|---|\n";
        for (size_t i = 0; i < s->outputs().size(); ++i) {
          const OutputDef& p = s->outputs()[i];
          bool repeats = s->variadic_outputs() && i + 1 == s->outputs().size();
          o << "| `" << p.name << "`" << (repeats ? " (repeated)" : "") << " | "
            << Cell(DTypeList(p.dtypes)) << " | "
            << Cell(WithFacts(p.doc, PortFacts(p.layout, p.feed_file))) << " |\n";
        }
        o << "\n";
      }
      if (!s->attrs().empty()) {
        o << "| attribute | type | default | allowed | description |\n|---|---|---|---|---|\n";
        for (const AttrDef& a : s->attrs()) {
          std::string def = DefaultText(a);
          o << "| `" << a.name << "` | " << TypeText(a) << " | "
            << (def == "required" || def == "none" ? "*" + def + "*" : "`" + Cell(def) + "`")
            << " | " << Cell(AllowedText(a)) << " | " << Cell(WithFacts(a.doc, AttrFacts(a)))
            << " |\n";
        }
        o << "\n";
      }
      if (!s->same_dtype().empty()) {
        o << "Inputs";
        for (const std::string& p : s->same_dtype()) o << " `" << p << "`";
        o << " and the outputs share one dtype (TensorFlow's `T`).\n\n";
      }
    }
  }
  // Sections end with a blank line and start with one: collapse the doubles, and end
  // with exactly one newline so the committed file and the generator agree.
  std::string text = o.str();
  for (size_t pos; (pos = text.find("\n\n\n")) != std::string::npos;) text.erase(pos, 1);
  while (text.size() > 1 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n')
    text.pop_back();
  return text;
}

}  // namespace blockflow::cli
