#!/usr/bin/env bash
# Runs one example trainer on 4 ranks (one command):
#   run_example.sh pactrain|sdp|d2ft [--testbed] [--rate 100mbit] [--ranks 4] [-- ARGS...]
# Without --testbed the ranks are local processes on loopback (unshaped). With --testbed
# they run one per network namespace of the shaped testbed (sieve-testbed up --hosts N
# --rate R --prefix py-), which is torn down afterwards. ARGS go to the trainer.
# Environment: SIEVE_TESTBED (path of sieve-testbed; default bench/testbed/sieve-testbed),
# SIEVE_LIBRARY (libsieve.so; default the build tree), SIEVE_EXAMPLE_OUT (results folder).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
name=${1:?usage: run_example.sh pactrain|sdp|d2ft [--testbed] [--rate R] [-- ARGS]}
shift
script="$here/${name}_example.py"
[ -f "$script" ] || { echo "run_example.sh: no example '$name'" >&2; exit 2; }
testbed=0 rate=100mbit ranks=4
while [ $# -gt 0 ]; do
  case "$1" in
    --testbed) testbed=1; shift ;;
    --rate) rate=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
python=${SIEVE_PYTHON:-/usr/bin/python3}
# Debian 12's OpenBLAS (0.3.21) does not know recent Xeons (family 6 model 207 here) and falls
# back to its SSE3 "Prescott" kernels: sgemm 4-5x slower, every example compute-bound. Pick
# the kernels by instruction set unless the caller chose (OPENBLAS_VERBOSE=2 shows the core).
if [ -z "${OPENBLAS_CORETYPE+set}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell
  fi
fi
export SIEVE_LIBRARY=${SIEVE_LIBRARY:-$repo/build/src/libsieve.so}
export SIEVE_EXAMPLE_OUT=${SIEVE_EXAMPLE_OUT:-$repo/build/examples}
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ "$testbed" = 1 ]; then "$tb" down --prefix py- || true; fi
}
trap cleanup EXIT INT TERM

if [ "$testbed" = 1 ]; then
  tb=${SIEVE_TESTBED:-$repo/bench/testbed/sieve-testbed}
  [ -x "$tb" ] || { echo "run_example.sh: no testbed script at $tb (set SIEVE_TESTBED)" >&2; exit 2; }
  "$tb" down --prefix py- >/dev/null 2>&1 || true
  "$tb" up --hosts "$ranks" --rate "$rate" --prefix py-
  export SIEVE_EXAMPLE_LINK="$rate (testbed)"
  for ((i = 0; i < ranks; i++)); do
    "$tb" exec "$i" --prefix py- -- env RANK=$i WORLD_SIZE=$ranks MASTER_ADDR=10.77.0.1 \
      MASTER_PORT=$port GLOO_SOCKET_IFNAME=sv0 SIEVE_SOCKET_IFNAME=sv0 UCX_NET_DEVICES=sv0 \
      SIEVE_LIBRARY="$SIEVE_LIBRARY" SIEVE_EXAMPLE_OUT="$SIEVE_EXAMPLE_OUT" \
      SIEVE_EXAMPLE_LINK="$SIEVE_EXAMPLE_LINK" OMP_NUM_THREADS=1 \
      ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE} \
      "$python" "$script" "$@" &
    pids+=($!)
  done
else
  export SIEVE_EXAMPLE_LINK="loopback, unshaped"
  for ((i = 0; i < ranks; i++)); do
    RANK=$i WORLD_SIZE=$ranks MASTER_ADDR=127.0.0.1 MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo \
      SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo OMP_NUM_THREADS=1 "$python" "$script" "$@" &
    pids+=($!)
  done
fi
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
pids=()
exit "$rc"
