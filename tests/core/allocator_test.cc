#include "core/allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "core/tensor.h"

namespace blockflow {
namespace {

constexpr size_t kMB = size_t{1} << 20;

TEST(BufferPool, FreedLargeBufferIsReusedWithoutMapping) {
  BufferPool pool(64 * kMB);
  std::byte* first = nullptr;
  {
    auto b = pool.Allocate(3 * kMB, /*zeroed=*/false);
    ASSERT_NE(b, nullptr);
    first = b.get();
    EXPECT_EQ(pool.stats().misses, 1u);
    EXPECT_GE(pool.stats().bytes_in_use, 3 * kMB);
  }
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  EXPECT_GE(pool.stats().bytes_cached, 3 * kMB);
  auto again = pool.Allocate(3 * kMB, /*zeroed=*/false);
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(pool.stats().hits, 1u);
  EXPECT_EQ(pool.stats().misses, 1u);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
}

TEST(BufferPool, TheBlockFreedLastIsReusedFirst) {
  BufferPool pool(64 * kMB);
  auto a = pool.Allocate(kMB, false), b = pool.Allocate(kMB, false);
  std::byte* pa = a.get();
  std::byte* pb = b.get();
  a.reset();
  b.reset();
  EXPECT_EQ(pool.Allocate(kMB, false).get(), pb);
  b = pool.Allocate(kMB, false);
  EXPECT_EQ(b.get(), pb);
  EXPECT_EQ(pool.Allocate(kMB, false).get(), pa);
}

TEST(BufferPool, BuffersAre64ByteAlignedAndLargeOnesHugePageAligned) {
  BufferPool pool(64 * kMB);
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{70000}, 5 * kMB}) {
    auto b = pool.Allocate(bytes, true);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % 64, 0u) << bytes;
  }
  auto big = pool.Allocate(5 * kMB, false);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.get()) % (2 * kMB), 0u);
}

TEST(BufferPool, ZeroedReuseIsZeroEvenAfterGarbage) {
  BufferPool pool(64 * kMB);
  {
    auto b = pool.Allocate(kMB, false);
    std::memset(b.get(), 0xAB, kMB);
  }
  auto z = pool.Allocate(kMB, /*zeroed=*/true);
  EXPECT_EQ(pool.stats().hits, 1u);
  const auto* p = reinterpret_cast<const unsigned char*>(z.get());
  size_t nonzero = 0;
  for (size_t i = 0; i < kMB; ++i) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0u);
}

TEST(BufferPool, DoesNotReuseABlockMuchLargerThanTheRequest) {
  BufferPool pool(64 * kMB);
  pool.Allocate(8 * kMB, false).reset();
  auto small = pool.Allocate(kMB, false);  // 1 MB from an 8 MB block would waste 7/8 of it
  EXPECT_EQ(pool.stats().hits, 0u);
  EXPECT_EQ(pool.stats().misses, 2u);
  EXPECT_EQ(pool.stats().bytes_cached, 8 * kMB);
}

TEST(BufferPool, CacheNeverExceedsItsLimit) {
  BufferPool pool(5 * kMB);
  {
    std::vector<std::shared_ptr<std::byte>> held;
    held.reserve(4);
    for (int i = 0; i < 4; ++i) held.push_back(pool.Allocate(2 * kMB, false));
    EXPECT_EQ(pool.stats().bytes_in_use, 8 * kMB);
  }
  // Two 2 MB blocks fit under 5 MB; the other two went back to the OS.
  EXPECT_EQ(pool.stats().bytes_cached, 4 * kMB);
  EXPECT_LE(pool.stats().bytes_cached, pool.stats().cache_limit);
  pool.SetCacheLimit(kMB);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  pool.Allocate(3 * kMB, false).reset();  // larger than the whole limit: never cached
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
}

TEST(BufferPool, PeakFollowsTheLiveSet) {
  BufferPool pool(64 * kMB);
  auto a = pool.Allocate(2 * kMB, false);
  { auto b = pool.Allocate(4 * kMB, false); }
  EXPECT_EQ(pool.stats().peak_bytes_in_use, 6 * kMB);
  pool.ResetPeak();
  EXPECT_EQ(pool.stats().peak_bytes_in_use, 2 * kMB);
  auto c = pool.Allocate(4 * kMB, false);  // reuses b's block
  EXPECT_EQ(pool.stats().peak_bytes_in_use, 6 * kMB);
  EXPECT_EQ(pool.stats().hits, 1u);
}

TEST(BufferPool, SmallBuffersAreCountedButNotCached) {
  BufferPool pool(64 * kMB);
  auto s = pool.Allocate(1000, true);
  EXPECT_EQ(pool.stats().bytes_in_use, 1024u);
  s.reset();
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
}

TEST(BufferPool, ManyThreadsAllocateAndFreeConsistently) {
  BufferPool pool(32 * kMB);
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes =
            (i % 3 == 0) ? 512 : (size_t{64} << 10) * static_cast<size_t>(1 + (i + t) % 5);
        auto b = pool.Allocate(bytes, i % 2 == 0);
        ASSERT_NE(b, nullptr);
        std::memset(b.get(), t, bytes);
      }
    });
  }
  for (auto& th : threads) th.join();
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_LE(s.bytes_cached, s.cache_limit);
  EXPECT_GT(s.hits, 0u);
}

