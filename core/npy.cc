#include "core/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "core/limits.h"
#include "core/text.h"

namespace blockflow {
namespace fs = std::filesystem;
namespace {

// Finds the value text after `'key':` in a NumPy header dict; empty when absent.
std::string HeaderValue(const std::string& header, const std::string& key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) k = header.find("\"" + key + "\"");
  if (k == std::string::npos) return "";
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return "";
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  if (header[start] == '(') {
    size_t end = header.find(')', start);
    return end == std::string::npos ? "" : header.substr(start, end - start + 1);
  }
  if (header[start] == '\'' || header[start] == '"') {
    size_t end = header.find(header[start], start + 1);
    return end == std::string::npos ? "" : header.substr(start + 1, end - start - 1);
  }
  size_t end = header.find_first_of(",}", start);
  std::string v = header.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

// Everything about a .npy file but its data: `bytes` holds at least the header; the file is
// `file_size` bytes long in all (so a header read alone is checked against the real size).
struct NpyHeader {
  DType dtype = DType::kInvalid;
  Shape shape;
  bool fortran_order = false;
  size_t data_start = 0;
};

Expected<NpyHeader> ParseHeader(const std::string& bytes, size_t file_size,
                                const std::string& origin, DType expected_dtype) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument(origin + ": not a valid .npy file: " + why);
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return bad("missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major));
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return bad("the header is " + std::to_string(header_len) + " bytes long, more than the " +
               std::to_string(kMaxNpyHeaderBytes) + " blockflow reads");
  }
  if (bytes.size() < header_start + header_len) return bad("truncated header");
  const std::string header = bytes.substr(header_start, header_len);

  const std::string descr = HeaderValue(header, "descr");
  const std::string fortran = HeaderValue(header, "fortran_order");
  const std::string shape_text = HeaderValue(header, "shape");
  if (descr.empty() || fortran.empty() || shape_text.empty())
    return bad("header lacks descr, fortran_order or shape");
  if (fortran != "False" && fortran != "True") return bad("fortran_order must be True or False");
  const bool fortran_order = fortran == "True";

  DType dtype = DType::kInvalid;
  for (DType d : AllDTypes()) {
    if (NpyDescr(d) == descr && d != DType::kBFloat16) dtype = d;
  }
  if (descr == "<u2") {
    if (expected_dtype != DType::kBFloat16) {
      return bad(
          "dtype '<u2' (uint16) is only read as bfloat16 raw bits, where bfloat16 is expected");
    }
    dtype = DType::kBFloat16;
  }
  if (descr == "<b1") dtype = DType::kBool;
  if (dtype == DType::kInvalid) {
    return bad("unsupported dtype '" + descr +
               "' (blockflow reads <f2 <f4 <f8 <i4 <i8 |b1, and <u2 as bfloat16; big-endian is not "
               "supported)");
  }

