// The files `blockflow run` writes: one .npy per fetched tensor under --out, all written or
// none, and single files such as --trace, each checked before the run so that a long run is
// not wasted on a path that cannot be written.
//
//   ASSIGN_OR_RETURN(auto files, PlanOutputs(graph, fetches, "out"));
//   ... run ...
//   RETURN_IF_ERROR(WriteOutputs(graph, fetches, files, outputs, cancel));
#pragma once

#include <atomic>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace blockflow::cli {

/// "node 'ID' (Op)", the way errors name a node ("?" for an unknown id).
std::string NodeName(const Graph& graph, const std::string& id);

/// One tensor's file under --out.
struct PlannedFile {
  std::string path;
  size_t fetch;  // index into the fetches and the outputs
};

/// Maps each fetch ("id" or "id:K") to DIR/ID.npy or DIR/ID.K.npy and checks that no two
/// tensors share a file and that every file's folder can exist. The same tensor fetched twice
/// is written once. Every problem is reported, one per line.
Expected<std::vector<PlannedFile>> PlanOutputs(const Graph& graph,
                                               const std::vector<std::string>& fetches,
                                               const std::string& dir);

/// Writes every planned file or none: each to a temporary file beside its target first, renamed
/// into place only when all are written and `cancel` is still false.
Status WriteOutputs(const Graph& graph, const std::vector<std::string>& fetches,
                    const std::vector<PlannedFile>& files, const std::vector<Tensor>& outputs,
                    const std::atomic<bool>& cancel);

/// Prints the table of fetched tensors: node, port, dtype, shape, min, max, mean.
void PrintFetchedOutputs(const std::vector<std::string>& fetches,
                         const std::vector<Tensor>& outputs, std::ostream& out);

/// OK when the file `path`, given with `flag`, can be written: it is not a folder and no
/// ancestor of it is a file. The error names the flag and the path in the way.
Status CheckOutputFile(const std::string& flag, const std::string& path);

}  // namespace blockflow::cli
