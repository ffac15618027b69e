// NumPy .npy files (format 1.0/2.0 read, 1.0 written; little-endian, C order).
//
//   ASSIGN_OR_RETURN(Tensor w, ReadNpy("w.npy"));
//   ASSIGN_OR_RETURN(Tensor b, ReadNpy("b.npy", DType::kBFloat16));  // '<u2' read as bfloat16 bits
//   RETURN_IF_ERROR(WriteNpy("out/dx.npy", dx));  // atomic: temp file then rename
#pragma once

#include <string>
#include <utility>

#include "core/tensor.h"

namespace blockflow {

/// Reads a .npy file. bfloat16 is stored as '<u2' raw bits: pass `expected_dtype`
/// kBFloat16 to read a '<u2' file as bfloat16 (otherwise '<u2' is an error, as
/// blockflow has no uint16). Errors name the file and what is wrong.
Expected<Tensor> ReadNpy(const std::string& path, DType expected_dtype = DType::kInvalid);
/// Reads only the header of a .npy file: its dtype and shape, checked against the file's
/// size. Cheap for large files (shape inference uses it).
Expected<std::pair<DType, Shape>> ReadNpyInfo(const std::string& path,
                                              DType expected_dtype = DType::kInvalid);
/// Reads `count` entries from `begin` along `axis` of a .npy file, and no more of it than that:
/// the header, then the slice's bytes (one read along axis 0; for another axis, one piece per
/// index of the axes before it, or blocks of them when the pieces are small). C order only;
/// errors name the file and the range.
Expected<Tensor> ReadNpySlice(const std::string& path, int axis, int64_t begin, int64_t count,
                              DType expected_dtype = DType::kInvalid);
/// Parses .npy bytes; `origin` names the source in error messages.
Expected<Tensor> ParseNpy(const std::string& bytes, const std::string& origin,
                          DType expected_dtype = DType::kInvalid);
/// Serialises a tensor to .npy bytes (bfloat16 as '<u2').
std::string SerializeNpy(const Tensor& tensor);

/// The `.npy` descr of `dtype` ('<f4', '<u2' for bfloat16, '|b1'); "" for kInvalid.
std::string NpyDescr(DType dtype);
/// The part of SerializeNpy before the tensor's raw bytes: magic, version, length and the
/// header padded to 64 bytes (for writers that send the data from the tensor itself).
std::string NpyHeaderBytes(const Tensor& tensor);
/// Writes a .npy file atomically (temp file in the same folder, then rename);
/// creates missing parent folders.
Status WriteNpy(const std::string& path, const Tensor& tensor);

/// Writes `contents` to `path` atomically; creates missing parent folders.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
/// Reads a whole file; errors name the file.
Expected<std::string> ReadFile(const std::string& path);

}  // namespace blockflow
