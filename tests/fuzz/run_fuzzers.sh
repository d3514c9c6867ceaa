#!/usr/bin/env bash
# Builds only the libFuzzer harnesses with clang (ASan + UBSan + fuzzer coverage) in their own
# build directory and runs each one for a short while from its checked-in seed corpus.
# Usage: tests/fuzz/run_fuzzers.sh [seconds per harness, default 20]
# Env: SIEVE_FUZZ_BUILD_DIR (default build-fuzz). New inputs go to $build/fuzz-corpus/<name>,
# crashes to $build/fuzz-artifacts/ (the seed corpus in the source tree is not modified).
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-20}
build=${SIEVE_FUZZ_BUILD_DIR:-build-fuzz}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DSIEVE_BUILD_FUZZERS=ON -DSIEVE_SANITIZE=address,undefined \
      -DSIEVE_WITH_CUDA=OFF -DSIEVE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target sieve_fuzzers

mkdir -p "$build/fuzz-artifacts"
# fuzz_api_sequence runs real communicators: UCX as in scripts/test.sh's sanitizer build (its
# malloc hooks away from ASan's, its own allocations suppressed in LeakSanitizer), loopback.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no UCX_LOG_LEVEL=error
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_odr_violation=0"
status=0
for src in tests/fuzz/fuzz_*.cc; do
  name=$(basename "$src" .cc)
  name=${name#fuzz_}
  work="$build/fuzz-corpus/$name"
  mkdir -p "$work"
  seeds=("tests/fuzz/corpus/$name")
  if [ -d "tests/fuzz/known/$name" ]; then seeds+=("tests/fuzz/known/$name"); fi  # found bugs
  echo "== fuzz_$name: ${seconds} s ==" >&2
  if ! "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -max_len=4096 \
        -artifact_prefix="$build/fuzz-artifacts/$name-" -print_final_stats=1 \
        "$work" "${seeds[@]}" 2>"$build/fuzz-$name.log"; then
    tail -40 "$build/fuzz-$name.log" >&2
    echo "fuzz_$name FAILED (input in $build/fuzz-artifacts/)" >&2
    status=1
  else
    grep -E 'stat::number_of_executed_units|cov:' "$build/fuzz-$name.log" | tail -2 >&2
  fi
done
exit $status
