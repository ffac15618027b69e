// The single-process Communicator, and the MPI entry points of a build without MPI.
#include <cstdint>
#include <cstring>

#include "runtime/shard/communicator.h"

namespace blockflow::cli {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int LowestFailure(bool failed) override { return failed ? 0 : -1; }
  std::pair<uint64_t, uint64_t> MinMax(uint64_t value) override { return {value, value}; }
  void Broadcast(std::string*, int) override {}
  std::vector<std::string> Gather(const std::string& bytes, int) override { return {bytes}; }
  void GatherInto(const void* data, size_t bytes, void* dest, const std::vector<size_t>&,
                  int) override {
    if (bytes != 0 && dest != nullptr) std::memcpy(dest, data, bytes);
  }
  void AllreduceSum(void*, int64_t, DType) override {}
  size_t max_message_bytes() const override { return SIZE_MAX; }
};

}  // namespace

std::unique_ptr<Communicator> MakeSingleProcessCommunicator() {
  return std::make_unique<SingleProcess>();
}

Status MissingMpiError() {
  return InvalidArgument(
      "--shard needs MPI, and this blockflow was built without it: install Open MPI "
      "(Debian: apt-get install libopenmpi-dev openmpi-bin), then rebuild with "
      "`cmake -B build -DBLOCKFLOW_MPI=ON && cmake --build build`, and run under "
      "`mpirun -n P build/bin/blockflow run ... --shard NAME`");
}

#ifndef BLOCKFLOW_HAVE_MPI
bool HaveMpi() { return false; }

Expected<std::unique_ptr<Communicator>> MakeMpiCommunicator() { return MissingMpiError(); }
#endif

}  // namespace blockflow::cli
