#!/usr/bin/env bash
# Installs, builds and runs every test that needs no GPU: the Release build (every test),
# then an AddressSanitizer + UndefinedBehaviorSanitizer build of the tests labelled
# `sanitize` (tests/CMakeLists.txt: the in-process ones, which run every collective and
# codec with ranks as threads, and the multi-process misuse, failure and membership tests),
# then a ThreadSanitizer build of the threading tests.
# Last, the libFuzzer harnesses (clang, their own build-fuzz/) run 10 s each from their corpus.
# The sanitizer and fuzzer builds compile at -O1 (CMakeLists.txt: at -O3 they were most of CI's time).
# Every stage runs even when an earlier one failed; the script fails at the end, naming
# the stages that failed and, for ctest stages, the tests with the end of their output.
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

# CI shows only the end of what this script prints, and the sanitizer and fuzzer builds
# print much after the release tests: so the tests that failed in a ctest stage, with the
# end of their output, are printed again last.
failure_report=$(mktemp)
trap 'rm -f "$failure_report"' EXIT
ctest_stage() {  # ctest_stage NAME BUILD_DIR CTEST_ARGS...
  local name=$1 dir=$2
  shift 2
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"  # a list from an earlier run
  stage "$name" in_dir "$dir" ctest --output-on-failure "$@"
  if [ ${#failed[@]} -gt 0 ] && [ "${failed[-1]}" = "$name" ]; then
    report_failed_tests "$name" "$dir/Testing/Temporary" >>"$failure_report"
  fi
}
report_failed_tests() {  # report_failed_tests STAGE CTEST_TEMPORARY_DIR
  local list=$2/LastTestsFailed.log shown=0
  [ -f "$list" ] || { echo "-- $1: no list of failed tests (ctest failed to run?) --"; return; }
  while IFS= read -r entry; do
    local test=${entry#*:}
    if [ $((shown += 1)) -gt 5 ]; then
      echo "-- $1: $test also failed (output above) --"
      continue
    fi
    echo "-- $1: $test failed; the end of its output: --"
    # LastTest.log holds each test's section from "I/N Testing: NAME" to "\"NAME\" end time".
    awk -v t="$test" '
      { line = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", line) }
      line == t && $0 != t { on = 1; section = "" }
      on { section = section $0 "\n" }
      on && index($0, "\"" t "\" end time:") == 1 { on = 0; last = section }
      END { printf "%s", last }' "$2/LastTest.log" | tail -n 40 || true  # a report, never a new failure
  done <"$list"
}

scripts/setup.sh
# Local ranks talk over loopback only (tests never use other interfaces).
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
# Single-process tests two at a time (2 cores); multi-process ones alone, so that no
# test's ranks share the cores with another test's.
ctest_stage "release, single-process tests" build -L unit -LE cuda -j2 --timeout 900
ctest_stage "release, multi-process tests" build -LE 'cuda|unit' --timeout 900

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
  ctest_stage "address+undefined sanitizers, single-process tests" \
    build-asan -L unit-sanitize -j2 --timeout 1800
  ctest_stage "address+undefined sanitizers, multi-process tests" \
    build-asan -L mp-sanitize --timeout 1800

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
  ctest_stage "thread sanitizer" build-tsan --timeout 600 \
     -R 'AbortAsyncTest|ErrorsTest.AbortFromAnotherThread|NonBlockingTest|ProgressEngine|StagingPool|DeviceScratch|DeviceFakeMp\.(TwoRanks|NonBlocking)|DeviceDirectFakeMp\.TwoRanks|DeviceTernaryFakeMp|DeviceRulesFakeMp|Threads\.|EndedInGroup\.AbortFromAnotherThread|ConformanceTest.*LOOPBACK|LoopbackTest|LoopbackFailuresTest|LoopbackPointToPoint|LoopbackDenseTest.*/3$|LoopbackForcedAlgoTest.*"RING", 5.$|LoopbackCodecTest.*", 5.$|RevokeTest'
fi

echo "== fuzzing (libFuzzer, clang) ==" >&2
stage "fuzzing" tests/fuzz/run_fuzzers.sh "${SIEVE_FUZZ_SECONDS:-10}"

if [ ${#failed[@]} -gt 0 ]; then
  cat "$failure_report" >&2
  printf '== FAILED: %s ==\n' "${failed[@]}" >&2
  exit 1
fi
echo "== every stage passed (${SECONDS} s) ==" >&2
