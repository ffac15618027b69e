// The one runner behind RunConv for every kernel set (the reference kernels and each family's
// optimized kernels); not part of the public API.
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

/// Declares a kernel set `Name<T>` for RunKernels, its members defined in the family's file:
/// one function per op, each taking (state, a, b, out, ctx) as ConvOp orders a and b.
#define BF_CONV_KERNEL_SET(Name)                                                           \
  template <typename T>                                                                    \
  struct Name {                                                                            \
    static void Forward(const ConvState& state, const Tensor& input, const Tensor& filter, \
                        Tensor* output, const KernelContext& ctx);                         \
    static void BackpropInput(const ConvState& state, const Tensor& filter,                \
                              const Tensor& out_backprop, Tensor* input_grad,              \
                              const KernelContext& ctx);                                   \
    static void BackpropFilter(const ConvState& state, const Tensor& input,                \
                               const Tensor& out_backprop, Tensor* filter_grad,            \
                               const KernelContext& ctx);                                  \
  }
