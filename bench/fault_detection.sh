#!/usr/bin/env bash
# Detection-time table: runs every failure scenario of the fault tests N times
# (default 10) and prints, per scenario, the worst time from the fault (death,
# stop, partition, abort, mismatch) to the error on a surviving rank, as the
# tests themselves measure it. Not a CI test: it takes minutes.
# Usage: bench/fault_detection.sh [build-dir] [repetitions]
set -euo pipefail
build=${1:-build}
reps=${2:-10}
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
log=$(mktemp /tmp/sieve-fault-detection.XXXXXX)
trap 'rm -f "$log"' EXIT
for t in fault_kill_mp_test fault_stall_mp_test netns_mp_test abort_async_mp_test agreement_mp_test; do
  "$build/tests/$t" --gtest_repeat="$reps" --gtest_filter='-*Slow*:*Shaped*' >>"$log" 2>&1 ||
    echo "warning: $t reported failures (see the lines above the table)" >&2
done
printf "%-58s %8s %10s %7s\n" "scenario (test)" "samples" "worst (s)" "failed"
# One row per test: the worst "<seconds> s after" figure any surviving rank
# printed (fault to error), how many such figures there were, and failures.
awk '
  /^\[ RUN/ { test = $4; sub(/^.*\./, "", test); sub(/^SurvivorsFailFastAbortAndRebuild\//, "", test) }
  /^\[  FAILED  \]/ && test != "" { failed[test]++ }
  /s after (rank [0-9]+ (died|stopped)|the partition|it began)/ {
    for (i = 1; i < NF; i++) if ($(i + 1) == "s" && $(i + 2) == "after") v = $i + 0
    n[test]++; if (v > worst[test]) worst[test] = v
  }
  /mismatch returned|: all-reduce returned [0-9]+ after/ {
    for (i = 1; i < NF; i++) if ($(i) == "after" && $(i + 2) == "s:") v = $(i + 1) + 0
    n[test]++; if (v > worst[test]) worst[test] = v
  }
  END {
    for (t in n) printf "%-58s %8d %10.3f %7d\n", t, n[t], worst[t], failed[t]
  }' "$log" | sort
