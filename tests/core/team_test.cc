// Teams of threads (core/team.h): every thread of a team runs the body once with its own number,
// shares split as OpenMP's static schedule splits, barriers order writes, and teams nest, run
// side by side from several callers, inside a caller's OpenMP region, and in a forked child, on
// the pool and on OpenMP alike.
#include "core/team.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace blockflow {
namespace {

// Sets the team runtime while alive; the one before again after.
class RuntimeSetting {
 public:
  explicit RuntimeSetting(TeamRuntime runtime) : before_(GetTeamRuntime()) {
    SetTeamRuntime(runtime);
  }
  ~RuntimeSetting() { SetTeamRuntime(before_); }
  RuntimeSetting(const RuntimeSetting&) = delete;
  RuntimeSetting& operator=(const RuntimeSetting&) = delete;

 private:
  TeamRuntime before_;
};

const char* Name(TeamRuntime runtime) { return runtime == TeamRuntime::kPool ? "pool" : "OpenMP"; }

// What each thread of a team saw, by its number.
struct Seen {
  std::vector<int> calls, sizes, levels;
  explicit Seen(int threads) : calls(threads, 0), sizes(threads, 0), levels(threads, -1) {}
};

Seen SeenBy(int threads) {
  Seen seen(std::max(threads, 1));
  RunTeam(threads, [&] {
    const auto t = static_cast<size_t>(TeamThread());
    ++seen.calls[t];
    seen.sizes[t] = TeamSize();
    seen.levels[t] = omp_get_level();
  });
  return seen;
}

TEST(Teams, EveryThreadRunsTheBodyOnce) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    for (int threads : {1, 2, 3, 4, 2}) {
      const Seen seen = SeenBy(threads);
      for (int t = 0; t < threads; ++t) {
        const auto i = static_cast<size_t>(t);
        EXPECT_EQ(seen.calls[i], 1) << Name(runtime) << ", thread " << t << " of " << threads;
        EXPECT_EQ(seen.sizes[i], threads) << Name(runtime) << ", thread " << t;
        // The pool's threads and one thread alone run outside OpenMP; OpenMP's in a region.
        const int level = threads > 1 && runtime == TeamRuntime::kOpenMp ? 1 : 0;
        EXPECT_EQ(seen.levels[i], level) << Name(runtime) << ", thread " << t << " of " << threads;
      }
    }
  }
  // Zero threads asked for: one.
  EXPECT_EQ(SeenBy(0).calls[0], 1);
}

// OpenMP unless BLOCKFLOW_TEAMS=pool (the tests run without it).
TEST(Teams, OpenMpByDefault) {
  const char* env = std::getenv("BLOCKFLOW_TEAMS");
  const bool pool = env != nullptr && std::string(env) == "pool";
  EXPECT_EQ(GetTeamRuntime(), pool ? TeamRuntime::kPool : TeamRuntime::kOpenMp);
}

TEST(Teams, OutsideATeamTheCallerIsAloneInOne) {
  EXPECT_EQ(TeamThread(), 0);
  EXPECT_EQ(TeamSize(), 1);
  TeamBarrier();  // returns at once
  EXPECT_EQ(TeamShare(7), std::make_pair(int64_t{0}, int64_t{7}));
}

// TeamShare gives each thread what `omp for schedule(static)` gives it, so kernels split the
// same on either runtime (and filter gradients sum the same partial sums).
TEST(Teams, SharesSplitAsOpenMpsStaticSchedule) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    for (int threads = 1; threads <= 4; ++threads) {
      for (int64_t n : {0, 1, 2, 3, 5, 8, 13, 100}) {
        std::vector<int> share(static_cast<size_t>(n), -1), openmp(static_cast<size_t>(n), -1);
        RunTeam(threads, [&] {
          const auto [begin, end] = TeamShare(n);
          for (int64_t i = begin; i < end; ++i) share[static_cast<size_t>(i)] = TeamThread();
        });
#pragma omp parallel num_threads(threads)
        {
#pragma omp for schedule(static)
          for (int64_t i = 0; i < n; ++i) openmp[static_cast<size_t>(i)] = omp_get_thread_num();
        }
        EXPECT_EQ(share, openmp) << Name(runtime) << ", " << n << " items, " << threads
                                 << " threads";
      }
    }
  }
}

