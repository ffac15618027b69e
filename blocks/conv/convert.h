// Runs of 16-bit floats widened to float and floats rounded to them: the convolution kernels'
// operand conversions (not part of the public API). A vector at a time where the CPU allows
// (F16C's vcvtph2ps and vcvtps2ph for IEEE half, integer shifts and adds for bfloat16), bit for
// bit what Half and BFloat16 give one value at a time, NaNs included; those convert through
// out-of-line functions with a branch per case, about 4 ns a value, which made a float16
// convolution several times slower than its kernel.
//
//   WidenRun(halves, floats, n);    // floats[i] = float(halves[i]), exact
//   NarrowRun(floats, halves, n);   // halves[i] = Half(floats[i]), to nearest even
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace blockflow::conv::internal {

void WidenRun(const Half* src, float* dst, int64_t n);
void WidenRun(const BFloat16* src, float* dst, int64_t n);
void NarrowRun(const float* src, Half* dst, int64_t n);
void NarrowRun(const float* src, BFloat16* dst, int64_t n);

}  // namespace blockflow::conv::internal
