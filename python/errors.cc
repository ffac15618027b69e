#include "python/errors.h"

#include <sstream>

#include "runtime/usage.h"

namespace blockflow::python {
namespace {

PyObject* g_types[5] = {};

PyObject* NewType(py::module_& module, const char* name, PyObject* bases, const char* doc) {
  PyObject* type =
      PyErr_NewExceptionWithDoc((std::string("blockflow.") + name).c_str(), doc, bases, nullptr);
  if (!type) throw py::error_already_set();
  module.attr(name) = py::handle(type);  // the module holds a reference; so does g_types
  return type;
}

}  // namespace

void RegisterErrors(py::module_& module) {
  PyObject* error = NewType(module, "Error", PyExc_Exception,
                            "Every failure the blockflow runtime reports; the message is the "
                            "`blockflow` program's error text.");
  auto bases = [&](PyObject* standard) {
    return py::make_tuple(py::handle(error), py::handle(standard)).release().ptr();
  };
  g_types[static_cast<int>(ErrorKind::kError)] = error;
  g_types[static_cast<int>(ErrorKind::kInvalidGraph)] =
      NewType(module, "InvalidGraph", bases(PyExc_ValueError),
              "The graph cannot be loaded, or is not valid (every problem, one per line).");
  g_types[static_cast<int>(ErrorKind::kInvalidFeed)] =
      NewType(module, "InvalidFeed", bases(PyExc_ValueError),
              "A feed names no Placeholder, does not fit its dtype or shape, or a Placeholder "
              "the fetches need was not fed.");
  g_types[static_cast<int>(ErrorKind::kInvalidFetch)] = NewType(
      module, "InvalidFetch", bases(PyExc_ValueError), "A fetch names no output of the graph.");
  g_types[static_cast<int>(ErrorKind::kKernelError)] = NewType(
      module, "KernelError", bases(PyExc_RuntimeError), "A block failed while the graph ran.");
}

std::string CliText(const std::string& file, const std::string& message) {
  std::ostringstream cli;
  cli::PrintError(cli, file, message);
  std::istringstream lines(cli.str());
  std::string line, text;
  while (std::getline(lines, line)) {
    if (line.rfind("error: ", 0) == 0) line.erase(0, 7);
    if (!text.empty()) text += '\n';
    text += line;
  }
  return text;
}

void Raise(ErrorKind kind, const std::string& text) {
  PyErr_SetString(g_types[static_cast<int>(kind)], text.c_str());
  throw py::error_already_set();
}

}  // namespace blockflow::python
