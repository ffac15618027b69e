// The runners behind RunConv: RunKernels for the reference kernels, and RunGuarded under the
// optimized kernel sets' RunOptimizedKernels (optimized_util.h); not part of the public API.
#pragma once

#include <new>
#include <string>

#include "blocks/conv/conv_kernels.h"

namespace blockflow::conv::internal {

/// Calls `run(T{})` with T the operands' dtype; a failed allocation of the kernel's work
/// buffers becomes an error Status, so that nothing throws out of a block.
template <typename Run>
Status RunGuarded(const ConvState& s, const Tensor& a, Run&& run) {
  try {
    DispatchFloat(a.dtype(), run);
  } catch (const std::bad_alloc&) {
    return Internal(std::string(ConvOpName(s.op, s.geometry.depthwise)) +
                    ": out of memory for the kernel's work buffers");
  }
  return Status::OK();
}

/// Calls `Kernels<T>::Forward`, `BackpropInput` or `BackpropFilter` (by `s.op`), each taking
/// (state, a, b, out, k), with T the operands' dtype. Static: each kernel file's instantiation
/// stays local to it, so GCC keeps the row kernels it calls in plain .text (not in a COMDAT
/// group of their own), laid out as before.
template <template <typename> class Kernels>
static Status RunKernels(const ConvState& s, const Tensor& a, const Tensor& b, Tensor* out,
                         const KernelContext& k) {
  return RunGuarded(s, a, [&](auto tag) {
    using K = Kernels<decltype(tag)>;
    switch (s.op) {
      case ConvOp::kForward:
        return K::Forward(s, a, b, out, k);
      case ConvOp::kBackpropInput:
        return K::BackpropInput(s, a, b, out, k);
      case ConvOp::kBackpropFilter:
        return K::BackpropFilter(s, a, b, out, k);
    }
  });
}

}  // namespace blockflow::conv::internal