// Each row of a TeamRows goes to exactly one thread, in runs that lie inside [0, n), on either
// runtime, for every team size, where the team is a thread short of the shares (it takes the
// missing share) and where it has a thread more (that thread only helps).
TEST(TeamRows, EveryRowGoesToOneThread) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    for (int threads = 1; threads <= 4; ++threads) {
      for (int shares = std::max(threads - 1, 1); shares <= threads + 1; ++shares) {
        for (int64_t n : {0, 1, 2, 3, 5, 8, 13, 100, 1000}) {
          std::vector<std::atomic<int>> taken(static_cast<size_t>(n));
          std::atomic<int> outside{0};
          TeamRows rows(n, shares);
          RunTeam(threads, [&] {
            for (int64_t begin, end; rows.Next(&begin, &end);) {
              if (begin < 0 || end > n || begin >= end) ++outside;
              for (int64_t r = std::max<int64_t>(begin, 0); r < std::min(end, n); ++r)
                ++taken[static_cast<size_t>(r)];
            }
          });
          EXPECT_EQ(outside.load(), 0) << Name(runtime) << ", " << n << " rows";
          for (int64_t r = 0; r < n; ++r)
            ASSERT_EQ(taken[static_cast<size_t>(r)].load(), 1)
                << Name(runtime) << ", row " << r << " of " << n << ", " << threads
                << " threads for " << shares << " shares";
        }
      }
    }
  }
}

// The same many times over, on few rows (runs of one row) so that the threads take from the
// same shares at once: a take that is not atomic shows as a row taken twice or never.
TEST(TeamRows, RowsTakenAtOnceStillGoToOneThread) {
  for (int round = 0; round < 300; ++round) {
    for (int threads = 2; threads <= 4; ++threads) {
      constexpr int64_t kRows = 61;
      std::vector<std::atomic<int>> taken(kRows);
      TeamRows rows(kRows, threads);
      RunTeam(threads, [&] {
        for (int64_t begin, end; rows.Next(&begin, &end);)
          for (int64_t r = begin; r < end; ++r) ++taken[static_cast<size_t>(r)];
      });
      for (int64_t r = 0; r < kRows; ++r)
        ASSERT_EQ(taken[static_cast<size_t>(r)].load(), 1)
            << "round " << round << ", row " << r << ", " << threads << " threads";
    }
  }
}

// Outside a team the caller is thread 0 of a team of one: it takes its own share front first
// (three quarters of it in one run, then sixteenths of the largest share), then the others'
// from their backs, the next thread's first; together every row once.
TEST(TeamRows, ATeamOfOneTakesTheOtherSharesFromTheirBacks) {
  TeamRows rows(64, 2);  // shares [0, 32) and [32, 64); runs after the first of 2 rows
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t begin, end; rows.Next(&begin, &end);) runs.emplace_back(begin, end);
  std::vector<std::pair<int64_t, int64_t>> expected = {
      {0, 24}, {24, 26}, {26, 28}, {28, 30}, {30, 32}};
  for (int64_t high = 64; high > 32; high -= 2) expected.emplace_back(high - 2, high);
  EXPECT_EQ(runs, expected);
  // Three shares of 16: the next thread's share before the one after it; runs of one row.
  TeamRows three(48, 3);
  runs.clear();
  for (int64_t begin, end; three.Next(&begin, &end);) runs.emplace_back(begin, end);
  expected = {{0, 12}, {12, 13}, {13, 14}, {14, 15}, {15, 16}};
  for (int64_t high = 32; high > 16; --high) expected.emplace_back(high - 1, high);
  for (int64_t high = 48; high > 32; --high) expected.emplace_back(high - 1, high);
  EXPECT_EQ(runs, expected);
  // A single share goes in one run.
  TeamRows one(10, 1);
  runs.clear();
  for (int64_t begin, end; one.Next(&begin, &end);) runs.emplace_back(begin, end);
  EXPECT_EQ(runs, (std::vector<std::pair<int64_t, int64_t>>{{0, 10}}));
}

// Shares of more than 2^31 rows are handed out in units of several rows (the counts are kept
// in 32 bits): the runs still cover [0, n) exactly, each share's last run cut at its end (with 2
// and 3 threads the first share is not a whole number of units: 6 and 4 rows).
TEST(TeamRows, SharesPast32BitsGoInUnitsOfRows) {
  const int64_t n = (int64_t{5} << 32) + 5;
  for (int threads : {1, 2, 3}) {
    TeamRows rows(n, threads);
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t begin, end; rows.Next(&begin, &end);) runs.emplace_back(begin, end);
    std::sort(runs.begin(), runs.end());
    ASSERT_FALSE(runs.empty());
    EXPECT_EQ(runs.front().first, 0) << threads << " threads";
    EXPECT_EQ(runs.back().second, n) << threads << " threads";
    for (size_t i = 1; i < runs.size(); ++i)
      ASSERT_EQ(runs[i].first, runs[i - 1].second) << "run " << i << ", " << threads << " threads";
    EXPECT_LT(runs.size(), 200U) << threads << " threads";
  }
}

