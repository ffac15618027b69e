#!/usr/bin/env bash
# The sanitizer build, as CI runs it: clang with AddressSanitizer, UBSan and libFuzzer
# (BLOCKFLOW_FUZZ=ON, every report fatal), into build-sanitize/. Then every test except those
# labelled `slow` (the editor's offscreen tests included), and each fuzz target for
# FUZZ_SECONDS (60 by default). The Python module and the MPI runner are not built here: a
# sanitized extension module needs the ASan runtime preloaded into python, and mpirun's own
# processes are not instrumented; the normal build runs their tests. In unity batches
# (BLOCKFLOW_UNITY_BUILD), as tools/setup.sh builds: the test programs and the editor's library
# then compile in 5 minutes on 2 cores instead of 8.
#
#   bash tools/sanitize.sh                    # build and test
#   FUZZ_SECONDS=600 bash tools/sanitize.sh   # fuzz longer
#   BUILD_DIR=build-sanitize JOBS=2 CTEST_ARGS="-L fuzz"
set -euo pipefail
cd "$(dirname "$0")/.."

# The build's own packages (quietly, when present), plus clang and its OpenMP runtime.
SETUP_PACKAGES_ONLY=1 EXTRA_PACKAGES="clang libomp-dev libclang-rt-dev" bash tools/setup.sh

build_dir="${BUILD_DIR:-build-sanitize}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Ninja for a new directory, as in tools/setup.sh.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null; then
  export CMAKE_GENERATOR=Ninja
fi
# -O1 keeps the tests quick under ASan; line tables give reports file:line without -g's size.
CXX=clang++ cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" "${launcher[@]}" \
      -DBLOCKFLOW_FUZZ=ON -DBLOCKFLOW_FUZZ_SECONDS="${FUZZ_SECONDS:-60}" \
      -DBLOCKFLOW_BUILD_EDITOR=ON -DBLOCKFLOW_BUILD_TESTS=ON -DBLOCKFLOW_BUILD_BENCH=OFF \
      -DBLOCKFLOW_BUILD_PYTHON=OFF -DBLOCKFLOW_MPI=OFF -DBLOCKFLOW_UNITY_BUILD=ON >/dev/null
cmake --build "$build_dir" -j"${JOBS:-$(nproc)}"
echo "sanitize: built in ${SECONDS} s; the tests"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Leaks inside Qt's and fontconfig's one-time caches are theirs, not ours.
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0"
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 900 \
      -LE slow ${CTEST_ARGS:-}
