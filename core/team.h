// Teams of threads for the kernels' parallel regions: fork, work, join, with barriers between.
//
//   RunTeam(threads, [&] {
//     const auto [begin, end] = TeamShare(rows);  // this thread's rows
//     for (int64_t r = begin; r < end; ++r) Row(r, TeamThread());
//   });
//
// A team of two or more threads is an OpenMP parallel region by default. With the pool
// (BLOCKFLOW_TEAMS=pool, or SetTeamRuntime) it runs on the process's own threads instead where
// it can: called outside any active OpenMP region while no other caller has the pool. Those
// threads spin for 5 ms between teams (if the team fitted the usable CPUs; else not at all) and
// then sleep, counting themselves, so that starting or joining a team makes no system call while
// they spin; GCC's OpenMP runtime makes one or more
// futex calls for every region and barrier, about 1 us each on a virtual machine. The pool suits
// a process where blockflow is the only user of threads: another runtime's spinning threads
// (GCC's OpenMP spins 5 ms after every region, oneDNN and many libraries use it) share the CPUs
// with the pool's, and on two CPUs the scheduler then often puts both threads of a team on one
// (measured: a two-thread depthwise call 0.06 ms alone, 0.2-1 ms in a process that also ran
// oneDNN). Everywhere else (inside a caller's active OpenMP region, the pool busy) the team is
// an OpenMP region, which may give fewer threads than asked (TeamSize says how many). A team
// started inside a pool team of two or more runs alone, as one inside an OpenMP region does
// while OpenMP's nesting is off (its default). Kernels give the same bits on either runtime (they
// split their work the same way, or, with TeamRows, compute each row the same on any thread). A
// team's body must not call fork(): the child would wait for the pool's threads, which it does not
// have.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace blockflow {

/// Where teams of two or more threads run: OpenMP parallel regions (the default) or the pool.
enum class TeamRuntime { kPool, kOpenMp };

/// Sets the runtime of the teams started after it. The environment variable BLOCKFLOW_TEAMS=pool
/// chooses the pool from the start.
void SetTeamRuntime(TeamRuntime runtime);
TeamRuntime GetTeamRuntime();

/// Makes the pool's threads that spin between teams sleep now rather than at the end of their
/// spin (5 ms): for a caller about to hand the CPUs to another thread runtime (a benchmark
/// before oneDNN's OpenMP regions, say), whose threads would otherwise share them with the
/// spinning ones. The next team wakes them.
void RestTeamThreads();

namespace team_internal {
void Run(int threads, void (*body)(const void*), const void* arg);
}  // namespace team_internal

/// Runs body() once on each thread of a team of `threads`, the calling thread among them as
/// thread 0, and returns when every thread has returned. One thread (or fewer) runs body() on
/// the calling thread alone. The body must not throw: in a team of two or more an exception
/// leaving it ends the process (std::terminate), on either runtime.
template <typename Body>
void RunTeam(int threads, const Body& body) {
  team_internal::Run(
      threads, [](const void* b) { (*static_cast<const Body*>(b))(); }, &body);
}

/// The most threads a team asking for `threads` started here gets, where that is known in
/// advance: one inside a pool team of two or more, or inside an OpenMP region when no more
/// levels may be active (OMP_MAX_ACTIVE_LEVELS); at most OMP_THREAD_LIMIT. An OpenMP region can
/// still give fewer (OMP_DYNAMIC): TeamSize says what a team got.
int TeamLimit(int threads);

/// The calling thread's number in its innermost team, and the team's size: 0 and 1 outside any.
int TeamThread();
int TeamSize();

/// Waits until every thread of the calling thread's team has arrived; writes made before it
/// are seen by every thread after it. Returns at once outside a team.
void TeamBarrier();

/// The calling thread's share [begin, end) of [0, n) split over its team: contiguous, in thread
/// order, the first n % size threads one item more (OpenMP's static schedule).
std::pair<int64_t, int64_t> TeamShare(int64_t n);

/// Rows [0, n) that a team of `threads` shares out as it works, for rows whose results depend
/// neither on which thread computes them nor on the order a thread takes them in (not
/// per-thread sums: their bits would follow the timing). Each thread starts on its static share
/// (TeamShare's split over `threads`), taking the first three quarters of it at once (all of it
/// with one share) and then a sixteenth of the largest share at a time; a thread whose share is
/// used up then takes sixteenths from the backs of the others' shares, the next thread's first. A
/// thread that runs slower than the others (its CPU busy with another guest of the host, an
/// interrupt, a preemption) thus hands its last rows to one that is done, where with static
/// shares the whole team would wait for it. Every row goes to exactly one thread whatever the
/// team's size: a team smaller than `threads` takes the missing threads' shares as well, and
/// threads numbered `threads` or more only help. Built outside the team (it allocates).
///
///   TeamRows rows(n, nt);
///   RunTeam(nt, [&] {
///     for (int64_t begin, end; rows.Next(&begin, &end);)
///       for (int64_t r = begin; r < end; ++r) Row(r, TeamThread());
///   });
class TeamRows {
 public:
  TeamRows(int64_t n, int threads);
  /// The calling thread's next run [begin, end) of rows, true; false once every row is taken.
  bool Next(int64_t* begin, int64_t* end);

 private:
  struct alignas(64) Share {
    int64_t first = 0, size = 0;  // the share's rows, [first, first + size)
    // The share's rows not taken yet, counted in units from `first`: [low, high) as
    // low | high << 32 (one word, so that the owner and a helper take from it atomically).
    std::atomic<uint64_t> left{0};
  };
  bool Take(Share& share, bool front, int64_t* begin, int64_t* end) const;

  std::unique_ptr<Share[]> shares_;
  int threads_ = 1;
  int64_t unit_ = 1, chunk_ = 1;  // rows in a unit; units taken at a time after the first
};

}  // namespace blockflow
