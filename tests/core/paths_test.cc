// Where a graph's file names point.
#include "core/paths.h"

#include <gtest/gtest.h>

namespace blockflow {
namespace {

TEST(PathsTest, ResolveGraphPath) {
  EXPECT_EQ(ResolveGraphPath("samples", "g/w.npy"), "samples/g/w.npy");
  EXPECT_EQ(ResolveGraphPath("samples/", "./g/../w.npy"), "samples/w.npy");
  EXPECT_EQ(ResolveGraphPath("samples", "../w.npy"), "w.npy");
  EXPECT_EQ(ResolveGraphPath("samples", "/data/w.npy"), "/data/w.npy");  // absolute: as it is
  EXPECT_EQ(ResolveGraphPath("", "./w.npy"), "./w.npy");  // a graph not yet saved: as it is
  Graph g;
  g.base_dir = "a/b";
  EXPECT_EQ(ResolveGraphPath(g, "c.npy"), "a/b/c.npy");
}

TEST(PathsTest, UiFeedFile) {
  Node n;
  EXPECT_FALSE(UiFeedFile(n));
  n.ui = {{"feed", "x.npy"}};
  EXPECT_EQ(UiFeedFile(n), "x.npy");
  n.ui = {{"feed", ""}};
  EXPECT_FALSE(UiFeedFile(n));
  n.ui = {{"feed", 3}};
  EXPECT_FALSE(UiFeedFile(n));
}

}  // namespace
}  // namespace blockflow