  // A Python tuple of non-negative ints: "()", "(3,)", "(2, 3)"; one trailing comma at most.
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    return bad("bad shape " + shape_text);
  std::vector<int64_t> dims;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  while (!inner.empty() && inner.back() == ' ') inner.pop_back();
  if (!inner.empty() && inner.back() == ',') inner.pop_back();  // "(3,)"
  if (inner.find_first_not_of(' ') != std::string::npos) {
    size_t start = 0;
    while (true) {
      const size_t comma = inner.find(',', start);
      std::string item =
          inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t b = item.find_first_not_of(' ');
      item = b == std::string::npos ? "" : item.substr(b);
      while (!item.empty() && (item.back() == ' ' || item.back() == 'L')) item.pop_back();
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0 || errno == ERANGE)
        return bad("bad shape " + shape_text);
      dims.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  Shape shape(dims);
  // Guard the element count before allocating: the data must be present in full.
  const size_t data_start = header_start + header_len;
  const size_t available = file_size - data_start;
  long double count = 1;
  for (int64_t d : dims) count *= static_cast<long double>(d);
  const long double needed = count * static_cast<long double>(DTypeSize(dtype));
  if (needed != static_cast<long double>(available)) {
    char need_text[64];
    std::snprintf(need_text, sizeof need_text, "%.0Lf", needed);
    return bad("shape " + shape.ToString() + " of " + std::string(DTypeName(dtype)) + " needs " +
               need_text + " data bytes, file has " + std::to_string(available));
  }
  if (expected_dtype != DType::kInvalid && expected_dtype != dtype) {
    return InvalidArgument(origin + ": holds " + std::string(DTypeName(dtype)) + " (" + descr +
                           "), expected " + std::string(DTypeName(expected_dtype)));
  }
  return NpyHeader{dtype, shape, fortran_order, data_start};
}

}  // namespace

Expected<Tensor> ParseNpy(const std::string& bytes, const std::string& origin,
                          DType expected_dtype) {
  ASSIGN_OR_RETURN(NpyHeader h, ParseHeader(bytes, bytes.size(), origin, expected_dtype));
  const DType dtype = h.dtype;
  const Shape& shape = h.shape;
  const std::vector<int64_t>& dims = shape.dims();
  const bool fortran_order = h.fortran_order;
  const size_t data_start = h.data_start;
  const size_t available = bytes.size() - data_start;
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  if (!available) return t;
  if (!fortran_order || shape.rank() < 2) {
    std::memcpy(t.raw(), bytes.data() + data_start, available);
    if (dtype == DType::kBool) {
      // Only 0 and 1 are valid bools; NumPy treats any other byte as true.
      auto* p = static_cast<unsigned char*>(t.raw());
      for (size_t i = 0; i < available; ++i) p[i] = p[i] != 0;
    }
    return t;
  }
  // Fortran (column-major) order, as NumPy writes F-contiguous arrays such as transposes:
  // element (i0, ..., ik) sits at offset i0 + d0 * (i1 + d1 * (...)).
  const size_t size = DTypeSize(dtype);
  const int rank = shape.rank();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0), f_stride(static_cast<size_t>(rank), 1);
  for (int d = 1; d < rank; ++d)
    f_stride[static_cast<size_t>(d)] =
        f_stride[static_cast<size_t>(d) - 1] * dims[static_cast<size_t>(d) - 1];
  auto* dst = static_cast<char*>(t.raw());
  const char* src = bytes.data() + data_start;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d)
      off += index[static_cast<size_t>(d)] * f_stride[static_cast<size_t>(d)];
    std::memcpy(dst + static_cast<size_t>(i) * size, src + static_cast<size_t>(off) * size, size);
    if (dtype == DType::kBool) dst[i] = dst[i] != 0;
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < dims[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  return t;
}

namespace {

// Large C-order data at a 64-byte-aligned offset (NumPy pads its headers so) is mapped rather
// than read: private, so writes to the tensor never reach the file.
constexpr size_t kMapMinBytes = size_t{1} << 20;

Status PreadAll(int fd, char* dst, size_t bytes, off_t offset, const std::string& path) {
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, dst, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError("cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) return IoError("cannot read '" + path + "': the file shrank while being read");
    dst += n;
    bytes -= static_cast<size_t>(n);
    offset += n;
  }
  return Status::OK();
}

// An open .npy file whose header has been read and checked; the file closes with it.
class NpyFile {
 public:
  static Expected<NpyFile> Open(const std::string& path, DType expected_dtype) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return IoError("cannot read '" + path + "': it is a folder");
    NpyFile f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (f.fd_ < 0 || ::fstat(f.fd_, &st) != 0) {
      return IoError("cannot read '" + path + "': " + std::strerror(errno));
    }
    f.size_ = static_cast<size_t>(st.st_size);
    // The magic, version and length (12 bytes at most), then a header of bounded length.
    std::string prefix(std::min(f.size_, kMaxNpyHeaderBytes + 12), '\0');
    RETURN_IF_ERROR(PreadAll(f.fd_, prefix.data(), prefix.size(), 0, path));
    ASSIGN_OR_RETURN(f.header_, ParseHeader(prefix, f.size_, path, expected_dtype));
    return f;
  }
  NpyFile(NpyFile&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), size_(o.size_), header_(std::move(o.header_)) {}
  NpyFile& operator=(NpyFile&&) = delete;
  ~NpyFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  int fd() const { return fd_; }
  size_t size() const { return size_; }
  const NpyHeader& header() const { return header_; }

