#!/usr/bin/env bash
# The testbed with a delay, through the userspace delay router (sieve-delay, on kernels
# with or without netem): 2 hosts at 100mbit with 25 ms per host, so the round trip
# (a TCP connect refused: SYN out, RST back) has a median within 1 ms of 50 ms, a TCP
# stream still gets within 10% of the rate (the link is still shaped, and the
# namespaces' TCP buffers cover the bandwidth-delay product), bad delay arguments fail
# before anything is built, and after down no router process, pid file, namespace or
# link of ours is left. Needs root: exits 77 (ctest SKIP_RETURN_CODE) with the reason.
# Usage: testbed_delay_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=$here/../../bench
tb=$bench/testbed/sieve-testbed
build=${1:?usage: testbed_delay_test.sh BUILD_DIR}
export SIEVE_DELAY_ROUTER=$build/bench/sieve-delay

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the testbed needs root (network namespaces, tc, TUN)"
  exit 77
fi
if ! ip netns add "sbdprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"
  exit 77
fi
ip netns del "sbdprobe$$"
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
[ -x "$SIEVE_DELAY_ROUTER" ] || { echo "FAIL: $SIEVE_DELAY_ROUTER not built"; exit 1; }

prefix="sbd$((RANDOM % 1000))x$(($$ % 1000))-"
subnet="10.$((100 + $$ % 100)).$((RANDOM % 250))"
fail() { echo "FAIL: $*" >&2; exit 1; }
trap '"$tb" down --prefix "$prefix" >/dev/null 2>&1 || true' EXIT

# Bad arguments: refused, nothing built.
for bad in "--delay 25xs" "--delay 25ms --loss 2" "--loss 0.1" "--delay 5ms --delay-via carrier"; do
  # shellcheck disable=SC2086
  if "$tb" up --hosts 2 --prefix "$prefix" --subnet "$subnet" $bad 2>/dev/null; then
    fail "up $bad succeeded"
  fi
  [ -z "$(ip netns list | grep "^$prefix" || true)" ] || fail "up $bad left namespaces"
done

"$tb" up --hosts 2 --rate 100mbit --delay 25ms --delay-via tun --prefix "$prefix" \
  --subnet "$subnet"
pids=()
for i in 0 1; do
  pids+=("$(cat "/run/sieve-testbed/${prefix}h$i.pid")")
  "$tb" exec "$i" --prefix "$prefix" -- tc qdisc show dev sv0 | grep -q "tbf.*rate 100Mbit" ||
    fail "host $i: no 100Mbit tbf on sv0"
done

read -r median min max < <("$tb" exec 0 --prefix "$prefix" -- "$bench/testbed/linkrate" rtt \
                             "$subnet.2" --count 15)
echo "RTT with 25 ms per host: median $median ms (min $min, max $max)"
awk -v m="$median" 'BEGIN { exit !(m >= 50 && m <= 51) }' || fail "median RTT $median ms, want 50-51"

port=$((30000 + RANDOM % 20000))
"$tb" exec 1 --prefix "$prefix" -- "$bench/testbed/linkrate" serve "$port" --seconds 4 \
  --skip 1.5 >"/tmp/linkrate-delay.$$" &
server=$!
"$tb" exec 0 --prefix "$prefix" -- "$bench/testbed/linkrate" send "$subnet.2" "$port" --seconds 4
wait "$server"
mbit=$(cat "/tmp/linkrate-delay.$$")
rm -f "/tmp/linkrate-delay.$$"
echo "100mbit link, 50 ms RTT: $mbit Mbit/s of TCP goodput"
awk -v m="$mbit" 'BEGIN { exit !(m >= 90 && m <= 110) }' || fail "$mbit Mbit/s is not 100 +- 10%"

"$tb" down --prefix "$prefix"
for pid in "${pids[@]}"; do
  [ ! -e "/proc/$pid" ] || fail "delay router $pid still running after down"
done
! ls /run/sieve-testbed/"$prefix"* >/dev/null 2>&1 || fail "pid or log files left"
! ip netns list | grep -q "^$prefix" || fail "namespaces left"
! ip -o link show | grep -q ": $prefix" || fail "links left"
echo "PASS"
