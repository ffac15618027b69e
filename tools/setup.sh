#!/usr/bin/env bash
# Installs blockflow's Debian 12 build dependencies (when missing), then configures and
# builds into build/: everything, or only the targets named on the command line
# (`bash tools/setup.sh blockflow` installs what the program needs and builds it alone; a later
# run without arguments installs and builds the rest). Environment knobs:
#   BUILD_DIR=build  BUILD_TYPE=Release  BLOCKFLOW_WERROR=OFF  BLOCKFLOW_UNITY_BUILD=ON
#   JOBS=$(nproc)
#   SETUP_PACKAGES_ONLY=1: install the packages and stop; EXTRA_PACKAGES="...": install these
#   too (tools/sanitize.sh uses both)
set -euo pipefail
cd "$(dirname "$0")/.."

# The `blockflow` program alone needs only these; the rest is for the editor, the tests, the
# benchmarks, the Python module and the MPI runner.
packages=(build-essential cmake ninja-build pkg-config nlohmann-json3-dev)
rest=(libprotobuf-dev protobuf-compiler  # `blockflow import-tf` (BLOCKFLOW_BUILD_IMPORT_TF)
      libgtest-dev libgmock-dev libbenchmark-dev qt6-base-dev libgl-dev fonts-dejavu-core python3-numpy
      pybind11-dev python3-pybind11 python3-pytest python3-dev
      libgraphviz-dev             # the editor's View > Arrange (dot); optional
      libopenmpi-dev openmpi-bin  # these two: `blockflow run --shard` (BLOCKFLOW_MPI)
      libdnnl-dev ocl-icd-opencl-dev)  # oneDNN (its CMake files need OpenCL's), for the
                                       # bf_vs_onednn benchmark only (never linked into blockflow)
# `setup.sh blockflow` installs and configures only what running a graph needs (the first result
# comes sooner: no GraphDef import, so no protobuf); any other call sets up everything. Both
# compile the libraries in unity batches (BLOCKFLOW_UNITY_BUILD), which halves a fresh build.
program_only=OFF
[ "$*" = "blockflow" ] && program_only=ON
[ "$program_only" = OFF ] && packages+=("${rest[@]}")
# shellcheck disable=SC2206
packages+=(${EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "${SETUP_PACKAGES_ONLY:-0}" = 1 ] && exit 0

build_dir="${BUILD_DIR:-build}"
# A new build directory gets Ninja: it compiles a target's sources while the libraries the target
# links are still being built, where make waits for them (one core idled while the other compiled
# the depthwise kernels). CMake reads CMAKE_GENERATOR only for a directory it has not configured,
# so one configured before keeps its generator; a CMAKE_GENERATOR of your own wins.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null; then
  export CMAKE_GENERATOR=Ninja
fi
everything=ON
[ "$program_only" = ON ] && everything=OFF
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
      -DBLOCKFLOW_WERROR="${BLOCKFLOW_WERROR:-OFF}" -DBLOCKFLOW_BUILD_EDITOR=$everything \
      -DBLOCKFLOW_BUILD_TESTS=$everything -DBLOCKFLOW_BUILD_BENCH=$everything \
      -DBLOCKFLOW_BUILD_PYTHON=$everything -DBLOCKFLOW_MPI=$everything \
      -DBLOCKFLOW_BUILD_IMPORT_TF=$everything -DBLOCKFLOW_UNITY_BUILD="${BLOCKFLOW_UNITY_BUILD:-ON}" \
      >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"${JOBS:-$(nproc)}" ${targets[@]+"${targets[@]}"}
