#include "runtime/shard/combine.h"

#include <cstring>
#include <optional>
#include <sstream>

#include "core/text.h"
#include "runtime/output_files.h"

namespace blockflow::cli {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= dims[d];
  return p;
}

// "float32 2 3 4": dtype, rank, dims.
std::string MetaOf(const Tensor& t) {
  std::string s(DTypeName(t.dtype()));
  s += " " + std::to_string(t.shape().rank());
  for (int64_t d : t.shape().dims()) s += " " + std::to_string(d);
  return s + "\n";
}

struct Meta {
  DType dtype = DType::kInvalid;
  Shape shape;
};

std::vector<Meta> ParseMeta(const std::string& text) {
  std::vector<Meta> metas;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string dtype;
    int rank = 0;
    l >> dtype >> rank;
    std::vector<int64_t> dims(static_cast<size_t>(std::max(rank, 0)));
    for (int64_t& d : dims) l >> d;
    Meta m;
    m.dtype = ParseDType(dtype).value_or(DType::kInvalid);
    m.shape = Shape(dims);
    metas.push_back(std::move(m));
  }
  return metas;
}

bool IsHalf(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }

}  // namespace

BatchShare ShareOf(int64_t batch, int rank, int size) {
  const int64_t base = batch / size, extra = batch % size;
  return {rank * base + std::min<int64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

std::string_view CombineRuleName(CombineRule rule) {
  static constexpr EnumName<CombineRule> kNames[] = {
      {CombineRule::kGather, "gather"}, {CombineRule::kSum, "sum"}, {CombineRule::kFirst, "first"}};
  return NameIn(kNames, rule, "?");
}

Expected<std::vector<Combine>> PlanCombine(const Graph& graph, const BatchAnalysis& batch,
                                           const std::vector<std::string>& fetches,
                                           const std::vector<CombineFlag>& overrides) {
  std::vector<Combine> plan;
  std::vector<std::string> errors;
  for (const CombineFlag& o : overrides) {
    bool found = false;
    for (const std::string& f : fetches) {
      found = found || *Endpoint::Parse(f) == *Endpoint::Parse(o.fetch);
    }
    if (!found) {
      errors.push_back("--combine " + o.fetch + "=" + o.rule + ": '" + o.fetch +
                       "' is not fetched (fetched: " + JoinNames(fetches) + ")");
    }
  }
  for (const std::string& f : fetches) {
    const Endpoint ep = *Endpoint::Parse(f);
    const BatchValue v = batch.Output(graph, ep.node, ep.index);
    std::optional<std::string> given;
    for (const CombineFlag& o : overrides) {
      if (*Endpoint::Parse(o.fetch) == ep) given = o.rule;
    }
    Combine c;
    if (given) {
      c.rule = *given == "gather" ? CombineRule::kGather
               : *given == "sum"  ? CombineRule::kSum
                                  : CombineRule::kFirst;
      c.axis = v.kind == BatchKind::kCarries ? v.axis : 0;
    } else if (v.kind == BatchKind::kCarries) {
      c = {CombineRule::kGather, v.axis};
    } else if (v.kind == BatchKind::kSums) {
      c.rule = CombineRule::kSum;
    } else if (v.kind == BatchKind::kFree) {
      c.rule = CombineRule::kFirst;
    } else {
      const std::string who = NodeName(graph, ep.node) + ": ";
      std::string why = v.why;
      if (v.kind == BatchKind::kBatchShape) {
        why = "it is the shape of a split tensor, which differs from process to process";
      } else if (why.rfind(who, 0) == 0) {
        why = "it " + why.substr(who.size());  // decided here: "it adds ..."
      } else {
        why = "upstream, " + why;
      }
      errors.push_back(who + "fetched, but the blocks' batch rules cannot tell how to combine " +
                       f + " over the processes: " + why +
                       ". Fetch a value from before that point, or, if you know how it combines, "
                       "pass --combine " +
                       f + "=gather|sum|first");
      continue;
    }
    plan.push_back(c);
  }
  if (!errors.empty()) return InvalidArgument(JoinLines(errors));
  return plan;
}

Tensor SliceAxis(const Tensor& t, int axis, int64_t begin, int64_t count) {
  std::vector<int64_t> dims = t.shape().dims();
  const size_t a = static_cast<size_t>(axis);
  BF_CHECK(a < dims.size() && begin >= 0 && begin + count <= dims[a], "SliceAxis out of range");
  const int64_t outer = Product(dims, 0, a), extent = dims[a];
  const size_t inner =
      static_cast<size_t>(Product(dims, a + 1, dims.size())) * DTypeSize(t.dtype());
  dims[a] = count;
  Tensor out = Tensor::Uninitialized(t.dtype(), Shape(dims));
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  const size_t piece = static_cast<size_t>(count) * inner;
  for (int64_t o = 0; o < outer && piece > 0; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * piece,
                src + (static_cast<size_t>(o * extent + begin)) * inner, piece);
  }
  return out;
}

Expected<Tensor> ConcatAxis(const std::vector<Tensor>& parts, int axis) {
  BF_CHECK(!parts.empty(), "ConcatAxis of nothing");
  std::vector<int64_t> dims = parts[0].shape().dims();
  const size_t a = static_cast<size_t>(axis);
  if (a >= dims.size()) {
    return InvalidArgument("cannot join tensors of shape " + parts[0].shape().ToString() +
                           " along axis " + std::to_string(axis));
  }
  int64_t total = 0;
  for (const Tensor& p : parts) {
    std::vector<int64_t> d = p.shape().dims();
    if (p.dtype() != parts[0].dtype() || d.size() != dims.size()) {
      return InvalidArgument("cannot join " + p.DebugString() + " to " + parts[0].DebugString());
    }
    total += d[a];
    d[a] = dims[a];
    if (d != dims) {
      return InvalidArgument("cannot join " + p.DebugString() + " to " + parts[0].DebugString() +
                             " along axis " + std::to_string(axis));
    }
  }
  const int64_t outer = Product(dims, 0, a);
  const size_t inner =
      static_cast<size_t>(Product(dims, a + 1, dims.size())) * DTypeSize(parts[0].dtype());
  dims[a] = total;
  RETURN_IF_ERROR(CheckAllocatable(parts[0].dtype(), Shape(dims)));
  Tensor out = Tensor::Uninitialized(parts[0].dtype(), Shape(dims));  // every byte is copied in
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& p : parts) {
      const size_t piece = static_cast<size_t>(p.shape().dim(axis)) * inner;
      if (piece == 0) continue;
      std::memcpy(dst, static_cast<const char*>(p.raw()) + static_cast<size_t>(o) * piece, piece);
      dst += piece;
    }
  }
  return out;
}

