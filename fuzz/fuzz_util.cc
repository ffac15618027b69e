#include "fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace blockflow::fuzz {

namespace {

// The folder's name outlives every static destructor (it is never freed), so that the exit
// handler that removes the folder can still read it.
const std::string* MakeScratchFolder() {
  std::string pattern = (std::filesystem::temp_directory_path() / "blockflow-fuzz-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("blockflow fuzz: mkdtemp");
    std::abort();
  }
  return new std::string(pattern);
}

}  // namespace

const std::string& ScratchFolder() {
  static const std::string* const folder = [] {
    const std::string* f = MakeScratchFolder();
    // Empty unless a target wrote into it; removed when the process exits normally.
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchFolder(), ignored);
    });
    return f;
  }();
  return *folder;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "blockflow fuzz: property failed: %s\n", what);
  std::abort();
}

}  // namespace blockflow::fuzz
