// Allreduce time per MB through blockflow's Communicator (the MPI_Allreduce that a sharded run's
// sums use), for docs/mpi.md. Not a Google Benchmark: every rank must make the same calls.
//
//   mpirun -n 2 build/bin/blockflow_allreduce_bench [REPEAT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/shard/communicator.h"

int main(int argc, char** argv) {
  using blockflow::DType;
  auto comm = blockflow::cli::MakeMpiCommunicator();
  if (!comm.ok()) {
    std::fprintf(stderr, "error: %s\n", comm.status().message().c_str());
    return 1;
  }
  blockflow::cli::Communicator& c = **comm;
  const int repeat = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  if (c.rank() == 0) {
    std::printf("processes %d\n%12s %12s %12s %12s\n", c.size(), "bytes", "us_median", "us_per_MB",
                "GB/s");
  }
  for (size_t bytes : {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{4} << 20,
                       size_t{16} << 20, size_t{64} << 20}) {
    std::vector<float> data(bytes / sizeof(float), 1.0f);
    std::vector<double> us;
    for (int i = 0; i < repeat + 2; ++i) {
      c.LowestFailure(false);  // line the ranks up
      const auto t0 = std::chrono::steady_clock::now();
      c.AllreduceSum(data.data(), static_cast<int64_t>(data.size()), DType::kFloat32);
      const double t =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (i >= 2) us.push_back(t);  // two warm-up calls
    }
    std::sort(us.begin(), us.end());
    const double median = us[us.size() / 2];
    if (c.rank() == 0) {
      std::printf("%12zu %12.1f %12.1f %12.2f\n", bytes, median,
                  median / (static_cast<double>(bytes) / (1 << 20)),
                  static_cast<double>(bytes) / median / 1e3);
    }
  }
  return 0;
}
