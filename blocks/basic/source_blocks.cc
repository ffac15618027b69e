// Blocks that make tensors: Const, Placeholder, Fill, ZerosLike, RandomUniform,
// RandomStandardNormal.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "blocks/basic/basic_blocks.h"
#include "core/file_cache.h"
#include "core/npy.h"
#include "core/paths.h"
#include "core/team.h"

namespace blockflow {
namespace {

// One number of a Const `value`: a JSON number or bool, or "nan", "inf", "-inf" for floats
// (JSON has no spelling for them). Integers must fit the dtype.
Expected<double> ConstValue(const nlohmann::json& v, DType dtype) {
  const std::string type_name(DTypeName(dtype));
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_string() && IsFloatingDType(dtype)) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  if (!v.is_number()) {
    return InvalidArgument(
        "attr 'value' must hold numbers" +
        std::string(IsFloatingDType(dtype) ? " (or \"nan\", \"inf\", \"-inf\")" : "") + ", got " +
        v.dump());
  }
  if (IsFloatingDType(dtype) || dtype == DType::kBool) return v.get<double>();
  if (!v.is_number_integer()) {
    return InvalidArgument("attr 'value' holds " + v.dump() +
                           ", which is not an integer, for dtype " + type_name);
  }
  const bool fits =
      dtype == DType::kInt32
          ? (v.is_number_unsigned()
                 ? v.get<uint64_t>() <= INT32_MAX
                 : v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX)
          : (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
  if (!fits)
    return InvalidArgument("attr 'value' holds " + v.dump() + ", which is out of range for " +
                           type_name);
  return v.get<double>();
}

// Const: the tensor from `value` (flat row-major list, or one number filling `shape`) or `file`
// (.npy).
constexpr int64_t kMaxInferredConstElements = 1 << 16;

// A Const's dtype and shape without building its value: the .npy header only, or the
// `value` list checked number by number. Errors are the ones MakeConst would give.
Expected<PortInfo> ConstShape(const AttrMap& attrs, const std::string& base_dir) {
  const DType dtype = attrs.GetDType("dtype");
  const bool has_value = attrs.Has("value"), has_file = attrs.Has("file");
  if (has_value == has_file) return InvalidArgument("give exactly one of attrs 'value' and 'file'");
  Shape shape;
  if (has_file) {
    ASSIGN_OR_RETURN(auto info,
                     ReadNpyInfo(ResolveGraphPath(base_dir, attrs.GetString("file")), dtype));
    shape = info.second;
    if (attrs.Has("shape") && attrs.GetShape("shape") != shape) {
      return InvalidArgument("attr 'shape' " + attrs.GetShape("shape").ToString() +
                             " differs from the shape " + shape.ToString() + " in '" +
                             attrs.GetString("file") + "'");
    }
  } else {
    const nlohmann::json& value = attrs.Get("value");
    const size_t count = value.is_array() ? value.size() : 1;
    shape = attrs.Has("shape") ? attrs.GetShape("shape")
                               : (value.is_array() ? Shape{static_cast<int64_t>(count)} : Shape{});
    if (!shape.IsFullyDefined())
      return InvalidArgument("attr 'shape' " + shape.ToString() + " must not contain -1");
    if (value.is_array() && static_cast<int64_t>(count) != shape.num_elements()) {
      return InvalidArgument("attr 'value' has " + std::to_string(count) + " numbers but shape " +
                             shape.ToString() + " needs " + std::to_string(shape.num_elements()));
    }
    if (value.is_array()) {
      for (const nlohmann::json& v : value) RETURN_IF_ERROR(ConstValue(v, dtype).status());
    } else {
      RETURN_IF_ERROR(ConstValue(value, dtype).status());
    }
  }
  RETURN_IF_ERROR(CheckAllocatable(dtype, shape));
  return PortInfo{dtype, shape, nullptr};
}

Expected<Tensor> MakeConst(const AttrMap& attrs, const std::string& base_dir,
                           TensorFileCache* file_cache = nullptr) {
  const DType dtype = attrs.GetDType("dtype");
  const bool has_value = attrs.Has("value"), has_file = attrs.Has("file");
  if (has_value == has_file) return InvalidArgument("give exactly one of attrs 'value' and 'file'");
  if (has_file) {
    const std::string path = ResolveGraphPath(base_dir, attrs.GetString("file"));
    ASSIGN_OR_RETURN(Tensor t, file_cache ? file_cache->Load(path, dtype) : ReadNpy(path, dtype));
    if (attrs.Has("shape") && attrs.GetShape("shape") != t.shape()) {
      return InvalidArgument("attr 'shape' " + attrs.GetShape("shape").ToString() +
                             " differs from the shape " + t.shape().ToString() + " in '" +
                             attrs.GetString("file") + "'");
    }
    return t;
  }
  const nlohmann::json& value = attrs.Get("value");
  std::vector<nlohmann::json> items;
  if (value.is_array()) {
    items.assign(value.begin(), value.end());
  } else {
    items.push_back(value);
  }
  Shape shape = attrs.Has("shape")
                    ? attrs.GetShape("shape")
                    : (value.is_array() ? Shape{static_cast<int64_t>(items.size())} : Shape{});
  if (!shape.IsFullyDefined())
    return InvalidArgument("attr 'shape' " + shape.ToString() + " must not contain -1");
  const bool fill = !value.is_array();
  if (!fill && static_cast<int64_t>(items.size()) != shape.num_elements()) {
    return InvalidArgument("attr 'value' has " + std::to_string(items.size()) +
                           " numbers but shape " + shape.ToString() + " needs " +
                           std::to_string(shape.num_elements()));
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  for (size_t k = 0; k < items.size(); ++k) {
    ASSIGN_OR_RETURN(double d, ConstValue(items[k], dtype));
    if (fill) {
      for (int64_t i = 0; i < t.num_elements(); ++i) t.SetFromDouble(i, d);
    } else if (dtype == DType::kInt64 && items[k].is_number_integer()) {
      t.data<int64_t>()[k] = items[k].get<int64_t>();  // exact beyond 2^53
    } else {
      t.SetFromDouble(static_cast<int64_t>(k), d);
    }
  }
  if (fill && dtype == DType::kInt64 && value.is_number_integer()) {
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<int64_t>()[i] = value.get<int64_t>();
  }
  return t;
}

// A counter-based generator: value i depends only on (seed, seed2, i), so every run and
// thread count gives the same tensor.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double UniformAt(uint64_t key, uint64_t i) {
  return static_cast<double>(Mix(key ^ Mix(i)) >> 11) * 0x1.0p-53;
}

Status RandomShapeFn(InferContext& c) {
  const DType dtype = c.attrs().GetDType("dtype");
  if (!IsFloatingDType(dtype))
    return InvalidArgument("attr 'dtype' must be a floating type, got " +
                           std::string(DTypeName(dtype)));
  const PortInfo& shape = c.input(0);
  if (!shape.value) {
    const int64_t rank = shape.shape.rank() == 1 ? shape.shape.dim(0) : -1;
    if (rank < 0) return InvalidArgument("input 'shape' must be a 1-D tensor of known length");
    c.SetOutput(0, dtype, Shape(std::vector<int64_t>(static_cast<size_t>(rank), -1)));
    return Status::OK();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ConstIntVector(shape, "shape"));
  for (int64_t d : dims) {
    if (d < 0)
      return InvalidArgument("input 'shape' must not be negative, got " + IntsToString(dims));
  }
  c.SetOutput(0, dtype, Shape(dims));
  return Status::OK();
}

// Bits of precision below 1.0 for each floating dtype.
int MantissaBits(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 11;
    case DType::kBFloat16:
      return 8;
    case DType::kFloat32:
      return 24;
    default:
      return 53;
  }
}

KernelFn RandomKernel(bool normal) {
  return [normal](KernelContext& k) {
    Tensor& out = k.AllocateOutput(0);
    const uint64_t key =
        Mix(static_cast<uint64_t>(k.attrs->GetInt("seed"))) ^
        Mix(static_cast<uint64_t>(k.attrs->GetInt("seed2")) + 0x632be59bd9b4e019ull);
    // Uniform values lie on the grid j / 2^p (p the dtype's precision): exact in the dtype,
    // evenly spread, and never 1.0 (TensorFlow's range is [0, 1)).
    const double grid = std::ldexp(1.0, MantissaBits(out.dtype()));
    const int64_t n = out.num_elements();
    // Every value depends on its index alone, so chunks run in parallel with the same result.
    constexpr int64_t kChunk = 1 << 16;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    DispatchFloat(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = out.data<T>();
      // A team (core/team.h) of at most one thread a chunk: a small tensor stays on the caller.
      RunTeam(static_cast<int>(std::clamp<int64_t>(chunks, 1, std::max(k.num_threads, 1))), [&] {
        const auto [c0, c1] = TeamShare(chunks);
        for (int64_t c = c0; c < c1; ++c) {
          if (k.cancelled()) return;
          const int64_t end = std::min(n, (c + 1) * kChunk);
          for (int64_t i = c * kChunk; i < end; ++i) {
            double v;
            if (normal) {
              // Box–Muller on two uniforms drawn for this index alone.
              const double u1 = 1.0 - UniformAt(key, 2 * static_cast<uint64_t>(i));  // (0, 1]
              const double u2 = UniformAt(key, 2 * static_cast<uint64_t>(i) + 1);
              v = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
            } else {
              v = std::floor(UniformAt(key, static_cast<uint64_t>(i)) * grid) / grid;
            }
            p[i] = static_cast<T>(v);
          }
        }
      });
    });
    if (k.cancelled()) return Cancelled();
    return Status::OK();
  };
}

}  // namespace

