#include "core/team.h"

#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace blockflow {
namespace {

using Clock = std::chrono::steady_clock;

/// What a thread needs to know of the team it works in.
struct Member {
  enum Kind { kAlone, kPool, kOpenMp };
  int thread = 0, size = 1;
  Kind kind = kAlone;
  bool in_pool = false;  // a team run alone inside a pool team (at any depth)
};

/// The innermost team the thread works in, or nullptr outside any.
thread_local const Member* tl_member = nullptr;

/// Makes `member` the thread's team while alive, and restores the one before.
class Joined {
 public:
  explicit Joined(const Member* member) : before_(tl_member) { tl_member = member; }
  ~Joined() { tl_member = before_; }
  Joined(const Joined&) = delete;
  Joined& operator=(const Joined&) = delete;

 private:
  const Member* before_;
};

std::atomic<TeamRuntime>& Runtime() {
  static std::atomic<TeamRuntime> runtime{[] {
    const char* env = std::getenv("BLOCKFLOW_TEAMS");
    return env != nullptr && std::strcmp(env, "pool") == 0 ? TeamRuntime::kPool
                                                           : TeamRuntime::kOpenMp;
  }()};
  return runtime;
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// How long a waiting thread spins before it starts yielding its CPU between checks.
constexpr Clock::duration kSpinAlone = std::chrono::microseconds(50);

/// A word threads wait on for a change, on a cache line of its own, with a count of the threads
/// asleep on it, so that whoever changes it makes the wake-up system call only for sleepers.
struct alignas(64) Signal {
  std::atomic<uint32_t> word{0};
  std::atomic<int> sleepers{0};

  /// Waits until the word is no longer `old`: spinning for up to `spin` (or until `rest`, if
  /// given, is no longer `resting`), then asleep on the futex. Acquires what the changer wrote
  /// before the change.
  /// `resting` is the value of `rest` the waiter read before it let anyone see it wait.
  void AwaitChange(uint32_t old, Clock::duration spin, const std::atomic<uint32_t>* rest = nullptr,
                   uint32_t resting = 0) {
    if (word.load(std::memory_order_acquire) != old) return;
    if (spin > Clock::duration::zero()) {
      // Spinning on the CPU alone for kSpinAlone, then yielding it between checks: a thread
      // waiting for one that shares its CPU (the scheduler placed both there while the other
      // CPU was busy) lets that one run at once rather than spin out its time slice. Two-thread
      // depthwise calls so placed took 1 ms each without the yield (the join's spin), 0.2-0.3 ms
      // with it, 0.06 ms on two CPUs.
      const Clock::time_point start = Clock::now(), deadline = start + spin;
      const Clock::time_point alone = start + kSpinAlone;
      bool yielding = false;
      for (int i = 1;; ++i) {
        if (yielding) {
          sched_yield();
        } else {
          CpuRelax();
        }
        if (word.load(std::memory_order_acquire) != old) return;
        if (yielding || i % 64 == 0) {
          const Clock::time_point now = Clock::now();
          if (now > deadline ||
              (rest != nullptr && rest->load(std::memory_order_relaxed) != resting)) {
            break;
          }
          yielding = now > alone;
        }
      }
    }
    // The count before the check, the changer's change before its read of the count (both
    // sequentially consistent): either the changer sees this sleeper, or the futex call sees the
    // change and returns at once.
    sleepers.fetch_add(1);
    while (word.load() == old) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, old, nullptr,
              nullptr, 0);
    }
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }

  /// Adds `n` to the word (releasing what was written before), waking its sleepers if any.
  void Change(uint32_t n = 1) {
    word.fetch_add(n);
    if (sleepers.load() > 0) {
      syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
              nullptr, 0);
    }
  }
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the atomic");

/// Runs the body of a team's thread; an exception leaving it ends the process, as it does from an
/// OpenMP region, rather than leave the other threads working on the caller's unwound frame.
void RunBody(void (*body)(const void*), const void* arg) noexcept { body(arg); }

/// The CPUs the process may run on.
int UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// The process's threads for teams: workers 1, 2, ... each waiting on a start signal of its own,
/// started when a team first needs them and kept for the life of the process. One team at a
/// time: a caller takes the pool (TryRun) or finds it busy.
class Pool {
 public:
  /// Runs the team on the pool, or returns false at once if another caller has it (or the
  /// calling thread works in its team), or it cannot start the threads.
  bool TryRun(int threads, void (*body)(const void*), const void* arg) {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
    const int workers = threads - 1;
    bool grown = false;
    try {
      grown = Grow(workers);
    } catch (const std::bad_alloc&) {  // the pool stays as it was, the team runs on OpenMP
    }
    if (!grown) {
      busy_.store(false, std::memory_order_release);
      return false;
    }
    // The spin budgets: while the team fits the CPUs, a waiting thread keeps its CPU for a
    // while (a worker between teams, a thread at a barrier or the join); with more threads than
    // CPUs a spinning thread would take the CPU of the thread it waits for, so it sleeps at once.
    const bool fits = threads <= cpus_;
    idle_spin_.store(fits ? kIdleSpin : Clock::duration::zero(), std::memory_order_relaxed);
    wait_spin_ = fits ? kWaitSpin : Clock::duration::zero();
    body_ = body;
    arg_ = arg;
    size_ = threads;
    const uint32_t done = done_.word.load(std::memory_order_relaxed);
    for (int w = 0; w < workers; ++w) workers_[static_cast<size_t>(w)]->start.Change();
    {
      const Member me{0, threads, Member::kPool};
      const Joined joined(&me);
      RunBody(body, arg);
    }
    for (uint32_t now = done_.word.load(std::memory_order_acquire);
         now != done + static_cast<uint32_t>(workers);
         now = done_.word.load(std::memory_order_acquire)) {
      done_.AwaitChange(now, wait_spin_);
    }
    busy_.store(false, std::memory_order_release);
    return true;
  }