TEST(BufferPool, BlocksForContainersAreReusedAndFreedAtTheirOwnSize) {
  BufferPool pool(64 * kMB);
  std::byte* first = pool.AllocateBlock(3 * kMB);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  EXPECT_EQ(pool.stats().bytes_in_use, 4 * kMB);  // whole huge pages
  pool.FreeBlock(first, 3 * kMB);
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  EXPECT_EQ(pool.stats().bytes_cached, 4 * kMB);
  // A smaller request takes the 4 MB block (it wastes under a quarter of it); freeing it by the
  // request's size gives the whole block back, as the container knows only what it asked for.
  std::byte* again = pool.AllocateBlock(3 * kMB + 1);
  EXPECT_EQ(again, first);
  EXPECT_EQ(pool.stats().hits, 1u);
  pool.FreeBlock(again, 3 * kMB + 1);
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  EXPECT_EQ(pool.stats().bytes_cached, 4 * kMB);
  // Small blocks come from the heap: counted while out, never cached.
  std::byte* small = pool.AllocateBlock(100);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(pool.stats().bytes_in_use, 128u);
  pool.FreeBlock(small, 100);
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  EXPECT_EQ(pool.stats().bytes_cached, 4 * kMB);
}

TEST(BufferPool, ScratchIsNotTheTensorPool) {
  EXPECT_NE(&BufferPool::Scratch(), &BufferPool::Global());
  const PoolStats before = BufferPool::Global().stats();
  std::byte* p = BufferPool::Scratch().AllocateBlock(5 * kMB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(BufferPool::Global().stats().bytes_in_use, before.bytes_in_use);
  EXPECT_GE(BufferPool::Scratch().stats().bytes_in_use, 5 * kMB);
  BufferPool::Scratch().FreeBlock(p, 5 * kMB);
}

TEST(BufferPoolDeathTest, FreeingABlockItDidNotHandOutIsACheckFailure) {
  BufferPool pool(64 * kMB);
  alignas(64) static std::byte not_ours[1 << 17];
  EXPECT_DEATH(pool.FreeBlock(not_ours, sizeof(not_ours)), "did not hand out");
}

TEST(ParseByteCount, SuffixesAndErrors) {
  EXPECT_EQ(ParseByteCount("512"), 512u);
  EXPECT_EQ(ParseByteCount("64K"), 65536u);
  EXPECT_EQ(ParseByteCount("1.5G"), size_t{3} << 29);
  EXPECT_EQ(ParseByteCount("2M"), 2 * kMB);
  EXPECT_FALSE(ParseByteCount("").has_value());
  EXPECT_FALSE(ParseByteCount("-1").has_value());
  EXPECT_FALSE(ParseByteCount("12X").has_value());
  EXPECT_FALSE(ParseByteCount("G").has_value());
}

TEST(TensorMemory, UninitializedTensorsComeFromThePoolAndZeroedOnesAreZero) {
  const PoolStats before = BufferPool::Global().stats();
  {
    Tensor t = Tensor::Uninitialized(DType::kFloat32, Shape{512, 1024});  // 2 MB
    std::memset(t.raw(), 0xFF, t.num_bytes());
  }
  Tensor z(DType::kFloat32, Shape{512, 1024});
  const PoolStats after = BufferPool::Global().stats();
  EXPECT_GT(after.hits, before.hits);
  for (int64_t i = 0; i < z.num_elements(); ++i) ASSERT_EQ(z.data<float>()[i], 0.0f) << i;
}

TEST(TensorMemory, DefaultTensorAllocatesNothing) {
  const size_t in_use = BufferPool::Global().stats().bytes_in_use;
  std::vector<Tensor> many(1000);
  EXPECT_EQ(BufferPool::Global().stats().bytes_in_use, in_use);
  EXPECT_NE(many[0].raw(), nullptr);
  EXPECT_EQ(many[0].num_elements(), 0);
}

TEST(TensorMemory, FromBufferRejectsMisalignedBuffers) {
  auto owner = BufferPool::Global().Allocate(256, false);
  std::shared_ptr<std::byte> misaligned(owner, owner.get() + 4);
  Expected<Tensor> t = Tensor::FromBuffer(DType::kFloat32, Shape{4}, misaligned);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not 64-byte aligned"), std::string::npos);
  Expected<Tensor> u = Tensor::FromBuffer(DType::kFloat32, Shape{4}, owner);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->raw(), owner.get());
}

TEST(TensorMemory, FromExternalBorrowsElementAlignedMemoryAndKeepsItsOwner) {
  // Another library's array: 4-byte aligned, not 64; the tensor reads it in place.
  struct Owner {
    alignas(64) float storage[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    bool* released;
    ~Owner() { *released = true; }
  };
  bool released = false;
  auto owner = std::make_shared<Owner>();
  owner->released = &released;
  float* data = owner->storage + 1;
  Expected<Tensor> t = Tensor::FromExternal(DType::kFloat32, Shape{2, 4}, data, owner);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->raw(), data);
  EXPECT_EQ(t->data<float>()[7], 8.0f);
  Tensor copy = *t;
  owner.reset();
  t = Tensor();
  EXPECT_FALSE(released);  // `copy` still holds the owner
  EXPECT_EQ(copy.data<float>()[0], 1.0f);
  copy = Tensor();
  EXPECT_TRUE(released);
}

TEST(TensorMemory, FromExternalRejectsMisalignedOrNullData) {
  alignas(64) std::byte storage[64] = {};
  Expected<Tensor> t = Tensor::FromExternal(DType::kFloat64, Shape{2}, storage + 4, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not aligned to its 8-byte elements"), std::string::npos);
  EXPECT_TRUE(Tensor::FromExternal(DType::kInt32, Shape{2}, storage + 4, nullptr).ok());
  EXPECT_FALSE(Tensor::FromExternal(DType::kInt32, Shape{2}, nullptr, nullptr).ok());
  EXPECT_FALSE(Tensor::FromExternal(DType::kInt32, Shape{-1}, storage, nullptr).ok());
}

}  // namespace
}  // namespace blockflow
