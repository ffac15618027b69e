// Reading a TensorFlow GraphDef: the three encodings (binary, text, protobuf JSON), and the
// names its nodes use for tensors ("name", "name:K", "^name" for a control input).
//
//   ASSIGN_OR_RETURN(pb::GraphDef gd, ParseGraphDef(bytes, "g.pbtxt", GraphDefFormat::kText));
//   std::optional<TfInput> in = ParseTfInput("conv/Conv2D:1");   // {"conv/Conv2D", 1}
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "runtime/tf/import.h"
#include "tf_graph.pb.h"

namespace blockflow::tfimport {

namespace pb = ::blockflow::tf;

/// Parses GraphDef bytes of a known format; `origin` names the source in messages.
Expected<pb::GraphDef> ParseGraphDef(const std::string& bytes, const std::string& origin,
                                     GraphDefFormat format);

/// One input of a NodeDef: "name", "name:K" or "^name" (a control input).
struct TfInput {
  std::string node;
  int index = 0;
  bool control = false;
};

/// Parses an input or tensor name; nullopt when malformed.
std::optional<TfInput> ParseTfInput(const std::string& text);
/// "name" for output 0, else "name:K".
std::string TensorName(const std::string& node, int index);
/// "node 'name' (Op): ", the way import errors begin.
std::string Who(const pb::NodeDef& node);

}  // namespace blockflow::tfimport
