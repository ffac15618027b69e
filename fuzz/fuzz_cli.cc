// Fuzz target: the `blockflow` command line. The input is argv, NUL-separated.
//
// Every command's parser runs through cli::Main with an empty scratch folder as the working
// folder (for the call only: libFuzzer's own paths stay relative to where it started). Arguments
// that could reach files outside it (absolute paths, "..", "~") are dropped first, so whatever the
// command line names is missing or confined to the scratch folder; a long-running command
// (a run or a benchmark of a real graph) cannot start without a graph file there.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "blocks/register_blocks.h"
#include "fuzz/fuzz_util.h"
#include "runtime/cli.h"

namespace {

bool MayLeaveScratchFolder(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.find("..") != std::string::npos ||
         arg.find('~') != std::string::npos || arg.find('\\') != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int home = [] {
    blockflow::RegisterBuiltinBlocks();
    const int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    blockflow::fuzz::Check(fd >= 0, "open the working folder");
    return fd;
  }();
  std::vector<std::string> args;
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current);
      current.clear();
    } else {
      current.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(current);
  if (args.size() > 64) return 0;
  for (const std::string& a : args) {
    if (MayLeaveScratchFolder(a)) return 0;
  }
  std::ostringstream out, err;
  blockflow::fuzz::Check(chdir(blockflow::fuzz::ScratchFolder().c_str()) == 0,
                         "chdir to the scratch folder");
  const int rc = blockflow::cli::Main(args, out, err);
  blockflow::fuzz::Check(fchdir(home) == 0, "chdir back");
  blockflow::fuzz::Check(rc == blockflow::cli::kExitOk || rc == blockflow::cli::kExitFailure ||
                             rc == blockflow::cli::kExitUsage,
                         "the exit status is 0, 1 or 2");
  blockflow::fuzz::Check(rc == blockflow::cli::kExitOk || !err.str().empty(),
                         "a failing command line says why on stderr");
  return 0;
}