// A thread that has not started yet when another is done with its own share has its rows taken:
// here thread 1 waits until thread 0 has seen the last row taken, so thread 0 computes them all.
TEST(TeamRows, AThreadDoneEarlyTakesTheRowsOfOneThatIsLate) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    TeamRows rows(100, 2);
    std::vector<int64_t> done(2, 0);
    std::atomic<bool> first_done{false};
    int size = 0;
    RunTeam(2, [&] {
      const int t = TeamThread();
      if (t == 0) size = TeamSize();
      if (t == 1) {
        while (!first_done.load()) std::this_thread::yield();
      }
      for (int64_t begin, end; rows.Next(&begin, &end);)
        done[static_cast<size_t>(t)] += end - begin;
      if (t == 0) first_done.store(true);
    });
    ASSERT_EQ(size, 2) << Name(runtime);
    EXPECT_EQ(done, std::vector<int64_t>({100, 0})) << Name(runtime);
  }
}

// Each round every thread writes its slot, meets the others, and reads every slot: a barrier
// that let a thread through early shows as a slot of the round before.
TEST(Teams, BarriersOrderWrites) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    for (int threads : {2, 3}) {
      constexpr int kRounds = 2000;
      std::vector<int> slot(static_cast<size_t>(threads), -1);
      std::atomic<int> stale{0};
      RunTeam(threads, [&] {
        const int t = TeamThread(), size = TeamSize();
        for (int round = 0; round < kRounds; ++round) {
          std::atomic_ref<int>(slot[static_cast<size_t>(t)])
              .store(round, std::memory_order_relaxed);
          TeamBarrier();
          for (int other = 0; other < size; ++other) {
            const int value = std::atomic_ref<int>(slot[static_cast<size_t>(other)])
                                  .load(std::memory_order_relaxed);
            if (value != round) stale.fetch_add(1);
          }
          TeamBarrier();
        }
      });
      EXPECT_EQ(stale.load(), 0) << Name(runtime) << ", " << threads << " threads";
    }
  }
}

// A team started by a thread of another team has numbers of its own, and the thread has its
// outer number back after it.
TEST(Teams, NestedTeamsNumberTheirOwnThreads) {
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    std::vector<int> inner_calls(2, 0), outer_after(2, -1);
    std::vector<std::vector<int>> inner(2, std::vector<int>(2, 0));
    RunTeam(2, [&] {
      const int outer = TeamThread();
      RunTeam(2, [&] {
        // The nested region may get one thread (OpenMP's nesting off): count what it got.
        ++inner[static_cast<size_t>(outer)][static_cast<size_t>(TeamThread())];
        if (TeamThread() == 0) inner_calls[static_cast<size_t>(outer)] = TeamSize();
      });
      outer_after[static_cast<size_t>(outer)] = TeamThread();
    });
    for (size_t outer = 0; outer < 2; ++outer) {
      EXPECT_EQ(outer_after[outer], static_cast<int>(outer)) << Name(runtime);
      const int size = inner_calls[outer];
      EXPECT_GE(size, 1) << Name(runtime);
      // Inside a pool team a team runs alone (an OpenMP region on each pool thread would start
      // threads of its own on CPUs the pool already has).
      if (runtime == TeamRuntime::kPool) {
        EXPECT_EQ(size, 1) << "outer thread " << outer;
      }
      for (int t = 0; t < 2; ++t) {
        EXPECT_EQ(inner[outer][static_cast<size_t>(t)], t < size ? 1 : 0)
            << Name(runtime) << ", outer thread " << outer << ", inner thread " << t;
      }
    }
  }
}

// TeamLimit knows in advance what a team gets: at least one, and one inside a pool team.
TEST(Teams, TeamLimitIsOneInsideAPoolTeam) {
  EXPECT_EQ(TeamLimit(0), 1);
  EXPECT_EQ(TeamLimit(1), 1);
  EXPECT_EQ(TeamLimit(3), std::clamp(omp_get_thread_limit(), 1, 3));
  const RuntimeSetting setting(TeamRuntime::kPool);
  std::vector<int> limits(2, -1), sizes(2, -1);
  RunTeam(2, [&] {
    limits[static_cast<size_t>(TeamThread())] = TeamLimit(2);
    sizes[static_cast<size_t>(TeamThread())] = TeamSize();
  });
  if (sizes[0] != 2 || omp_get_level() != 0) GTEST_SKIP() << "no two-thread pool team here";
  EXPECT_EQ(limits, std::vector<int>(2, 1));
}

