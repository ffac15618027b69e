// `blockflow run --shard`: every process runs the whole graph on its share of the batch, and
// rank 0 prints and writes the combined outputs exactly as one process would (combine.h).
//
//   ASSIGN_OR_RETURN(auto comm, MakeMpiCommunicator());
//   return RunSharded(args, *comm, std::cout, std::cerr);
#pragma once

#include <ostream>

#include "runtime/args.h"
#include "runtime/shard/communicator.h"

namespace blockflow::cli {

/// Runs `a` (with shards) on this process of `comm` and returns the exit status. Every step
/// ends with an agreement of all processes: a failure on any of them is printed once, by the
/// lowest failing rank, and fails every process before anything is written; only rank 0
/// prints the table and writes --out (all files or none).
int RunSharded(const RunArgs& a, Communicator& comm, std::ostream& out, std::ostream& err);

/// True when this process was started by an MPI launcher as a rank other than 0 (from the
/// launcher's environment), so that problems found before MPI starts are printed once.
bool IsNonZeroLaunchRank();

}  // namespace blockflow::cli
