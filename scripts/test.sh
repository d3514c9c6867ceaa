#!/usr/bin/env bash
# Installs, builds and runs every test that needs no GPU: the Release build (every test),
# then an AddressSanitizer + UndefinedBehaviorSanitizer build of the tests labelled
# `sanitize` (tests/CMakeLists.txt: the in-process ones, which run every collective and
# codec with ranks as threads, and the multi-process misuse, failure and membership tests),
# then a ThreadSanitizer build of the threading tests.
# Last, the libFuzzer harnesses (clang, their own build-fuzz/) run 10 s each from their corpus.
# The sanitizer and fuzzer builds compile at -O1 (CMakeLists.txt: at -O3 they were most of CI's time).
# Every stage runs even when an earlier one failed; the script fails at the end, naming
# the stages that failed.
# Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."

failed=()
stage() {  # stage NAME COMMAND...: runs the command, remembers NAME when it fails
  local name=$1
  shift
  local start=$SECONDS
  if "$@"; then
    echo "== $name: passed in $((SECONDS - start)) s ==" >&2
  else
    echo "== $name: FAILED after $((SECONDS - start)) s ==" >&2
    failed+=("$name")
  fi
}
in_dir() { (cd "$1" && shift && "$@"); }

scripts/setup.sh
# Local ranks talk over loopback only (tests never use other interfaces).
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
# Single-process tests two at a time (2 cores); multi-process ones alone, so that no
# test's ranks share the cores with another test's.
stage "release, single-process tests" in_dir build ctest --output-on-failure -L unit -LE cuda -j2 --timeout 900
stage "release, multi-process tests" in_dir build ctest --output-on-failure -LE 'cuda|unit' --timeout 900

if [ "${1:-}" != "--no-sanitizers" ]; then
  echo "== sanitizer build (address,undefined) ==" >&2
  SIEVE_BUILD_DIR=build-asan \
  SIEVE_CMAKE_ARGS="-DSIEVE_SANITIZE=address,undefined -DSIEVE_BUILD_BENCH=OFF -DSIEVE_WITH_CUDA=OFF" \
    SIEVE_BUILD_TARGET=sanitizer_tests scripts/setup.sh
  # UCX's own allocations are reported at exit by LeakSanitizer: suppress
  # those (only UCX's), and keep UCX's malloc hooks away from ASan's.
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS="detect_odr_violation=0" UBSAN_OPTIONS="print_stacktrace=1"
  export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
  stage "address+undefined sanitizers, single-process tests" \
    in_dir build-asan ctest --output-on-failure -L unit-sanitize -j2 --timeout 1800
  stage "address+undefined sanitizers, multi-process tests" \
    in_dir build-asan ctest --output-on-failure -L mp-sanitize --timeout 1800

  # ThreadSanitizer on the threading tests only (abort from another thread,
  # GetAsyncError polling during collectives, non-blocking communicators, two
  # threads on one communicator, revoke from another thread (membership), the GPU
  # progress engine and device paths over the fake device (two ranks: under TSan each
  # fake-device test takes 10-80 s, and more ranks add no threads), the loopback transport with
  # ranks as threads on a few rank counts): only their targets are built.
  echo "== thread sanitizer build (threading tests) ==" >&2
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIEVE_SANITIZE=thread \
    -DSIEVE_BUILD_BENCH=OFF -DSIEVE_WITH_CUDA=OFF >/dev/null
  cmake --build build-tsan -j"$(nproc)" --target abort_async_mp_test errors_mp_test nonblocking_mp_test \
    misuse_mp_test membership_mp_test gpu_fake_mp_test gpu_host_test transport_test \
    loopback_test
  export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  stage "thread sanitizer" in_dir build-tsan ctest --output-on-failure --timeout 600 \
     -R 'AbortAsyncTest|ErrorsTest.AbortFromAnotherThread|NonBlockingTest|ProgressEngine|StagingPool|DeviceScratch|DeviceFakeMp\.(TwoRanks|NonBlocking)|DeviceDirectFakeMp\.TwoRanks|DeviceTernaryFakeMp|DeviceRulesFakeMp|Threads\.|EndedInGroup\.AbortFromAnotherThread|ConformanceTest.*LOOPBACK|LoopbackTest|LoopbackFailuresTest|LoopbackPointToPoint|LoopbackDenseTest.*/3$|LoopbackForcedAlgoTest.*"RING", 5.$|LoopbackCodecTest.*", 5.$|RevokeTest'
fi

echo "== fuzzing (libFuzzer, clang) ==" >&2
stage "fuzzing" tests/fuzz/run_fuzzers.sh "${SIEVE_FUZZ_SECONDS:-10}"

if [ ${#failed[@]} -gt 0 ]; then
  printf '== FAILED: %s ==\n' "${failed[@]}" >&2
  exit 1
fi
echo "== every stage passed (${SECONDS} s) ==" >&2