// Two deep inside a pool team (a team run alone there, and one inside that), teams still run
// alone: the one-thread team between does not hide the pool team around it.
TEST(Teams, TeamsTwoDeepInAPoolTeamRunAlone) {
  const RuntimeSetting setting(TeamRuntime::kPool);
  std::vector<int> limits(2, -1), sizes(2, -1), levels(2, -1);
  RunTeam(2, [&] {
    const auto outer = static_cast<size_t>(TeamThread());
    RunTeam(2, [&] {
      RunTeam(2, [&] {
        if (TeamThread() != 0) return;
        limits[outer] = TeamLimit(2);
        sizes[outer] = TeamSize();
        levels[outer] = omp_get_level();
      });
    });
  });
  EXPECT_EQ(limits, std::vector<int>(2, 1));
  EXPECT_EQ(sizes, std::vector<int>(2, 1));
  EXPECT_EQ(levels, std::vector<int>(2, 0));  // no OpenMP region either
}

// An exception leaving a team's body ends the process on either runtime, as it does from an
// OpenMP region, rather than leave the other threads working on the caller's unwound frame.
TEST(TeamsDeathTest, AnExceptionLeavingATeamEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (TeamRuntime runtime : {TeamRuntime::kPool, TeamRuntime::kOpenMp}) {
    const RuntimeSetting setting(runtime);
    EXPECT_DEATH(
        {
          RunTeam(2, [] {
            if (TeamThread() == 0) throw std::runtime_error("from thread 0");
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          });
        },
        "")
        << Name(runtime);
  }
}

// Inside a caller's active OpenMP region a team is an OpenMP region of its own (level 2), not
// the pool, and each caller thread's team covers all the work.
TEST(Teams, InsideACallersOpenMpRegionTeamsAreOpenMpRegions) {
  const RuntimeSetting setting(TeamRuntime::kPool);
  std::vector<int> levels(2, -1), covered(2, 0);
  int outer = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    outer = omp_get_num_threads();
    const auto caller = static_cast<size_t>(omp_get_thread_num());
    std::atomic<int> items{0};
    RunTeam(2, [&] {
      if (TeamThread() == 0) levels[caller] = omp_get_level();
      const auto [begin, end] = TeamShare(10);
      items.fetch_add(static_cast<int>(end - begin));
    });
    covered[caller] = items.load();
  }
  if (outer != 2) GTEST_SKIP() << "OpenMP gives no second thread here";
  for (size_t caller = 0; caller < 2; ++caller) {
    EXPECT_EQ(levels[caller], 2) << "caller " << caller;
    EXPECT_EQ(covered[caller], 10) << "caller " << caller;
  }
}

// Callers on threads of their own start teams at once: one has the pool, the others OpenMP
// regions, and every team covers its work.
TEST(Teams, CallersSideBySideEachGetATeam) {
  const RuntimeSetting setting(TeamRuntime::kPool);
  constexpr int kCallers = 3, kTeams = 300;
  std::vector<int> wrong(kCallers, 0);
  std::vector<std::thread> callers;
  callers.reserve(kCallers);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&wrong, c] {
      for (int i = 0; i < kTeams; ++i) {
        std::atomic<int64_t> sum{0};
        RunTeam(2, [&] {
          const auto [begin, end] = TeamShare(100);
          int64_t mine = 0;
          for (int64_t k = begin; k < end; ++k) mine += k;
          sum.fetch_add(mine);
          TeamBarrier();
        });
        if (sum.load() != 4950) ++wrong[static_cast<size_t>(c)];
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(wrong, std::vector<int>(kCallers, 0));
}

// A child made by fork() has none of its parent's pool threads: its teams run on a pool of its
// own. (With the parent's pool it would wait forever for threads it does not have: the alarm
// turns that into a failure.)
TEST(Teams, AForkedChildRunsTeams) {
  const RuntimeSetting setting(TeamRuntime::kPool);
  EXPECT_EQ(SeenBy(2).calls, std::vector<int>({1, 1}));  // the parent's pool started
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);
    const Seen seen = SeenBy(2);
    _exit(seen.calls == std::vector<int>({1, 1}) && seen.levels == std::vector<int>({0, 0}) ? 0
                                                                                            : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace blockflow
