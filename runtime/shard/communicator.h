// The few collective operations a sharded run needs (`blockflow run --shard`), behind an
// interface: one implementation over MPI (communicator_mpi.cc, the only file that includes
// mpi.h, built with BLOCKFLOW_MPI=ON) and one for a single process, so that the combine logic
// is tested without MPI. Every call is collective: every process makes the same calls in the
// same order.
//
//   std::unique_ptr<Communicator> comm = MakeSingleProcessCommunicator();
//   if (comm->LowestFailure(!status.ok()) >= 0) return kExitFailure;  // someone failed
//   comm->AllreduceSum(grad.raw(), grad.num_elements(), grad.dtype());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace blockflow::cli {

/// A group of processes running the same graph on their shares of a batch.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 ... size() - 1.
  virtual int rank() const = 0;
  /// The number of processes.
  virtual int size() const = 0;
  /// The lowest rank whose `failed` is true, or -1 when no process failed.
  virtual int LowestFailure(bool failed) = 0;
  /// The least and the greatest `value` over the processes.
  virtual std::pair<uint64_t, uint64_t> MinMax(uint64_t value) = 0;
  /// `root`'s bytes, on every process.
  virtual void Broadcast(std::string* bytes, int root) = 0;
  /// Every process's bytes in rank order, on `root` (empty elsewhere).
  virtual std::vector<std::string> Gather(const std::string& bytes, int root) = 0;
  /// Every process's `bytes` bytes at `data`, in rank order, into `dest` on `root`, which
  /// passes each rank's byte count in `sizes` (ignored elsewhere): no copy in between.
  virtual void GatherInto(const void* data, size_t bytes, void* dest,
                          const std::vector<size_t>& sizes, int root) = 0;
  /// The element-wise sum over the processes, in place on every process: `count` elements of
  /// float32, float64, int32 or int64.
  virtual void AllreduceSum(void* data, int64_t count, DType dtype) = 0;
  /// The most bytes one process may pass to Gather or Broadcast.
  virtual size_t max_message_bytes() const = 0;
};

/// One process alone: rank 0 of 1; every operation returns its input.
std::unique_ptr<Communicator> MakeSingleProcessCommunicator();

/// True when this build has MPI (BLOCKFLOW_MPI=ON with Open MPI found).
bool HaveMpi();

/// The error `--shard` gives in a build without MPI: what to install and how to rebuild.
Status MissingMpiError();

/// Initialises MPI (once per process) and returns MPI_COMM_WORLD's communicator; MPI is
/// finalised when it is destroyed. An error without MPI in this build.
Expected<std::unique_ptr<Communicator>> MakeMpiCommunicator();

}  // namespace blockflow::cli
