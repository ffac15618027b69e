// The `blockflow` subcommands, one file each (command_*.cc). Each takes the arguments after
// its name and returns the exit status; results go to `out`, errors and progress to `err`.
//
//   int rc = CommandValidate({"g.json"}, std::cout, std::cerr);
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace blockflow::cli {

/// `blockflow run`: runs a graph, prints its outputs, optionally writes them, a profile, a trace.
int CommandRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// `blockflow validate`: every node's inferred dtypes and shapes, and every error.
int CommandValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// `blockflow bench`: the graph's steady-state run time and memory, and each block's kernel.
int CommandBench(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// `blockflow ops`: the block catalogue.
int CommandOps(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// `blockflow import-tf`: a TensorFlow GraphDef to a graph.
int CommandImportTf(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace blockflow::cli