CombineResult CombineOutputs(Communicator& comm, const std::vector<Combine>& plan,
                             const std::vector<std::string>& fetches,
                             std::vector<std::vector<Tensor>> local, bool deterministic) {
  CombineResult r;
  const int rank = comm.rank();
  const size_t n = plan.size();
  BF_CHECK(local.size() == n && fetches.size() == n, "CombineOutputs: one entry per fetch");
  auto agree = [&]() {
    r.failed_rank = comm.LowestFailure(!r.status.ok());
    return r.failed_rank < 0;
  };

  // This rank's value of each fetch: its samples' pieces joined, where a gather joins them.
  std::vector<std::optional<Tensor>> mine(n);
  for (size_t i = 0; i < n && r.status.ok(); ++i) {
    if (local[i].empty()) continue;
    if (plan[i].rule == CombineRule::kGather && local[i].size() > 1) {
      Expected<Tensor> joined = ConcatAxis(local[i], plan[i].axis);
      if (!joined.ok()) {
        r.status = joined.status().WithPrefix("fetch " + fetches[i] + ": ");
        continue;
      }
      mine[i] = std::move(joined).value();
    } else {
      mine[i] = local[i][0];
    }
  }
  if (rank == 0) {
    for (size_t i = 0; i < n && r.status.ok(); ++i) {
      if (!mine[i]) r.status = Internal("rank 0 has no value of fetch " + fetches[i]);
    }
  }
  if (!agree()) return r;

  // Rank 0's dtypes and shapes are the reference; every rank checks its own against them.
  std::string meta;
  if (rank == 0) {
    for (size_t i = 0; i < n; ++i) meta += MetaOf(*mine[i]);
  }
  comm.Broadcast(&meta, 0);
  const std::vector<Meta> metas = ParseMeta(meta);
  std::vector<std::string> errors;
  if (metas.size() != n) errors.push_back("the processes disagree on the fetches");
  for (size_t i = 0; i < n && errors.empty(); ++i) {
    const Meta& m = metas[i];
    const std::string who = "fetch " + fetches[i] + " on rank " + std::to_string(rank) + ": ";
    if (plan[i].rule == CombineRule::kSum && m.dtype == DType::kBool) {
      errors.push_back(who + "bool tensors cannot be summed over processes");
    }
    if (plan[i].rule == CombineRule::kGather && plan[i].axis >= m.shape.rank()) {
      errors.push_back(who + "cannot gather along axis " + std::to_string(plan[i].axis) +
                       " of a tensor of shape " + m.shape.ToString());
    }
    if (!mine[i] || plan[i].rule == CombineRule::kFirst) continue;
    const Tensor& t = *mine[i];
    std::vector<int64_t> have = t.shape().dims(), want = m.shape.dims();
    if (plan[i].rule == CombineRule::kGather && have.size() == want.size() &&
        static_cast<size_t>(plan[i].axis) < have.size()) {
      have[static_cast<size_t>(plan[i].axis)] = want[static_cast<size_t>(plan[i].axis)];
    }
    for (const Tensor& piece : local[i]) {
      if (plan[i].rule == CombineRule::kSum && piece.shape() != m.shape) have.clear();
    }
    if (t.dtype() != m.dtype || have != want) {
      errors.push_back(who + t.DebugString() + " does not fit rank 0's " +
                       std::string(DTypeName(m.dtype)) + m.shape.ToString() + " (" +
                       std::string(CombineRuleName(plan[i].rule)) + ")");
    }
    size_t bytes = t.num_bytes() + 8;
    if (plan[i].rule == CombineRule::kSum && deterministic) bytes = t.num_bytes() * local[i].size();
    if (bytes > comm.max_message_bytes()) {
      errors.push_back(who + "is " + std::to_string(bytes) +
                       " bytes, more than one message between processes can hold");
    }
  }
  if (!errors.empty()) r.status = InvalidArgument(JoinLines(errors));
  if (!agree()) return r;

  r.outputs.resize(rank == 0 ? n : 0);
  for (size_t i = 0; i < n; ++i) {
    const Meta& m = metas[i];
    switch (plan[i].rule) {
      case CombineRule::kFirst:
        if (rank == 0) r.outputs[i] = *mine[i];
        break;
      case CombineRule::kSum:
        if (!deterministic) {
          // Half types add in float32 and round once at the end.
          Tensor sum = mine[i] ? mine[i]->Clone() : Tensor(m.dtype, m.shape);
          if (IsHalf(m.dtype)) sum = sum.CastTo(DType::kFloat32);
          comm.AllreduceSum(sum.raw(), sum.num_elements(), sum.dtype());
          if (rank == 0) r.outputs[i] = IsHalf(m.dtype) ? sum.CastTo(m.dtype) : sum;
        } else {
          // Every sample's piece, in global sample order, added in float64 on rank 0.
          std::string bytes;
          for (const Tensor& piece : local[i]) {
            bytes.append(static_cast<const char*>(piece.raw()), piece.num_bytes());
          }
          std::vector<std::string> parts = comm.Gather(bytes, 0);
          if (rank != 0) break;
          // One scratch tensor reads each sample's piece in turn.
          Tensor piece = Tensor::Uninitialized(m.dtype, m.shape);
          const size_t piece_bytes = piece.num_bytes();
          std::vector<double> acc(static_cast<size_t>(piece.num_elements()), 0.0);
          for (const std::string& part : parts) {
            for (size_t off = 0; piece_bytes > 0 && off + piece_bytes <= part.size();
                 off += piece_bytes) {
              std::memcpy(piece.raw(), part.data() + off, piece_bytes);
              for (size_t e = 0; e < acc.size(); ++e) {
                acc[e] += piece.GetAsDouble(static_cast<int64_t>(e));
              }
            }
          }
          Tensor sum(m.dtype, m.shape);
          for (size_t e = 0; e < acc.size(); ++e)
            sum.SetFromDouble(static_cast<int64_t>(e), acc[e]);
          r.outputs[i] = std::move(sum);
        }
        break;
      case CombineRule::kGather: {
        // The ranks' entry counts along the axis first, then their bytes straight into the
        // output (axis 0: rank order is the output's order) or into one buffer to interleave.
        const int64_t count = mine[i] ? mine[i]->shape().dim(plan[i].axis) : 0;
        std::vector<std::string> counts =
            comm.Gather(std::string(reinterpret_cast<const char*>(&count), 8), 0);
        std::vector<int64_t> per_rank;
        std::vector<size_t> sizes;
        int64_t total = 0;
        std::vector<int64_t> dims = m.shape.dims();
        const size_t a = static_cast<size_t>(plan[i].axis);
        const size_t slab =
            static_cast<size_t>(Product(dims, 0, a) * Product(dims, a + 1, dims.size())) *
            DTypeSize(m.dtype);  // bytes per entry along the axis
        for (const std::string& c : counts) {
          int64_t v = 0;
          std::memcpy(&v, c.data(), 8);
          per_rank.push_back(v);
          sizes.push_back(static_cast<size_t>(v) * slab);
          total += v;
        }
        // MPI counts and offsets are ints: rank 0 refuses more than that before data moves.
        size_t total_bytes = 0;
        for (size_t b : sizes) total_bytes += b;
        const bool too_big = rank == 0 && total_bytes > comm.max_message_bytes();
        if (comm.LowestFailure(too_big) >= 0) {
          r.failed_rank = 0;
          if (rank == 0) {
            r.status = InvalidArgument("fetch " + fetches[i] + ": gathering " +
                                       std::to_string(total_bytes) +
                                       " bytes to rank 0 is more than one message can hold");
          }
          return r;
        }
        const void* data = mine[i] ? mine[i]->raw() : nullptr;
        const size_t bytes = mine[i] ? mine[i]->num_bytes() : 0;
        if (rank != 0) {
          comm.GatherInto(data, bytes, nullptr, sizes, 0);
          break;
        }
        dims[a] = total;
        Tensor whole = Tensor::Uninitialized(m.dtype, Shape(dims));
        if (a == 0) {
          comm.GatherInto(data, bytes, whole.raw(), sizes, 0);
          r.outputs[i] = std::move(whole);
          break;
        }
        // Along another axis the ranks' pieces arrive one after the other: interleave them
        // into `whole`, each rank's rows of every outer index after the previous ranks' rows.
        Tensor buffer = Tensor::Uninitialized(m.dtype, Shape(dims));
        comm.GatherInto(data, bytes, buffer.raw(), sizes, 0);
        const int64_t outer = Product(dims, 0, a);
        const size_t row =  // bytes of one entry along the axis, for one outer index
            static_cast<size_t>(Product(dims, a + 1, dims.size())) * DTypeSize(m.dtype);
        const char* src = static_cast<const char*>(buffer.raw());
        char* dst = static_cast<char*>(whole.raw());
        int64_t column = 0;  // entries along the axis from the ranks before
        for (int64_t v : per_rank) {
          const size_t piece_row = static_cast<size_t>(v) * row;
          for (int64_t o = 0; o < outer; ++o) {
            std::memcpy(dst + (static_cast<size_t>(o * total + column)) * row, src, piece_row);
            src += piece_row;
          }
          column += v;
        }
        r.outputs[i] = std::move(whole);
        break;
      }
    }
  }
  // Only rank 0 can fail after the data moved (in `status`, failed_rank stays -1): the caller's
  // next agreement tells the others.
  return r;
}

}  // namespace blockflow::cli