 private:
  explicit NpyFile(int fd) : fd_(fd) {}
  int fd_;
  size_t size_ = 0;
  NpyHeader header_;
};

}  // namespace

Expected<std::pair<DType, Shape>> ReadNpyInfo(const std::string& path, DType expected_dtype) {
  ASSIGN_OR_RETURN(NpyFile f, NpyFile::Open(path, expected_dtype));
  return std::make_pair(f.header().dtype, f.header().shape);
}

Expected<Tensor> ReadNpy(const std::string& path, DType expected_dtype) {
  ASSIGN_OR_RETURN(NpyFile f, NpyFile::Open(path, expected_dtype));
  const NpyHeader& h = f.header();
  const size_t file_size = f.size(), data_bytes = file_size - h.data_start;
  if ((h.fortran_order && h.shape.rank() >= 2) || h.dtype == DType::kBool) {
    // Reordered or normalised element by element: parse the whole file.
    std::string bytes(file_size, '\0');
    RETURN_IF_ERROR(PreadAll(f.fd(), bytes.data(), file_size, 0, path));
    return ParseNpy(bytes, path, expected_dtype);
  }
  if (data_bytes >= kMapMinBytes && h.data_start % 64 == 0) {
    void* base = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd(), 0);
    if (base != MAP_FAILED) {
      std::shared_ptr<std::byte> mapping(static_cast<std::byte*>(base),
                                         [file_size](std::byte* p) { ::munmap(p, file_size); });
      std::shared_ptr<std::byte> data(mapping, mapping.get() + h.data_start);  // aliasing
      return Tensor::FromBuffer(h.dtype, h.shape, std::move(data));
    }
  }
  RETURN_IF_ERROR(CheckAllocatable(h.dtype, h.shape));
  Tensor t = Tensor::Uninitialized(h.dtype, h.shape);  // every byte is read into it
  RETURN_IF_ERROR(PreadAll(f.fd(), static_cast<char*>(t.raw()), data_bytes,
                           static_cast<off_t>(h.data_start), path));
  return t;
}