  /// Makes the workers that spin between teams sleep now.
  void Rest() { rest_.fetch_add(1, std::memory_order_relaxed); }

  /// The barrier of the pool's team.
  void Barrier() {
    const uint32_t generation = barrier_.word.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
      arrived_.store(0, std::memory_order_relaxed);
      barrier_.Change();
    } else {
      barrier_.AwaitChange(generation, wait_spin_);
    }
  }

 private:
  // A worker keeps spinning for 5 ms after a team, as long as GCC's OpenMP runtime does by
  // default, and a thread at a barrier or the join for 1 ms. On the virtual machines measured,
  // a CPU left idle for about 10 ms is slow to come back: a two-thread depthwise layer's calls
  // made 12 ms after the last team took 10x their time on average over the next 20 calls, made
  // 3-6 ms after it their usual time (with a 0.2 ms spin, both runtimes alike).
  static constexpr Clock::duration kIdleSpin = std::chrono::milliseconds(5);
  static constexpr Clock::duration kWaitSpin = std::chrono::milliseconds(1);
  static constexpr int kMaxWorkers = 1023;

  struct Worker {
    Signal start;
  };

  /// Starts workers until there are `workers`; false if that many cannot be. Room for them is
  /// made first, so that a worker once started is always kept.
  bool Grow(int workers) {
    if (workers > kMaxWorkers) return false;
    workers_.reserve(static_cast<size_t>(workers));
    while (static_cast<int>(workers_.size()) < workers) {
      auto worker = std::make_unique<Worker>();
      const int number = static_cast<int>(workers_.size()) + 1;
      try {
        std::thread([this, w = worker.get(), number] { Work(w, number); }).detach();
      } catch (const std::system_error&) {
        return false;
      }
      workers_.push_back(std::move(worker));
    }
    return true;
  }

  /// Worker `number`'s life: wait for a team, run the body, count itself done. It reads `rest_`
  /// before it counts itself done: a Rest() by the caller the count lets go ends its next spin.
  void Work(Worker* worker, int number) {
    uint32_t seen = 0, resting = rest_.load(std::memory_order_relaxed);
    for (;;) {
      worker->start.AwaitChange(seen, idle_spin_.load(std::memory_order_relaxed), &rest_, resting);
      seen = worker->start.word.load(std::memory_order_acquire);
      {
        const Member me{number, size_, Member::kPool};
        const Joined joined(&me);
        RunBody(body_, arg_);
      }
      resting = rest_.load(std::memory_order_relaxed);
      done_.Change();
    }
  }

  const int cpus_ = UsableCpus();
  std::atomic<bool> busy_{false};
  // Written by the caller that has the pool before it starts the workers, read by them after.
  std::vector<std::unique_ptr<Worker>> workers_;
  void (*body_)(const void*) = nullptr;
  const void* arg_ = nullptr;
  int size_ = 1;
  Clock::duration wait_spin_{};
  std::atomic<Clock::duration> idle_spin_{Clock::duration::zero()};
  Signal done_;
  Signal barrier_;
  alignas(64) std::atomic<uint32_t> rest_{0};
  alignas(64) std::atomic<int> arrived_{0};
};

std::atomic<Pool*> g_pool{nullptr};

/// Whether the calling thread works in a pool team of two or more threads, directly or in teams
/// run alone inside one.
bool InPoolTeam() {
  return tl_member != nullptr &&
         (tl_member->in_pool || (tl_member->kind == Member::kPool && tl_member->size > 1));
}

/// The pool, made on first use. A child process made by fork() has none of the parent's
/// threads: it starts a pool of its own (the parent's is left, unused).
Pool& ThePool() {
  Pool* pool = g_pool.load(std::memory_order_acquire);
  if (pool != nullptr) return *pool;
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); });
  });
  auto made = std::make_unique<Pool>();
  if (g_pool.compare_exchange_strong(pool, made.get(), std::memory_order_acq_rel)) {
    return *made.release();  // kept for the life of the process, its workers waiting on it
  }
  return *pool;
}

}  // namespace

