#!/usr/bin/env bash
# Runs clang-tidy (checks and reasons in .clang-tidy) over every project .cc file, or over the
# files named on the command line, with the compile commands of build-tidy/ (configured here,
# not built). Prints the warnings; exits non-zero when there are any.
# Needs Debian's clang-tidy. About 10 minutes for the whole tree on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own configuration, without unity batches: with them the compile commands name only the
# batch files, and clang-tidy, finding no command for a source file, checked nothing.
build_dir="${BUILD_DIR:-build-tidy}"
cmake -S . -B "$build_dir" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DBLOCKFLOW_UNITY_BUILD=OFF >/dev/null
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' | grep -E '^(core|blocks|runtime|editor|python|bench|samples|tests)/')
fi
# A file named here without a compile command is an error, not a clean result (the whole tree's
# optional parts, such as the fuzz targets of a clang build, are left out when not configured).
for f in "$@"; do
  if ! grep -q "\"file\": \"$(pwd)/$f\"" "$build_dir/compile_commands.json"; then
    echo "tidy: no compile command for $f in $build_dir" >&2
    exit 1
  fi
done
log=$(mktemp)
# GCC-only warning flags in the compile commands are unknown to clang.
run-clang-tidy -p "$build_dir" -j "${JOBS:-$(nproc)}" -quiet -extra-arg=-Wno-unknown-warning-option \
  "${files[@]}" >"$log" 2>&1 || true
warnings=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' | sort -u || true)
rm -f "$log"
if [ -n "$warnings" ]; then
  echo "$warnings"
  echo "tidy: $(echo "$warnings" | wc -l) warning(s)" >&2
  exit 1
fi
echo "tidy: clean (${#files[@]} files)"
