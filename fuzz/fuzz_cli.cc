// Fuzz target: the `blockflow` command line. The input is argv, NUL-separated.
//
// Every command's parser runs through cli::Main in an empty scratch folder. Arguments that
// could reach files outside it (absolute paths, "..", "~") are dropped first, so whatever the
// command line names is missing or confined to the scratch folder; a long-running command
// (a run or a benchmark of a real graph) cannot start without a graph file there.
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
  static const bool ready = [] {
    blockflow::RegisterBuiltinBlocks();
    if (chdir(blockflow::fuzz::ScratchFolder().c_str()) != 0) {
      blockflow::fuzz::Check(false, "chdir to the scratch folder");
    }
    return true;
  }();
  (void)ready;
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
  const int rc = blockflow::cli::Main(args, out, err);
  blockflow::fuzz::Check(rc == blockflow::cli::kExitOk || rc == blockflow::cli::kExitFailure ||
                             rc == blockflow::cli::kExitUsage,
                         "the exit status is 0, 1 or 2");
  blockflow::fuzz::Check(rc == blockflow::cli::kExitOk || !err.str().empty(),
                         "a failing command line says why on stderr");
  return 0;
}
