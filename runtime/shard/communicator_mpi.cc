// The Communicator over MPI: the one file of blockflow that calls MPI. MPI is initialised
// when a sharded run asks for it, never for a plain `blockflow run`.
#include <mpi.h>

#include <climits>
#include <cstring>

#include "runtime/shard/communicator.h"

namespace blockflow::cli {
namespace {

MPI_Datatype MpiType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    default:
      break;
  }
  BF_CHECK(false, "AllreduceSum: unsupported dtype " + std::string(DTypeName(dtype)));
  return MPI_DATATYPE_NULL;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  int LowestFailure(bool failed) override {
    int mine = failed ? rank_ : size_, lowest = size_;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return lowest < size_ ? lowest : -1;
  }

  std::pair<uint64_t, uint64_t> MinMax(uint64_t value) override {
    uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return {lo, hi};
  }

  void Broadcast(std::string* bytes, int root) override {
    uint64_t n = bytes->size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
    bytes->resize(n);
    if (n > 0) MPI_Bcast(bytes->data(), static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD);
  }

  std::vector<std::string> Gather(const std::string& bytes, int root) override {
    const int n = static_cast<int>(bytes.size());
    std::vector<int> counts(rank_ == root ? static_cast<size_t>(size_) : 0);
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, MPI_COMM_WORLD);
    std::vector<int> displs(counts.size());
    std::string all;
    if (rank_ == root) {
      int64_t total = 0;
      for (size_t r = 0; r < counts.size(); ++r) {
        displs[r] = static_cast<int>(total);
        total += counts[r];
      }
      BF_CHECK(total <= INT_MAX, "Gather: more than 2 GiB in all");
      all.resize(static_cast<size_t>(total));
    }
    MPI_Gatherv(bytes.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, root,
                MPI_COMM_WORLD);
    std::vector<std::string> parts;
    for (size_t r = 0; r < counts.size(); ++r) {
      parts.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(counts[r])));
    }
    return parts;
  }

  void GatherInto(const void* data, size_t bytes, void* dest, const std::vector<size_t>& sizes,
                  int root) override {
    std::vector<int> counts, displs;
    if (rank_ == root) {
      int64_t total = 0;
      for (size_t s : sizes) {
        displs.push_back(static_cast<int>(total));
        counts.push_back(static_cast<int>(s));
        total += static_cast<int64_t>(s);
      }
      BF_CHECK(total <= INT_MAX, "GatherInto: more than 2 GiB in all");
    }
    MPI_Gatherv(data, static_cast<int>(bytes), MPI_BYTE, dest, counts.data(), displs.data(),
                MPI_BYTE, root, MPI_COMM_WORLD);
  }

  void AllreduceSum(void* data, int64_t count, DType dtype) override {
    const MPI_Datatype type = MpiType(dtype);
    auto* p = static_cast<char*>(data);
    // MPI counts are ints: reduce in chunks of at most 2^30 elements.
    constexpr int64_t kChunk = int64_t{1} << 30;
    for (int64_t done = 0; done < count; done += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, count - done));
      MPI_Allreduce(MPI_IN_PLACE, p + done * static_cast<int64_t>(DTypeSize(dtype)), n, type,
                    MPI_SUM, MPI_COMM_WORLD);
    }
  }

  size_t max_message_bytes() const override { return INT_MAX; }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool HaveMpi() { return true; }

Expected<std::unique_ptr<Communicator>> MakeMpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; kernels' OpenMP threads never do.
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      return Internal("MPI_Init failed");
    }
  }
  return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>());
}

}  // namespace blockflow::cli
