// The exceptions of the `blockflow` module and the text they carry: the `blockflow` program's
// error lines ("GRAPH.json: node 'dx' (Op): what and why"), without its leading "error: ".
//
//   blockflow.Error                      every failure the runtime reports
//   ├── InvalidGraph (also ValueError)   the graph cannot be loaded or is not valid
//   ├── InvalidFeed  (also ValueError)   a feed names no Placeholder, or its dtype or shape
//   │                                    does not fit, or a needed Placeholder is not fed
//   ├── InvalidFetch (also ValueError)   a fetch names no output of the graph
//   └── KernelError  (also RuntimeError) a block failed while the graph ran
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace blockflow::python {

namespace py = pybind11;

/// The exception types; ErrorKind indexes them.
enum class ErrorKind { kError, kInvalidGraph, kInvalidFeed, kInvalidFetch, kKernelError };

/// Creates the exception types and adds them to `module`.
void RegisterErrors(py::module_& module);

/// `message` as the CLI prints it for graph `file` ("" when the graph has no file), one line
/// per problem, without the "error: " that starts each of the CLI's lines.
std::string CliText(const std::string& file, const std::string& message);

/// Raises exception `kind` with `text` (sets the Python error and throws error_already_set).
[[noreturn]] void Raise(ErrorKind kind, const std::string& text);

}  // namespace blockflow::python
