#!/usr/bin/env bash
# Installs, builds and runs every test that needs no GPU: the Release build,
# then an AddressSanitizer + UndefinedBehaviorSanitizer build of the same tests.
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
fi
