// Resource limits: what a graph file or a feed may ask for, checked before anything is
// allocated, so that a hostile or mistaken file gets a clear error instead of exhausting memory.
//
//   Graph g = ...;
//   g.memory_limit = *ParseByteSize("2G");          // as `blockflow run --memory-limit 2G`
//   GraphAnalysis a = AnalyzeGraph(g);              // an output above 2 GiB is an issue
//   RETURN_IF_ERROR(CheckTensorFits("feed 'x.npy'", DType::kFloat32, Shape{1 << 20}, 0));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/status.h"

namespace blockflow {

/// Largest graph JSON file read (64 MiB): its parsed form takes several times its size.
/// Large tensors belong in `.npy` files that a Const names with `file`.
constexpr size_t kMaxGraphJsonBytes = size_t{64} << 20;
/// Most nodes a graph may have (large imported TensorFlow graphs have tens of thousands).
constexpr size_t kMaxGraphNodes = 200000;
/// Deepest nesting of JSON values in a graph file.
constexpr int kMaxGraphJsonDepth = 128;
/// Largest `.npy` header read: the most a version 1.0 header can hold (its length has two
/// bytes), applied to versions 2 and 3 too. NumPy's own headers are a few hundred bytes.
constexpr size_t kMaxNpyHeaderBytes = 65535;

/// Physical memory this process may use: the machine's RAM, or its control group's limit
/// (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`) when that is lower.
uint64_t UsableMemory();
/// The memory limit when none is given: half of UsableMemory(). A run needs room besides its
/// tensors (the system, kernels' scratch, the buffer pool's cache, the editor), and a graph
/// needing more than half of memory would push the machine into swap or the OOM killer.
uint64_t DefaultMemoryLimit();
/// `limit`, or DefaultMemoryLimit() when `limit` is 0.
uint64_t EffectiveMemoryLimit(uint64_t limit);
/// Parses a byte count: digits with an optional suffix K, M or G (binary: K = 1024), such as
/// "1048576", "512K", "64M", "2G"; lower-case suffixes and a trailing "B" ("64MB") are
/// accepted. Errors say what is wrong; zero is refused.
Expected<uint64_t> ParseByteSize(const std::string& text);
/// "12345 bytes" below 10 KiB, else one decimal in KiB, MiB, GiB or TiB ("1.5 GiB").
std::string FormatBytes(long double bytes);
/// Bytes a tensor of this dtype and shape takes (no overflow: long double); -1 when the shape
/// is not fully defined.
long double TensorBytes(DType dtype, const Shape& shape);
/// How the memory limit is described in messages: "the memory limit of 2.0 GiB (...)", naming
/// every client's way to change it.
std::string MemoryLimitText(uint64_t limit);
/// OK when a tensor of `dtype` and `shape` fits the memory limit (`limit` 0: the default), or
/// when its shape is not yet known; otherwise "WHAT is float32[...] (SIZE), more than the
/// memory limit of ...".
Status CheckTensorFits(const std::string& what, DType dtype, const Shape& shape, uint64_t limit);

}  // namespace blockflow
