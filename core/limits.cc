#include "core/limits.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <limits>

namespace blockflow {
namespace {

// A cgroup memory limit file's value; 0 when absent, "max" or unreadable.
uint64_t ReadCgroupLimit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return 0;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

uint64_t UsableMemory() {
  static const uint64_t usable = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && page > 0
                       ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                       : uint64_t{4} << 30;  // unknown: assume a small machine
    // v1 reports "no limit" as a huge number, which the min below ignores.
    for (const char* path :
         {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
      const uint64_t cgroup = ReadCgroupLimit(path);
      if (cgroup > 0) ram = std::min(ram, cgroup);
    }
    return ram;
  }();
  return usable;
}

uint64_t DefaultMemoryLimit() { return UsableMemory() / 2; }

uint64_t EffectiveMemoryLimit(uint64_t limit) { return limit ? limit : DefaultMemoryLimit(); }

Expected<uint64_t> ParseByteSize(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("'" + text + "' is not a byte count: " + why +
                           " (give bytes, or a number with K, M or G, such as 512M or 2G)");
  };
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return bad("it does not start with digits");
  std::string suffix = text.substr(i);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() == 2 && suffix[1] == 'B' && suffix[0] != 'B') suffix.pop_back();
  int shift = 0;
  if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (!suffix.empty() && suffix != "B") {
    return bad("unknown suffix '" + text.substr(i) + "'");
  }
  uint64_t value = 0;
  for (size_t k = 0; k < i; ++k) {
    const uint64_t digit = static_cast<uint64_t>(text[k] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return bad("it is too large");
    value = value * 10 + digit;
  }
  if (value > (std::numeric_limits<uint64_t>::max() >> shift)) return bad("it is too large");
  value <<= shift;
  if (value == 0) return bad("it must be more than zero");
  return value;
}

std::string FormatBytes(long double bytes) {
  if (bytes < 10240) return std::to_string(static_cast<long long>(bytes)) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  bytes /= 1024;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, bytes < 1e6L ? "%.1Lf %s" : "%.3Le %s", bytes, units[u]);
  return buf;
}

long double TensorBytes(DType dtype, const Shape& shape) {
  if (!shape.IsFullyDefined()) return -1;
  long double bytes = static_cast<long double>(DTypeSize(dtype));
  for (int64_t d : shape.dims()) bytes *= static_cast<long double>(d);
  return bytes;
}

std::string MemoryLimitText(uint64_t limit) {
  const uint64_t effective = EffectiveMemoryLimit(limit);
  return "the memory limit of " + FormatBytes(static_cast<long double>(effective)) +
         (limit ? ""
                : " (half of this machine's " +
                      FormatBytes(static_cast<long double>(UsableMemory())) + ")") +
         "; raise it with --memory-limit BYTES (in Python: Session(graph, memory_limit=BYTES); "
         "in the editor: blockflow-editor --memory-limit BYTES)";
}

Status CheckTensorFits(const std::string& what, DType dtype, const Shape& shape, uint64_t limit) {
  const long double bytes = TensorBytes(dtype, shape);
  if (bytes < 0 || bytes <= static_cast<long double>(EffectiveMemoryLimit(limit)))
    return Status::OK();
  return InvalidArgument(what + " is " + std::string(DTypeName(dtype)) + shape.ToString() + " (" +
                         FormatBytes(bytes) + "), more than " + MemoryLimitText(limit));
}

}  // namespace blockflow
