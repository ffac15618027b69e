// Replays inputs through a fuzz target without libFuzzer, so that the normal build (any
// compiler) runs the regression inputs and the seed corpus as a plain test.
//
//   bf_fuzz_graph_replay tests/data/fuzz_regressions/graph samples/conv2d.json
//
// Each argument is a file or a folder (every regular file under it); inputs run in name order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    // Absolute, because a target may change the working folder (fuzz_cli does).
    std::error_code ec;
    const fs::path arg = fs::absolute(argv[i], ec);
    if (fs::is_directory(arg, ec)) {
      for (const fs::directory_entry& e : fs::recursive_directory_iterator(arg)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: %s: cannot read\n", f.string().c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs, no property failed\n", files.size());
  return files.empty() ? 2 : 0;
}
