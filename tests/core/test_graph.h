// Helpers for the core tests: graphs written as JSON in the test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "blocks/register_blocks.h"
#include "core/graph.h"

namespace blockflow::testing {

/// Parses graph JSON v1 (the built-in blocks registered) with `base_dir` as its folder; an
/// empty graph, and a test failure, when it does not parse.
inline Graph GraphFromJson(const std::string& json, const std::string& base_dir = ".") {
  RegisterBuiltinBlocks();
  Expected<Graph> g = ParseGraphJson(json, "g.json", base_dir);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Graph();
}

}  // namespace blockflow::testing