void SetTeamRuntime(TeamRuntime runtime) { Runtime().store(runtime); }
TeamRuntime GetTeamRuntime() { return Runtime().load(); }

namespace team_internal {

void Run(int threads, void (*body)(const void*), const void* arg) {
  // A team started inside a pool team of two or more runs alone: the pool's threads have the
  // CPUs, and an OpenMP region on each of them would start threads * threads.
  const bool in_pool = InPoolTeam();
  if (threads <= 1 || in_pool) {
    Member alone;
    alone.in_pool = in_pool;
    const Joined joined(&alone);
    body(arg);
    return;
  }
  if (Runtime().load(std::memory_order_relaxed) == TeamRuntime::kPool &&
      omp_get_active_level() == 0 && ThePool().TryRun(threads, body, arg)) {
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const Member me{omp_get_thread_num(), omp_get_num_threads(), Member::kOpenMp};
    const Joined joined(&me);
    RunBody(body, arg);
  }
}

}  // namespace team_internal

void RestTeamThreads() {
  if (Pool* pool = g_pool.load(std::memory_order_acquire)) pool->Rest();
}

int TeamLimit(int threads) {
  threads = std::max(1, threads);
  if (InPoolTeam() || omp_get_active_level() >= omp_get_max_active_levels()) return 1;
  return std::clamp(omp_get_thread_limit(), 1, threads);
}

int TeamThread() { return tl_member != nullptr ? tl_member->thread : 0; }
int TeamSize() { return tl_member != nullptr ? tl_member->size : 1; }

void TeamBarrier() {
  if (tl_member == nullptr) return;
  switch (tl_member->kind) {
    case Member::kAlone:
      return;
    case Member::kPool:
      ThePool().Barrier();
      return;
    case Member::kOpenMp: {
#pragma omp barrier
      return;
    }
  }
}

namespace {
// Thread t's share [begin, end) of [0, n) split over `size` threads (OpenMP's static schedule).
std::pair<int64_t, int64_t> StaticShare(int64_t n, int64_t size, int64_t t) {
  const int64_t q = n / size, r = n % size;
  const int64_t begin = t * q + std::min(t, r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

uint64_t PackUnits(uint64_t low, uint64_t high) { return low | high << 32; }
}  // namespace

std::pair<int64_t, int64_t> TeamShare(int64_t n) {
  return StaticShare(n, TeamSize(), TeamThread());
}

TeamRows::TeamRows(int64_t n, int threads)
    : shares_(new Share[static_cast<size_t>(std::max(threads, 1))]),
      threads_(std::max(threads, 1)) {
  n = std::max<int64_t>(n, 0);
  // Units of one row, unless a share's units would not fit 32 bits.
  constexpr int64_t kMaxUnits = int64_t{1} << 31;
  const int64_t largest = (n + threads_ - 1) / threads_;
  unit_ = std::max<int64_t>(1, (largest + kMaxUnits - 1) / kMaxUnits);
  // Runs after the first: a sixteenth of a share (a quarter of what is left after it, in four).
  chunk_ = std::max<int64_t>(1, largest / unit_ / 16);
  for (int t = 0; t < threads_; ++t) {
    const auto [begin, end] = StaticShare(n, threads_, t);
    Share& share = shares_[t];
    share.first = begin;
    share.size = end - begin;
    share.left.store(PackUnits(0, static_cast<uint64_t>((share.size + unit_ - 1) / unit_)),
                     std::memory_order_relaxed);
  }
}

bool TeamRows::Take(Share& share, bool front, int64_t* begin, int64_t* end) const {
  uint64_t left = share.left.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t low = static_cast<int64_t>(left & 0xffffffffu);
    const int64_t high = static_cast<int64_t>(left >> 32);
    if (low >= high) return false;
    int64_t from = low, to = high;
    if (front) {
      // The owner's first run is three quarters of its share (all of it when it is the only one).
      const int64_t units = threads_ == 1 ? high - low : low == 0 ? high - high / 4 : chunk_;
      to = std::min(high, low + units);
    } else {
      from = std::max(low, high - chunk_);
    }
    const uint64_t rest = front
                              ? PackUnits(static_cast<uint64_t>(to), static_cast<uint64_t>(high))
                              : PackUnits(static_cast<uint64_t>(low), static_cast<uint64_t>(from));
    if (share.left.compare_exchange_weak(left, rest, std::memory_order_relaxed)) {
      *begin = share.first + from * unit_;
      *end = share.first + std::min(share.size, to * unit_);
      return true;
    }
  }
}

bool TeamRows::Next(int64_t* begin, int64_t* end) {
  const int t = TeamThread();
  if (t < threads_ && Take(shares_[t], /*front=*/true, begin, end)) return true;
  // Help the others, the next thread's share first.
  for (int i = 1; i <= threads_; ++i) {
    const int other = (t + i) % threads_;
    if (other != t && Take(shares_[other], /*front=*/false, begin, end)) return true;
  }
  return false;
}

}  // namespace blockflow
