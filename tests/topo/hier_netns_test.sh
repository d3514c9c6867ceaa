#!/bin/bash
# Hierarchical vs flat all-reduce on two "hosts" of bench/testbed/sieve-testbed
# (network namespaces on a bridge, egress shaped with tc), two ranks in each
# (ranks in one namespace share a host: their host identity includes the
# namespace). Runs sieve-perf (results checked, -c 1) with SIEVE_ALGO=hier and
# =flat and compares the bytes that left each namespace over its sv0
# (/sys/class/net/sv0/statistics/tx_bytes) with the formulas:
#   hier: per call each host sends count*esize (one inter-host ring per local
#         rank over its half, 2(H-1)/H = 1 times), flat: the ring 0-1-2-3
#         crosses hosts at 1->2 and 3->0, (n-1)/n*2 = 1.5 times count*esize.
# Measured bytes include Ethernet/IP/TCP headers and ACKs: they must lie in
# [payload, 1.12 * payload + 512 KiB]. Needs root (skips with 77 otherwise).
#
#   hier_netns_test.sh SIEVE_PERF SIEVE_TESTBED [--report]
#   --report: dense and masked(0.5)+ternary, flat and hier, prints a table of
#   times and bytes per direction (e.g. TOPO_BYTES=64M TOPO_ITERS=3); the byte
#   counts include the checked call and the in-place calls sieve-perf makes.
set -u
PERF=$1
TESTBED=$2
REPORT=${3:-}
RATE=${TOPO_RATE:-1gbit}
BYTES=${TOPO_BYTES:-16M}
ITERS=${TOPO_ITERS:-1}   # timed iterations; sieve-perf adds one checked call, out-of-place and in-place

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
[ -x "$PERF" ] || { echo "FAIL: $PERF is not executable"; exit 1; }
[ -x "$TESTBED" ] || { echo "FAIL: $TESTBED is not executable"; exit 1; }

# Unique per run (tests of other branches may run at the same time); interface
# names are at most 15 characters: "tpNNNNN-v999".
P="tp$(($$ % 100000))-"
NS0="${P}h0"
NS1="${P}h1"
WORK=$(mktemp -d /tmp/topo-netns.XXXXXX)
cleanup() {
  "$TESTBED" down --prefix "$P" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
# Hosts 10.79.0.1 and .2 on sv0, each host's egress shaped to the rate.
"$TESTBED" up --hosts 2 --rate "$RATE" --prefix "$P" --subnet 10.79.0 ||
  { rc=$?; [ $rc = 77 ] && skip "sieve-testbed needs root"; echo "FAIL: testbed up ($rc)"; exit 1; }

tx() { ip netns exec "$1" cat /sys/class/net/sv0/statistics/tx_bytes; }

# run NAME ALGO SIEVE-PERF-ARGS...: 4 ranks, 2 per namespace; sets SENT0 SENT1 and ROW.
run() {
  local name=$1 algo=$2
  shift 2
  local before0 before1 port pids=() r rc=0
  before0=$(tx "$NS0")
  before1=$(tx "$NS1")
  port=$((20000 + ($$ + RANDOM) % 20000))
  for r in 0 1 2 3; do
    ip netns exec "${P}h$((r / 2))" env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) \
      LOCAL_WORLD_SIZE=2 MASTER_ADDR=10.79.0.1 MASTER_PORT=$port SIEVE_SOCKET_IFNAME==sv0 \
      UCX_NET_DEVICES=sv0 SIEVE_ALGO="$algo" SIEVE_TIMEOUT=120 SIEVE_DEBUG=INFO \
      SIEVE_DEBUG_SUBSYS=INIT,COLL,NET "$PERF" -b "$BYTES" -e "$BYTES" -n $ITERS -w 0 -c 1 "$@" \
      >"$WORK/$name.$r" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2 3; do
    wait "${pids[$r]}" || { echo "FAIL: $name: rank $r exited with $?"; rc=1; }
  done
  if [ $rc != 0 ]; then
    tail -n 20 "$WORK/$name".*
    exit 1
  fi
  SENT0=$(( $(tx "$NS0") - before0 ))
  SENT1=$(( $(tx "$NS1") - before1 ))
  # sieve-perf's table on rank 0: the out-of-place time column of the data row.
  ROW=$(grep -E '^ +[0-9]+ +[0-9]+ ' "$WORK/$name.0" | tail -n 1)
}

