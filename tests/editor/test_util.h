// Helpers shared by the editor tests.
#pragma once

#include <string>

#include <QString>

#include "core/graph.h"

namespace blockflow::editor::testing {

/// A file of tests/editor/data.
inline QString DataPath(const QString& name) { return QString(BF_EDITOR_TEST_DATA) + "/" + name; }

/// Parses graph JSON written in a test (CHECKs that it parses).
inline Graph GraphFromJson(const std::string& text) {
  Expected<Graph> g = ParseGraphJson(text, "test", "");
  BF_CHECK(g.ok(), g.status().message());
  return std::move(g).value();
}

/// Two Consts (float32 [2,3] filled with 1, float32 [3] = 1,2,3) added: "s" = a + b.
inline const char* kAddGraph = R"({"format": "blockflow.graph", "version": 1, "nodes": [
  {"id": "a", "op": "Const", "attrs": {"dtype": "float32", "shape": [2, 3], "value": 1}, "ui": {"x": 0, "y": 0}},
  {"id": "b", "op": "Const", "attrs": {"dtype": "float32", "shape": [3], "value": [1, 2, 3]}, "ui": {"x": 0, "y": 200}},
  {"id": "s", "op": "Add", "inputs": {"x": "a", "y": "b"}, "ui": {"x": 400, "y": 100}}
]})";

}  // namespace blockflow::editor::testing
