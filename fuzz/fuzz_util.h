// What the fuzz targets share: a scratch folder to stand for the graph's folder, and a check
// that aborts (so libFuzzer records the input) when a property of the code under test fails.
#pragma once

#include <string>

namespace blockflow::fuzz {

/// An empty folder, made once per process under the system's temporary folder.
const std::string& ScratchFolder();

/// Aborts with `what` on stderr when `ok` is false.
void Check(bool ok, const char* what);

}  // namespace blockflow::fuzz
