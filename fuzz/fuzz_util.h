// What the fuzz targets share: a scratch folder to stand for the graph's folder, and a check
// that aborts (so libFuzzer records the input) when a property of the code under test fails.
#pragma once

#include <cstdint>
#include <string>

namespace blockflow::fuzz {

/// The memory limit the targets give the code under test (core/limits.h): well under
/// libFuzzer's -rss_limit_mb, so that a large but valid input is refused by the limit, as a
/// user's would be, instead of being reported as running out of memory.
constexpr uint64_t kMemoryLimit = uint64_t{256} << 20;

/// An empty folder, made once per process under the system's temporary folder.
const std::string& ScratchFolder();

/// Aborts with `what` on stderr when `ok` is false.
void Check(bool ok, const char* what);

}  // namespace blockflow::fuzz
