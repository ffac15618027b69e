// Where a graph's file names point.
#include "core/paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// Checked on the real paths: '..' that leaves the folder, absolute paths and links out are
// refused; '..' that stays inside, links inside, and graphs with no folder are fine.
TEST(PathsTest, CheckInsideGraphFolder) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("bf_paths_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "g/sub");
  std::ofstream(root / "out.npy") << "x";
  std::ofstream(root / "g/in.npy") << "x";
  fs::create_symlink(root / "out.npy", root / "g/out_link.npy");
  fs::create_symlink(root / "g/in.npy", root / "g/sub/in_link.npy");
  fs::create_directory_symlink(root, root / "g/up");
  const std::string g = (root / "g").string();
  EXPECT_TRUE(CheckInsideGraphFolder(g, "in.npy").ok());
  EXPECT_TRUE(CheckInsideGraphFolder(g, "sub/../in.npy").ok());
  EXPECT_TRUE(CheckInsideGraphFolder(g, "sub/in_link.npy").ok());
  EXPECT_TRUE(CheckInsideGraphFolder(g, "sub/not_yet.npy").ok());   // need not exist
  EXPECT_TRUE(CheckInsideGraphFolder("", "../anything.npy").ok());  // built in code
  const std::vector<std::string> outside = {"../out.npy", "sub/../../out.npy", "out_link.npy",
                                            "up/out.npy", (root / "g/in.npy").string()};
  for (const std::string& file : outside) {
    const Status s = CheckInsideGraphFolder(g, file);
    EXPECT_FALSE(s.ok()) << file;
    EXPECT_NE(s.message().find("file '" + file + "'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--allow-outside-files"), std::string::npos) << s.message();
  }
  EXPECT_NE(CheckInsideGraphFolder(g, "../out.npy").message().find("outside the graph's folder"),
            std::string::npos);
  fs::remove_all(root);
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