void RegisterSourceBlocks(OpRegistry& registry) {
  registry.Register(OpSchema("Const")
                        .Category("Basic")
                        .Doc("A constant tensor: `value` (a flat row-major list, or one number "
                             "filling `shape`) or `file` "
                             "(a .npy file, relative to the graph file).")
                        .Output("output", AllDTypes(), "The constant.")
                        .RequiredAttr("dtype", AttrType::kDType, "Element type.")
                        .Attr("shape", AttrType::kShape, nullptr,
                              "Shape; optional with `file` or a list `value`.")
                        .Attr("value", AttrType::kAny, nullptr,
                              "Numbers, row-major; or a single number that fills `shape`.")
                        .Attr("file", AttrType::kString, nullptr,
                              "A .npy file relative to the graph file (bfloat16 as '<u2' bits).")
                        .FileKind(FileKind::kNpy, /*alternative_to=*/"value")
                        .SetShapeFn([](InferContext& c) {
                          // Small constants are built now (sizes that shape functions read,
                          // values the editor shows); large ones only when the graph runs,
                          // so that an edit never waits for a big .npy.
                          ASSIGN_OR_RETURN(PortInfo info, ConstShape(c.attrs(), c.base_dir()));
                          if (info.shape.num_elements() <= kMaxInferredConstElements) {
                            ASSIGN_OR_RETURN(Tensor t, MakeConst(c.attrs(), c.base_dir()));
                            info.value = std::make_shared<const Tensor>(std::move(t));
                          }
                          c.SetOutput(0, std::move(info));
                          return Status::OK();
                        })
                        .SetReferenceKernel([](KernelContext& k) {
                          return k.SetOutput(MakeConst(*k.attrs, k.base_dir, k.file_cache));
                        }));

  registry.Register(
      OpSchema("Placeholder")
          .Category("Basic")
          .Doc("A tensor fed at run time (`blockflow run --feed ID=FILE.npy`).")
          .Output("output", AllDTypes(), "The fed tensor.")
          .FedFrom(FileKind::kNpy)
          .RequiredAttr("dtype", AttrType::kDType, "Element type of the fed tensor.")
          .RequiredAttr("shape", AttrType::kShape, "Shape of the fed tensor; -1 for any size.")
          .SetShapeFn([](InferContext& c) {
            const DType dtype = c.attrs().GetDType("dtype");
            const Shape shape = c.attrs().GetShape("shape");
            if (const Tensor* feed = c.feed()) {
              if (feed->dtype() != dtype) {
                return InvalidArgument("fed a " + std::string(DTypeName(feed->dtype())) +
                                       " tensor, but dtype is " + std::string(DTypeName(dtype)));
              }
              if (!shape.IsCompatibleWith(feed->shape())) {
                return InvalidArgument("fed shape " + feed->shape().ToString() +
                                       " does not match shape " + shape.ToString());
              }
              c.SetOutput(0, PortInfo{dtype, feed->shape(), std::make_shared<const Tensor>(*feed),
                                      /*from_feed=*/true});
              return Status::OK();
            }
            c.SetOutput(0, dtype, shape);
            return Status::OK();
          })
          .SetReferenceKernel([](KernelContext&) { return InvalidArgument("no value was fed"); }));

  registry.Register(
      OpSchema("Fill")
          .Category("Basic")
          .Doc("A tensor of shape `dims` filled with the scalar `value`.")
          .Input("dims", IndexDTypes(), "1-D output shape.")
          .Input("value", NumericDTypes(), "0-D value to fill with.")
          .Output("output", NumericDTypes(), "The filled tensor.")
          .Batch(BatchRule::Fn([](const BatchContext& c) {
            // Filled to the shape of a split tensor: split the same way.
            const BatchValue& dims = c.batch[0];
            if (c.batch[1].kind != BatchKind::kFree)
              return c.Undecided("input 'value' depends on the batch");
            if (dims.kind == BatchKind::kBatchShape) return BatchValue::Carries(dims.axis);
            return dims.kind == BatchKind::kFree ? dims : c.Undecided("input 'dims' is data");
          }))
          .SetShapeFn([](InferContext& c) {
            if (c.input(1).shape.rank() != 0) {
              return InvalidArgument("input 'value' must be a scalar, got shape " +
                                     c.input(1).shape.ToString());
            }
            const PortInfo& dims = c.input(0);
            if (!dims.value) return SetOutputOfUnknownSizes(c, 0, "dims", c.input(1).dtype);
            ASSIGN_OR_RETURN(std::vector<int64_t> d, ConstIntVector(dims, "dims"));
            for (int64_t v : d) {
              if (v < 0)
                return InvalidArgument("input 'dims' must not be negative, got " + IntsToString(d));
            }
            c.SetOutput(0, c.input(1).dtype, Shape(d));
            return Status::OK();
          })
          .SetReferenceKernel([](KernelContext& k) {
            Tensor& out = k.AllocateOutput(0);
            const size_t size = DTypeSize(out.dtype());
            const auto* v = static_cast<const std::byte*>(k.input(1).raw());
            auto* p = static_cast<std::byte*>(out.raw());
            for (int64_t i = 0; i < out.num_elements(); ++i) std::memcpy(p + i * size, v, size);
            return Status::OK();
          }));

  registry.Register(OpSchema("ZerosLike")
                        .Category("Basic")
                        .Doc("Zeros with the dtype and shape of `x`.")
                        .Input("x", AllDTypes(), "Any tensor.")
                        .Output("y", AllDTypes(), "Zeros shaped like x.")
                        .Batch(BatchRule::Fn([](const BatchContext& c) {
                          // Zeros are zeros on every process; only a split shape stays split.
                          const BatchValue& x = c.batch[0];
                          return x.kind == BatchKind::kCarries || x.kind == BatchKind::kUndecided
                                     ? x
                                     : BatchValue::Free();
                        }))
                        .SetShapeFn([](InferContext& c) {
                          c.SetOutput(0, c.input(0).dtype, c.input(0).shape);
                          return Status::OK();
                        })
                        .SetReferenceKernel([](KernelContext& k) {
                          k.AllocateOutput(0);  // zero-filled
                          return Status::OK();
                        }));

  for (bool normal : {false, true}) {
    registry.Register(
        OpSchema(normal ? "RandomStandardNormal" : "RandomUniform")
            .Category("Random")
            .Doc(normal ? "Normal(0, 1) values. Deterministic: the same (seed, seed2) give the "
                          "same tensor on every "
                          "run and thread count."
                        : "Uniform values in [0, 1). Deterministic: the same (seed, seed2) give "
                          "the same tensor on "
                          "every run and thread count.")
            .Input("shape", IndexDTypes(), "1-D output shape.")
            .Output("output", FloatDTypes(), "The random tensor.")
            .Attr("dtype", AttrType::kDType, "float32", "Output type (a floating type).")
            .Attr("seed", AttrType::kInt, 0, "Seed.")
            .Attr("seed2", AttrType::kInt, 0, "Second seed.")
            .SetShapeFn(RandomShapeFn)
            .SetReferenceKernel(RandomKernel(normal)));
  }
}

}  // namespace blockflow
