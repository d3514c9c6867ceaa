#!/usr/bin/env bash
# Installs, builds and runs every test that needs no GPU: the Release build,
# then an AddressSanitizer + UndefinedBehaviorSanitizer build of the same tests,
# then a ThreadSanitizer build of the threading tests.
# Last, the libFuzzer harnesses (clang, their own build-fuzz/) run 15 s each from their corpus.
# Usage: scripts/test.sh [--no-sanitizers]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
# Local ranks talk over loopback only (tests never use other interfaces).
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
(cd build && ctest --output-on-failure -LE cuda --timeout 900)

if [ "${1:-}" != "--no-sanitizers" ]; then
  echo "== sanitizer build (address,undefined) ==" >&2
  SIEVE_BUILD_DIR=build-asan \
  SIEVE_CMAKE_ARGS="-DSIEVE_SANITIZE=address,undefined -DSIEVE_BUILD_BENCH=OFF -DSIEVE_WITH_CUDA=OFF" \
    scripts/setup.sh
  # UCX's own allocations are reported at exit by LeakSanitizer: suppress
  # those (only UCX's), and keep UCX's malloc hooks away from ASan's.
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS="detect_odr_violation=0" UBSAN_OPTIONS="print_stacktrace=1"
  export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
  (cd build-asan && ctest --output-on-failure -LE cuda --timeout 1800)

  # ThreadSanitizer on the threading tests only (abort from another thread,
  # GetAsyncError polling during collectives, non-blocking communicators, two
  # threads on one communicator, revoke from another thread (membership), the GPU
  # progress engine and device paths over the fake device, the loopback transport with
  # ranks as threads on a few rank counts): only their targets are built.
  echo "== thread sanitizer build (threading tests) ==" >&2
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIEVE_SANITIZE=thread \
    -DSIEVE_BUILD_BENCH=OFF -DSIEVE_WITH_CUDA=OFF >/dev/null
  cmake --build build-tsan -j"$(nproc)" --target abort_async_mp_test errors_mp_test nonblocking_mp_test \
    misuse_mp_test membership_mp_test gpu_fake_mp_test gpu_host_test transport_test \
    loopback_test
  export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  (cd build-tsan && ctest --output-on-failure --timeout 600 \
     -R 'AbortAsyncTest|ErrorsTest.AbortFromAnotherThread|NonBlockingTest|ProgressEngine|StagingPool|DeviceScratch|DeviceFakeMp|DeviceDirectFakeMp|DeviceTernaryFakeMp|DeviceRulesFakeMp|Threads\.|EndedInGroup\.AbortFromAnotherThread|ConformanceTest.*LOOPBACK|LoopbackTest|LoopbackFailuresTest|LoopbackPointToPoint|LoopbackDenseTest.*/3$|LoopbackForcedAlgoTest.*"RING", 5.$|LoopbackCodecTest.*", 5.$|RevokeTest')
fi

echo "== fuzzing (libFuzzer, clang) ==" >&2
tests/fuzz/run_fuzzers.sh "${SIEVE_FUZZ_SECONDS:-15}"
