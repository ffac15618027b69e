// The NCHW transposes of the convolution kernels (layout.h): TransposeConvert equals the
// element-by-element transpose, converted, at every ISA (8 x 8 register blocks with AVX2 and
// AVX-512, single elements for the rest), over sizes that leave every kind of edge: rows and
// columns that are multiples of 8 and that are not, within one 16 x 64 block and across blocks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "blocks/conv/isa.h"
#include "blocks/conv/layout.h"
#include "blocks/conv/optimized_util.h"
#include "core/dtype.h"
#include "core/limits.h"

namespace blockflow::conv::internal {
namespace {

// The transpose of an ni x nj matrix of S (row stride ss >= nj) into D (row stride ds >= ni),
// against the plain loop, element by element; `what` names the case in a failure.
template <typename S, typename D>
void CheckTranspose(int64_t ni, int64_t nj, const std::string& what) {
  const int64_t ss = nj + 3, ds = ni + 5;
  std::vector<S> s(static_cast<size_t>(ni * ss));
  for (size_t k = 0; k < s.size(); ++k)
    s[k] = static_cast<S>(static_cast<float>(k % 1021) * 0.25f - 100.0f);
  std::vector<D> d(static_cast<size_t>(nj * ds), static_cast<D>(-7.0f)), want = d;
  for (int64_t i = 0; i < ni; ++i)
    for (int64_t j = 0; j < nj; ++j)
      want[j * ds + i] = static_cast<D>(static_cast<float>(s[i * ss + j]));
  TransposeConvert(s.data(), ss, d.data(), ds, ni, nj);
  for (size_t k = 0; k < d.size(); ++k) {
    ASSERT_EQ(static_cast<float>(d[k]), static_cast<float>(want[k]))
        << what << " " << ni << " x " << nj << " element " << k << " (row " << k / ds << ", column "
        << k % ds << ")";
  }
}

TEST(TransposeConvert, EqualsTheElementLoopAtEveryIsa) {
  const int64_t sizes[] = {1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 48, 64, 65, 100};
  for (Isa isa : {Isa::kBase, Isa::kAvx2, Isa::kAvx512}) {
    SetIsaForTesting(isa);
    const std::string name = IsaName(ActiveIsa());
    for (int64_t ni : sizes) {
      for (int64_t nj : sizes) {
        CheckTranspose<float, float>(ni, nj, name + " float");
        CheckTranspose<Half, float>(ni, nj, name + " half to float");
        CheckTranspose<float, BFloat16>(ni, nj, name + " float to bfloat16");
      }
    }
  }
  SetIsaForTesting(Isa::kAvx512);
}

// A result fits the shared cache up to half the L3: the one the CPU reports, where the CPU's L3
// keeps results, or the one a test sets (0: nothing fits, so that tests reach the streamed
// stores on any host).
TEST(SharedCache, FitsHalfTheL3) {
  SetSharedCacheForTesting(int64_t{8} << 20);
  EXPECT_TRUE(SharedCacheKeepsResults());
  EXPECT_TRUE(FitsSharedCache(int64_t{4} << 20));
  EXPECT_FALSE(FitsSharedCache((int64_t{4} << 20) + 1));
  SetSharedCacheForTesting(0);
  EXPECT_TRUE(FitsSharedCache(0));
  EXPECT_FALSE(FitsSharedCache(1));
  SetSharedCacheForTesting(-1);
  const int64_t l3 = CacheBytes(3, 0);
  const bool keeps = SharedCacheKeepsResults();
  EXPECT_EQ(FitsSharedCache(l3 / 2 + 1), false) << "L3 " << l3;
  EXPECT_EQ(FitsSharedCache(int64_t{1} << 20), keeps && l3 >= int64_t{2} << 20) << "L3 " << l3;
}

// Cache sizes as Linux lays them out: data and unified caches by level, sizes in K, M or bytes;
// instruction caches, missing levels and unreadable sizes skipped.
TEST(CacheSizes, ReadFromLinuxLayout) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bf_cache_sizes_" + std::to_string(getpid()));
  const auto write_index = [&](int i, const std::string& level, const std::string& type,
                               const std::string& size) {
    const std::filesystem::path index = dir / ("index" + std::to_string(i));
    std::filesystem::create_directories(index);
    std::ofstream(index / "level") << level << "\n";
    std::ofstream(index / "type") << type << "\n";
    if (!size.empty()) std::ofstream(index / "size") << size << "\n";
  };
  write_index(0, "1", "Data", "32K");
  write_index(1, "1", "Instruction", "64K");
  write_index(2, "2", "Unified", "1024K");
  write_index(3, "3", "Unified", "32M");
  EXPECT_EQ(CacheBytesIn(dir.string(), 1), int64_t{32} << 10);
  EXPECT_EQ(CacheBytesIn(dir.string(), 2), int64_t{1} << 20);
  EXPECT_EQ(CacheBytesIn(dir.string(), 3), int64_t{32} << 20);
  EXPECT_EQ(CacheBytesIn(dir.string(), 4), 0);
  EXPECT_EQ(CacheBytesIn((dir / "missing").string(), 1), 0);
  std::filesystem::remove_all(dir);
  write_index(0, "3", "Unified", "");  // no size: not known
  write_index(1, "3", "Unified", "12582912");
  EXPECT_EQ(CacheBytesIn(dir.string(), 3), 12582912);
  std::filesystem::remove_all(dir);
  // The host's own: where Linux describes it, CacheBytes takes Linux's size, else the CPU's.
  const int64_t linux_l3 = CacheBytesIn("/sys/devices/system/cpu/cpu0/cache", 3);
  EXPECT_EQ(CacheBytes(3, 0), linux_l3 > 0 ? linux_l3 : CoreL3Bytes(HostCpuL3()));
}

// Without Linux's description, the L3 a core shares: AMD's cache topology where the CPU has
// one; on Zen without it, the package's L3 the C library reports cut to one core complex's;
// elsewhere the reported one; 0 (unknown) stays 0.
TEST(CacheSizes, CoreL3FromTheCpu) {
  constexpr int64_t kMb = int64_t{1} << 20;
  const auto l3 = [](bool amd, int family, int64_t topology, int64_t reported) {
    return CoreL3Bytes({amd, family, topology, reported});
  };
  EXPECT_EQ(l3(true, 0x1a, 32 * kMb, 508 * kMb), 32 * kMb);   // the topology's
  EXPECT_EQ(l3(true, 0x19, 96 * kMb, 1152 * kMb), 96 * kMb);  // stacked cache
  EXPECT_EQ(l3(true, 0x1a, 0, 508 * kMb), 32 * kMb);          // the AVX-512 EPYC guest
  EXPECT_EQ(l3(true, 0x19, 0, 16 * kMb), 16 * kMb);           // reported below a complex's
  EXPECT_EQ(l3(true, 0x17, 0, 64 * kMb), 16 * kMb);           // Zen 2
  EXPECT_EQ(l3(true, 0x15, 0, 8 * kMb), 8 * kMb);             // before Zen: as reported
  EXPECT_EQ(l3(false, 0x6, 0, 105 * kMb), 105 * kMb);         // Intel: the socket's
  EXPECT_EQ(l3(true, 0x1a, 0, 0), 0);                         // unknown
  // A topology subleaf's registers: 16 ways, 1 partition, 64-byte lines, 32768 sets (a Zen 4
  // L3); 12 ways, 64-byte lines, 64 sets (a 48 KB L1).
  EXPECT_EQ(AmdTopologyCacheBytes(0x03c0003f, 0x7fff), 32 * kMb);
  EXPECT_EQ(AmdTopologyCacheBytes(0x02c0003f, 0x3f), int64_t{48} << 10);
  EXPECT_EQ(AmdTopologyCacheBytes(0x0000103f, 0), 128);         // 2 partitions of a 64-byte line
  EXPECT_EQ(AmdTopologyCacheBytes(0xffffffff, 0x7fffffff), 0);  // 2^63: not known
  // The host's: vendor and family as Linux reads them too (/proc/cpuinfo, where there is one).
#if defined(__x86_64__) && defined(__GNUC__)
  const CpuL3 host = HostCpuL3();
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor;
  long family = -1;
  while ((vendor.empty() || family < 0) && std::getline(cpuinfo, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    const std::string value = line.substr(colon + 2);
    if (line.rfind("vendor_id", 0) == 0) vendor = value;
    if (line.rfind("cpu family", 0) == 0) {
      char* end = nullptr;
      family = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str()) family = -1;
    }
  }
  if (family >= 0) {
    EXPECT_EQ(host.family, family);
    EXPECT_EQ(host.amd, vendor == "AuthenticAMD") << vendor;
  }
#endif
}

// The benchmarks' report of the caches: each level's size ("unknown" where it is not known),
// and where the sizes come from, once where all three come from one place.
TEST(CacheSizes, SummaryNamesEachLevelAndItsSource) {
  constexpr int64_t kKb = 1024, kMb = kKb * kKb;
  EXPECT_EQ(FormatCacheSummary({48 * kKb, kMb, 32 * kMb}, {false, false, false}),
            "L1 48.0 KiB, L2 1.0 MiB, L3 32.0 MiB (the CPU's; Linux describes none)");
  EXPECT_EQ(FormatCacheSummary({32 * kKb, 2 * kMb, 105 * kMb}, {true, true, true}),
            "L1 32.0 KiB, L2 2.0 MiB, L3 105.0 MiB (as Linux describes them)");
  EXPECT_EQ(FormatCacheSummary({32 * kKb, kMb, 0}, {true, true, false}),
            "L1 32.0 KiB (as Linux describes it), L2 1.0 MiB (as Linux describes it), L3 unknown "
            "(the CPU's)");
  // The host's: its sizes as the kernels take them.
  const std::string summary = CacheSummary();
  for (int level = 1; level <= 3; ++level) {
    const int64_t bytes = CacheBytes(level, 0);
    const std::string part = "L" + std::to_string(level) + " " +
                             (bytes > 0 ? FormatBytes(static_cast<long double>(bytes)) : "unknown");
    EXPECT_NE(summary.find(part), std::string::npos) << summary << " lacks " << part;
  }
}

TEST(SharedCache, OperandsOutgrowAShareOfTheL3) {
  SetSharedCacheForTesting(int64_t{8} << 20);
  EXPECT_FALSE(OutgrowsSharedCache(int64_t{2} << 20, 4));
  EXPECT_TRUE(OutgrowsSharedCache((int64_t{2} << 20) + 1, 4));
  SetSharedCacheForTesting(0);  // as an unknown L3: nothing outgrows it
  EXPECT_FALSE(OutgrowsSharedCache(int64_t{1} << 40, 4));
  SetSharedCacheForTesting(1);
  EXPECT_TRUE(OutgrowsSharedCache(1, 4));
  SetSharedCacheForTesting(-1);
  const int64_t l3 = CacheBytes(3, 0);
  EXPECT_EQ(OutgrowsSharedCache(l3 / 4 + 1, 4), l3 > 0) << "L3 " << l3;
  EXPECT_FALSE(OutgrowsSharedCache(l3 / 4, 4)) << "L3 " << l3;
}

// The parts of a row that LinesAhead prefetches follow one another and take each of its lines
// once, within the given number of steps, for rows that are and are not whole lines and parts
// that do and do not divide them.
TEST(LinesAhead, PartsTakeEveryLineOnceInTheirSteps) {
  constexpr int64_t kLine = 64;
  alignas(64) static char row[kLine * 100];
  for (int64_t bytes : {int64_t{1}, kLine, kLine + 1, kLine * 37, kLine * 100})
    for (int64_t parts : {1, 3, 8})
      for (int64_t steps : {1, 2, 5, 40}) {
        const std::string what = std::to_string(bytes) + " bytes, " + std::to_string(parts) +
                                 " parts, " + std::to_string(steps) + " steps";
        const char* expect = row;
        for (int64_t part = 0; part < parts; ++part) {
          LinesAhead a(row, bytes, parts, part, steps);
          if (a.left() > 0) {
            EXPECT_EQ(a.next(), expect) << what << ", part " << part;
            expect += kLine * a.left();
          }
          for (int64_t s = 0; s < steps; ++s) a.Next();
          EXPECT_EQ(a.left(), 0) << what << ", part " << part;
        }
        EXPECT_EQ(expect, row + (bytes + kLine - 1) / kLine * kLine) << what;
      }
  const LinesAhead none(nullptr, kLine * 10, 2, 0, 3);
  EXPECT_EQ(none.left(), 0);
}

}  // namespace
}  // namespace blockflow::conv::internal