Expected<Tensor> ReadNpySlice(const std::string& path, int axis, int64_t begin, int64_t count,
                              DType expected_dtype) {
  ASSIGN_OR_RETURN(NpyFile f, NpyFile::Open(path, expected_dtype));
  const NpyHeader& h = f.header();
  const std::vector<int64_t>& dims = h.shape.dims();
  const int rank = h.shape.rank();
  if (axis < 0 || axis >= rank) {
    return InvalidArgument(path + ": cannot slice axis " + std::to_string(axis) + " of shape " +
                           h.shape.ToString());
  }
  const int64_t extent = dims[static_cast<size_t>(axis)];
  if (begin < 0 || count < 0 || begin + count > extent) {
    return InvalidArgument(path + ": entries [" + std::to_string(begin) + ", " +
                           std::to_string(begin + count) + ") along axis " + std::to_string(axis) +
                           " are outside its " + std::to_string(extent));
  }
  if (h.fortran_order && rank >= 2) {
    return InvalidArgument(path +
                           ": a Fortran-order file cannot be read in slices; save it in C order "
                           "(numpy.ascontiguousarray)");
  }
  std::vector<int64_t> out_dims = dims;
  out_dims[static_cast<size_t>(axis)] = count;
  const Shape out_shape(out_dims);
  RETURN_IF_ERROR(CheckAllocatable(h.dtype, out_shape));
  Tensor t = Tensor::Uninitialized(h.dtype, out_shape);  // every byte is read into it
  int64_t outer = 1, inner = static_cast<int64_t>(DTypeSize(h.dtype));
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (int d = axis + 1; d < rank; ++d) inner *= dims[static_cast<size_t>(d)];
  const size_t piece = static_cast<size_t>(count * inner);  // bytes per outer index
  const size_t row = static_cast<size_t>(extent * inner);   // the whole axis, per outer index
  char* dst = static_cast<char*>(t.raw());
  const off_t data = static_cast<off_t>(h.data_start);
  if (piece > 0) {
    constexpr size_t kSmallPiece = size_t{64} << 10, kBlock = size_t{4} << 20;
    if (outer == 1 || piece >= kSmallPiece || row > kBlock) {
      for (int64_t o = 0; o < outer; ++o) {
        RETURN_IF_ERROR(PreadAll(f.fd(), dst + static_cast<size_t>(o) * piece, piece,
                                 data + static_cast<off_t>(static_cast<size_t>(o) * row +
                                                           static_cast<size_t>(begin * inner)),
                                 path));
      }
    } else {
      // Small pieces: read whole rows a block at a time and copy the slice out of each.
      const int64_t rows_per_block = static_cast<int64_t>(kBlock / row);
      std::string buffer(static_cast<size_t>(rows_per_block) * row, '\0');
      for (int64_t o = 0; o < outer; o += rows_per_block) {
        const int64_t n = std::min(rows_per_block, outer - o);
        RETURN_IF_ERROR(PreadAll(f.fd(), buffer.data(), static_cast<size_t>(n) * row,
                                 data + static_cast<off_t>(static_cast<size_t>(o) * row), path));
        for (int64_t k = 0; k < n; ++k) {
          std::memcpy(
              dst + static_cast<size_t>(o + k) * piece,
              buffer.data() + static_cast<size_t>(k) * row + static_cast<size_t>(begin * inner),
              piece);
        }
      }
    }
  }
  if (h.dtype == DType::kBool) {
    auto* p = static_cast<unsigned char*>(t.raw());
    for (size_t i = 0; i < t.num_bytes(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

std::string NpyDescr(DType dtype) {
  static constexpr EnumName<DType> kDescr[] = {{DType::kFloat16, "<f2"}, {DType::kBFloat16, "<u2"},
                                               {DType::kFloat32, "<f4"}, {DType::kFloat64, "<f8"},
                                               {DType::kInt32, "<i4"},   {DType::kInt64, "<i8"},
                                               {DType::kBool, "|b1"}};
  return std::string(NameIn(kDescr, dtype, ""));
}

std::string SerializeNpy(const Tensor& tensor) {
  std::string out = NpyHeaderBytes(tensor);
  out.append(static_cast<const char*>(tensor.raw()), tensor.num_bytes());
  return out;
}

std::string NpyHeaderBytes(const Tensor& tensor) {
  std::string shape = "(";
  for (int i = 0; i < tensor.shape().rank(); ++i) {
    shape += std::to_string(tensor.shape().dim(i));
    if (tensor.shape().rank() == 1 || i + 1 < tensor.shape().rank()) shape += ",";
    if (i + 1 < tensor.shape().rank()) shape += " ";
  }
  shape += ")";
  std::string header = "{'descr': '" + NpyDescr(tensor.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that magic + length + header (ending in '\n') is a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  return WriteFileAtomic(path, SerializeNpy(tensor));
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  static std::atomic<int> counter{0};
  const fs::path target(path);
  std::error_code ec;
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (target.has_parent_path()) {
    fs::create_directories(folder, ec);
    if (ec) return IoError("cannot create folder '" + folder.string() + "': " + ec.message());
  }
  // Write a temporary file beside the target, flush it to disk, then rename it over the
  // target: readers see the old file or the new one, never a part.
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot write '" + path + "': " + std::strerror(errno));
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    return IoError("cannot write '" + path + "': " + what + ": " + reason);
  };
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return IoError("cannot write '" + path + "': close failed: " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    return IoError("cannot write '" + path + "': " + reason);
  }
  // Make the rename itself durable.
  const int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return Status::OK();
}

Expected<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return IoError("cannot read '" + path + "': it is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("cannot read '" + path + "': read failed");
  return ss.str();
}

}  // namespace blockflow
