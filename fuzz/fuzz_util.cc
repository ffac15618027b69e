#include "fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace blockflow::fuzz {

const std::string& ScratchFolder() {
  static const std::string folder = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "blockflow-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("blockflow fuzz: mkdtemp");
      std::abort();
    }
    // Empty unless a target wrote into it; removed when the process exits normally.
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchFolder(), ignored);
    });
    return pattern;
  }();
  return folder;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "blockflow fuzz: property failed: %s\n", what);
  std::abort();
}

}  // namespace blockflow::fuzz
