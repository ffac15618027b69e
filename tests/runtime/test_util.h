// Helpers for the runtime tests: run the `blockflow` binary as a user would, in a
// temporary folder, and capture its exit status, stdout and stderr.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/npy.h"

extern char** environ;

namespace blockflow::testing {

/// The blockflow program under test (a compile definition from CMake).
inline std::string BlockflowBinary() { return BLOCKFLOW_BINARY; }
/// The source tree (samples, docs, golden cases).
inline std::filesystem::path SourceDir() { return BLOCKFLOW_SOURCE_DIR; }

/// A fresh temporary folder, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("bf_runtime_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// Writes a text file (creating parent folders).
inline void WriteText(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Exit status and output of one run of the program.
struct CmdResult {
  int rc = -1;  // exit status, or 128 + signal
  std::string out, err;
};

/// A started (not yet finished) run of the program.
class Process {
 public:
  /// Starts `blockflow args...` in `cwd` with stdout and stderr captured to files.
  Process(const std::vector<std::string>& args, const std::string& cwd) : capture_() {
    const std::string bin = BlockflowBinary();
    std::vector<std::string> all = {bin};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(all.size() + 1);
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    out_path_ = capture_ / "stdout.txt";
    err_path_ = capture_ / "stderr.txt";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    const int rc = posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pid_ = -1;
  }
  pid_t pid() const { return pid_; }
  /// Waits for the exit and returns status and output.
  CmdResult Wait() {
    CmdResult r;
    if (pid_ <= 0) {
      r.err = "posix_spawn failed for " + BlockflowBinary();
      return r;
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadText(out_path_.string());
    r.err = ReadText(err_path_.string());
    pid_ = -1;
    return r;
  }
  ~Process() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
  }

 private:
  TempDir capture_;
  std::filesystem::path out_path_, err_path_;
  pid_t pid_ = -1;
};

/// Runs `blockflow args...` in `cwd` (default: the current folder) to completion.
inline CmdResult RunBlockflow(const std::vector<std::string>& args, const std::string& cwd = "") {
  Process p(args, cwd);
  return p.Wait();
}

/// Reads a .npy that may hold bfloat16 bits ('<u2').
inline Expected<Tensor> ReadAnyNpy(const std::string& path) {
  Expected<Tensor> t = ReadNpy(path);
  if (t.ok()) return t;
  return ReadNpy(path, DType::kBFloat16);
}

}  // namespace blockflow::testing
