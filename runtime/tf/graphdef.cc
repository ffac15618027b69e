#include "runtime/tf/graphdef.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace blockflow::tfimport {
namespace {

// Keeps the first error of the text parser, with its line and column.
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

Expected<pb::GraphDef> ParseGraphDef(const std::string& bytes, const std::string& origin,
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

std::string Who(const pb::NodeDef& node) {
  return "node '" + node.name() + "' (" + node.op() + "): ";
}

}  // namespace blockflow::tfimport
