#!/usr/bin/env bash
# Detection-time table: runs every failure scenario of the fault tests N times
# (default 10) and prints, per scenario, the worst time from the fault (death,
# stop, partition, abort, mismatch) to the error on a surviving rank, as the
# tests themselves measure it; also the worst init time with stray connections
# at the root and the worst sieveCommGetAsyncError p99 while a peer dies. Not a
# CI test: it takes minutes. The partition and other-host rows need root
# (netns_mp_test makes its own namespaces, fault-<pid>-a/b; no sieve-testbed).
# Usage: [FAULT_LOG=file] bench/fault_detection.sh [build-dir] [repetitions]
set -euo pipefail
build=${1:-build}
reps=${2:-10}
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
# The raw test output: kept at $FAULT_LOG when set, else removed at the end.
log=${FAULT_LOG:-$(mktemp /tmp/sieve-fault-detection.XXXXXX)}
[ -n "${FAULT_LOG:-}" ] && : >"$log" || trap 'rm -f "$log"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $reps repetitions" >&2
run() {  # test binary, gtest filter
  "$build/tests/$1" --gtest_repeat="$reps" --gtest_filter="$2" >>"$log" 2>&1 ||
    echo "warning: $1 reported failures (see the FAILED column)" >&2
}
for t in fault_kill_mp_test fault_stall_mp_test netns_mp_test abort_async_mp_test agreement_mp_test; do
  run "$t" '-*Slow*:*Shaped*'
done
run bootstrap_init_mp_test '*StrayConnections*'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf "%-58s %8s %12s %7s\n" "scenario (test)" "samples" "worst" "failed"
# One row per test: the worst figure any surviving rank printed (fault to
# error; init time; GetAsyncError p99), how many such figures, and failures.
awk '
  function note(key, value, unit) {  # key: the row; failures: those of the current test
    n[key]++; u[key] = unit; of[key] = test
    if (!(key in worst) || value > worst[key]) worst[key] = value
  }
  /^\[ RUN/ { test = $4; sub(/^.*\./, "", test); sub(/^SurvivorsFailFastAbortAndRebuild\//, "", test) }
  /^\[  FAILED  \] .*\([0-9]+ ms\)$/ && test != "" { failed[test]++ }  # per-test lines only
  /s after (rank [0-9]+ (died|stopped)|the partition|it began)/ {
    for (i = 1; i < NF; i++) if ($(i + 1) == "s" && $(i + 2) == "after") v = $i + 0
    note(test, v, "s")
  }
  /mismatch returned|: all-reduce returned [0-9]+ after/ {
    for (i = 1; i < NF; i++) if ($(i) == "after" && $(i + 2) == "s:") v = $(i + 1) + 0
    note(test, v, "s")
  }
  /s with 4 strays/ {
    for (i = 1; i < NF; i++) if ($(i + 1) == "s" && $(i + 2) == "with") v = $i + 0
    note("init with 4 stray connections at the root", v, "s")
  }
  /GetAsyncError x[0-9]+: .* p99/ {
    for (i = 1; i < NF; i++) if ($i == "p99") v = $(i + 1) + 0
    note("sieveCommGetAsyncError p99 while a peer dies", v, "us")
  }
  END {
    for (t in n) {
      f = (of[t] in failed) ? failed[of[t]] : 0
      printf "%-58s %8d %9.3f %-2s %7d\n", t, n[t], worst[t], u[t], f
    }
  }' "$log" | sort
