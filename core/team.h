// Teams of threads for the kernels' parallel regions: fork, work, join, with barriers between.
//
//   RunTeam(threads, [&] {
//     const auto [begin, end] = TeamShare(rows);  // this thread's rows
//     for (int64_t r = begin; r < end; ++r) Row(r, TeamThread());
//   });
//
// A team of two or more threads runs on the process's own pool of threads where it can: called
// outside any active OpenMP region while no other caller has the pool. Its threads spin for a
// while between teams and then sleep, counting themselves, so that starting or joining a team
// makes no system call while they spin. GCC's OpenMP runtime makes one or more futex calls for
// every parallel region and every barrier, each about 1 us on a virtual machine, where a small
// layer's whole two-thread call takes 20-100 us. Everywhere else (inside a caller's active
// OpenMP region, the pool busy, or SetTeamRuntime(kOpenMp)) the team is an OpenMP parallel
// region, which may give fewer threads than asked (TeamSize says how many).
#pragma once

#include <cstdint>
#include <utility>

namespace blockflow {

/// Where teams of two or more threads run: the pool (the default) or OpenMP parallel regions.
enum class TeamRuntime { kPool, kOpenMp };

/// Sets the runtime of the teams started after it (tests, and A/B measurements). The environment
/// variable BLOCKFLOW_TEAMS=openmp chooses OpenMP from the start.
void SetTeamRuntime(TeamRuntime runtime);
TeamRuntime GetTeamRuntime();

namespace team_internal {
void Run(int threads, void (*body)(const void*), const void* arg);
}  // namespace team_internal

/// Runs body() once on each thread of a team of `threads`, the calling thread among them as
/// thread 0, and returns when every thread has returned. One thread (or fewer) runs body() on
/// the calling thread alone. The body must not throw.
template <typename Body>
void RunTeam(int threads, const Body& body) {
  team_internal::Run(
      threads, [](const void* b) { (*static_cast<const Body*>(b))(); }, &body);
}

/// The calling thread's number in its innermost team, and the team's size: 0 and 1 outside any.
int TeamThread();
int TeamSize();

/// Waits until every thread of the calling thread's team has arrived; writes made before it
/// are seen by every thread after it. Returns at once outside a team.
void TeamBarrier();

/// The calling thread's share [begin, end) of [0, n) split over its team: contiguous, in thread
/// order, the first n % size threads one item more (OpenMP's static schedule).
std::pair<int64_t, int64_t> TeamShare(int64_t n);

}  // namespace blockflow