check_bytes() {  # NAME MEASURED PAYLOAD
  local lo=$3 hi=$(( $3 * 112 / 100 + 524288 ))
  if [ "$2" -lt "$lo" ] || [ "$2" -gt "$hi" ]; then
    echo "FAIL: $1: $2 bytes crossed, formula says $3 (allowed $lo..$hi)"
    exit 1
  fi
  echo "ok: $1: $2 bytes crossed, payload formula $3"
}

to_bytes() { numfmt --from=iec "$1"; }
COUNT=$(( $(to_bytes "$BYTES") / 4 ))
CALLS=$(( 2 * (ITERS + 1) ))
# BalancedSplit(count, 4) chunk lengths for the flat ring.
chunk() { echo $(( COUNT * ($1 + 1) / 4 - COUNT * $1 / 4 )); }
FLAT0=$(( CALLS * 4 * ((COUNT - $(chunk 1)) + (COUNT - $(chunk 2))) ))
FLAT1=$(( CALLS * 4 * ((COUNT - $(chunk 3)) + (COUNT - $(chunk 0))) ))
HIER=$(( CALLS * 4 * COUNT ))

if [ "$REPORT" != "--report" ]; then
  run hier hier
  grep -q "hierarchical" "$WORK/hier.0" || { echo "FAIL: no hierarchical INFO line"; cat "$WORK/hier.0"; exit 1; }
  grep -q "2 hosts x 2 ranks" "$WORK/hier.0" || { echo "FAIL: hosts not recognised"; cat "$WORK/hier.0"; exit 1; }
  # Same-namespace ranks over UCX shared memory, the other namespace over TCP on sv0.
  grep -q "same-host rank 1 over .*(shared memory); rank 2 on another host over tcp/sv0" \
    "$WORK/hier.0" || { echo "FAIL: transports"; grep "same-host" "$WORK"/hier.*; exit 1; }
  grep -h "same-host" "$WORK/hier.0" | sed 's/^.*INFO/INFO/'
  check_bytes "hier host 0" "$SENT0" "$HIER"
  check_bytes "hier host 1" "$SENT1" "$HIER"
  H0=$SENT0 H1=$SENT1
  run flat flat
  check_bytes "flat host 0" "$SENT0" "$FLAT0"
  check_bytes "flat host 1" "$SENT1" "$FLAT1"
  if [ $((H0 + H1)) -ge $((SENT0 + SENT1)) ]; then
    echo "FAIL: hierarchical sent $((H0 + H1)) bytes between hosts, flat $((SENT0 + SENT1))"
    exit 1
  fi
  echo "PASS: hierarchical $((H0 + H1)) bytes between hosts < flat $((SENT0 + SENT1))"
  exit 0
fi

# Report: one table, 64 MiB unless TOPO_BYTES says otherwise.
echo "| mode | algo | time ms (sieve-perf out-of-place, mean of $ITERS) | bytes host0->host1 | bytes host1->host0 |"
echo "|---|---|---|---|---|"
for mode in dense masked-ternary; do
  args=()
  [ $mode = masked-ternary ] && args=(--mode masked --mask-density 0.5 --quant ternary)
  for algo in flat hier; do
    run "$mode-$algo" $algo "${args[@]}"
    echo "| $mode | $algo | $(echo "$ROW" | awk '{printf "%.0f", $6 / 1000}') | $SENT0 | $SENT1 |"
  done
done
for f in "$WORK"/*.0; do echo "--- $(basename "$f")"; grep -E '^ +[0-9]+ |^#' "$f" | head -n 4; done
