// How a sharded run (`blockflow run --shard`) splits a batch over processes and combines each
// fetched output: the share of each rank, the combine rule of each fetch (from the schemas'
// batch rules, core/batch.h, or --combine), and the combination itself over a Communicator.
//
//   BatchShare s = ShareOf(/*batch=*/10, comm.rank(), comm.size());   // rank 1 of 4: [3, 6)
//   ASSIGN_OR_RETURN(auto plan, PlanCombine(graph, AnalyzeBatch(...), fetches, overrides));
//   CombineResult r = CombineOutputs(comm, plan, std::move(local), /*deterministic=*/false);
#pragma once

#include <string>
#include <vector>

#include "core/batch.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "runtime/args.h"
#include "runtime/shard/communicator.h"

namespace blockflow::cli {

/// The entries [begin, begin + count) of a batch that one rank reads: the batch in rank order,
/// the first batch % size ranks one entry more (ranks past the batch get none).
struct BatchShare {
  int64_t begin = 0;
  int64_t count = 0;
};
BatchShare ShareOf(int64_t batch, int rank, int size);

/// How one fetched output becomes the output of one process.
enum class CombineRule {
  kGather,  // concatenate the ranks' tensors along `axis`, in rank order
  kSum,     // add the ranks' tensors
  kFirst,   // rank 0's tensor
};
/// "gather", "sum", "first".
std::string_view CombineRuleName(CombineRule rule);

struct Combine {
  CombineRule rule = CombineRule::kFirst;
  int axis = 0;  // kGather
};

/// The rule of each fetch: --combine where given, else from its batch value (split → gather,
/// sum over the batch → sum, batch-free → first). Fetches that cannot be decided are errors,
/// one line each, naming the fetch, where and why, and the --combine flag that would decide it.
Expected<std::vector<Combine>> PlanCombine(const Graph& graph, const BatchAnalysis& batch,
                                           const std::vector<std::string>& fetches,
                                           const std::vector<CombineFlag>& overrides);

/// Entries [begin, begin + count) of `t` along `axis`, copied.
Tensor SliceAxis(const Tensor& t, int axis, int64_t begin, int64_t count);
/// The tensors joined along `axis`; every other dimension and the dtype must agree.
Expected<Tensor> ConcatAxis(const std::vector<Tensor>& parts, int axis);

/// What CombineOutputs gives back.
struct CombineResult {
  std::vector<Tensor> outputs;  // on rank 0: one per fetch; elsewhere empty
  Status status;                // this rank's problem, if any
  int failed_rank = -1;         // the lowest rank that failed, or -1
};

/// Combines every fetch over `comm` by `plan`. `local[i]` holds this rank's pieces of fetch i:
/// none on a rank without a share of the batch; one tensor; or, with `deterministic`, one per
/// sample of its share in order (gathers join them; sums add every sample's piece in global
/// sample order, in float64, on rank 0, the same bits for any number of processes).
/// Checks that the ranks' dtypes and shapes agree (rank 0's are the reference) before any data
/// moves, so a mismatch fails every rank instead of hanging one.
CombineResult CombineOutputs(Communicator& comm, const std::vector<Combine>& plan,
                             const std::vector<std::string>& fetches,
                             std::vector<std::vector<Tensor>> local, bool deterministic);

}  // namespace blockflow::cli
