#!/usr/bin/env bash
# Repeats a rank's death at random points (issue 19): the reduce-scatter or the all-gather of a
# 4 MiB all-reduce, its control messages (fingerprint, verdict), or a grow's bootstrap (a
# SIGKILL from outside at a random delay), N times (default 50), each a fresh 4-rank job of
# membership_mp_test's RepeatKill; every repetition must end with the survivors agreeing on
# the new membership. Prints one line per repetition and the tally per point. Not a CI test.
# Usage: bench/elastic_repeat.sh [build-dir] [repetitions] [seed]
set -uo pipefail
build=${1:-build}
reps=${2:-50}
RANDOM=${3:-$$}
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo
bin="$build/tests/membership_mp_test"
[[ -x "$bin" ]] || { echo "build $bin first (cmake --build $build --target membership_mp_test)"; exit 2; }
log=$(mktemp /tmp/sieve-elastic-repeat.XXXXXX)
trap 'rm -f "$log"' EXIT
points=(rs ag fingerprint verdict grow)
declare -A pass fail
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $reps repetitions" >&2
start=$SECONDS
for ((i = 1; i <= reps; ++i)); do
  point=${points[$((RANDOM % ${#points[@]}))]}
  victim=$((RANDOM % 4))
  case $point in  # sends of one rank (RepeatKill: a warm-up, then the 4 MiB all-reduce)
    rs) nth=$((1 + RANDOM % 6)) ;;
    ag) nth=$((7 + RANDOM % 6)) ;;
    # 3 control sends per collective (one per peer): the warm-up's, then the all-reduce's
    fingerprint | verdict) nth=$((4 + RANDOM % 3)) ;;
    grow) nth=0 ;;
  esac
  delay=$((RANDOM % 60))
  ELASTIC_POINT=$point ELASTIC_NTH=$nth ELASTIC_VICTIM=$victim ELASTIC_DELAY_MS=$delay \
    timeout 120 "$bin" \
    --gtest_filter='RepeatKill.SurvivorsAgreeOnTheNewMembership' >"$log" 2>&1
  rc=$?
  line=$(grep -o 'ELASTIC_RESULT.*' "$log" | tail -1)
  if [[ $rc -eq 0 ]]; then
    pass[$point]=$((${pass[$point]:-0} + 1))
    echo "$i ok   $line"
  else
    fail[$point]=$((${fail[$point]:-0} + 1))
    echo "$i FAIL point=$point nth=$nth victim=$victim delay_ms=$delay rc=$rc $line"
    grep -E 'Failure|rank check|disagree|left out|Which is' "$log" | head -12 | sed 's/^/    /'
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $((SECONDS - start)) s" >&2
printf "%-12s %6s %6s\n" point agreed failed
total_fail=0
for p in "${points[@]}"; do
  printf "%-12s %6d %6d\n" "$p" "${pass[$p]:-0}" "${fail[$p]:-0}"
  total_fail=$((total_fail + ${fail[$p]:-0}))
done
exit $((total_fail > 0))
