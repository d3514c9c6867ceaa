#!/usr/bin/env bash
# The testbed on 2 hosts: up, addresses and exec, run's rank environment, "already up",
# the hosts' TCP congestion control (cubic by default, the machine's with --tcp-cc host,
# the machine's allowed list untouched, an unknown one refused), a 100mbit link measured
# within 10% of its rate, a Sieve all-reduce whose bytes cross the shaped link, and
# nothing of ours left after down (namespaces, links, qdiscs).
# Needs root: exits 77 (ctest SKIP_RETURN_CODE) with the reason otherwise.
# Usage: testbed_test.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bench=$here/../../bench
tb=$bench/testbed/sieve-testbed
build=${1:?usage: testbed_test.sh BUILD_DIR}

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the testbed needs root (network namespaces, tc)"
  exit 77
fi
if ! ip netns add "sbtprobe$$" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here"
  exit 77
fi
ip netns del "sbtprobe$$"

# Unique per run, so concurrent runs never collide.
prefix="sbt$((RANDOM % 1000))x$(($$ % 1000))-"
subnet="10.$((100 + $$ % 100)).$((RANDOM % 250))"
fail() { echo "FAIL: $*" >&2; exit 1; }
trap '"$tb" down --prefix "$prefix" >/dev/null 2>&1 || true' EXIT

# Not root: a distinct exit code, nothing touched.
if command -v setpriv >/dev/null; then
  rc=0
  # A copy nobody can reach: the checkout may sit under a directory only root
  # may enter (mktemp -d), where exec would fail with 126 before the check.
  nobody_dir=$(mktemp -d)
  chmod 755 "$nobody_dir"
  install -m 755 "$tb" "$nobody_dir/sieve-testbed"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$nobody_dir/sieve-testbed" status \
    --prefix "$prefix" >/dev/null 2>&1 || rc=$?
  rm -rf "$nobody_dir"
  [ "$rc" -eq 77 ] || fail "not root: exit $rc, want 77"
fi

allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
"$tb" up --hosts 2 --rate 100mbit --prefix "$prefix" --subnet "$subnet"
host_cc() { "$tb" exec "$1" --prefix "$prefix" -- sysctl -n net.ipv4.tcp_congestion_control; }
if [[ " $(sysctl -n net.ipv4.tcp_available_congestion_control) " == *" cubic "* ]]; then
  for i in 0 1; do [ "$(host_cc "$i")" = cubic ] || fail "host $i runs $(host_cc "$i"), not cubic"; done
fi
[ "$(sysctl -n net.ipv4.tcp_allowed_congestion_control)" = "$allowed" ] ||
  fail "up changed the machine's allowed congestion controls"
[ "$("$tb" ifname)" = sv0 ] || fail "ifname"
[ "$("$tb" addr 1 --subnet "$subnet")" = "$subnet.2" ] || fail "addr 1"
for i in 0 1; do
  got=$("$tb" exec "$i" --prefix "$prefix" -- ip -4 -o addr show dev sv0 | awk '{print $4}')
  [ "$got" = "$subnet.$((i + 1))/24" ] || fail "host $i has '$got' on sv0"
  lo=$("$tb" exec "$i" --prefix "$prefix" -- ip -o link show lo)
  [[ "$lo" == *"UP"* ]] || fail "host $i: lo is not up"
  "$tb" exec "$i" --prefix "$prefix" -- tc qdisc show dev sv0 | grep -q "tbf.*rate 100Mbit" ||
    fail "host $i: no 100Mbit tbf on sv0"
done
if "$tb" up --hosts 2 --prefix "$prefix" --subnet "$subnet" 2>/dev/null; then
  fail "a second up of the same prefix succeeded"
fi

# run: one rank per host with the launch environment.
out=$("$tb" run --prefix "$prefix" --port 29555 -- \
        sh -c 'echo "$RANK/$WORLD_SIZE $MASTER_ADDR:$MASTER_PORT $SIEVE_SOCKET_IFNAME $UCX_NET_DEVICES $UCX_TLS"' |
      sort)
want=$(printf '0/2 %s.1:29555 sv0 sv0 tcp\n1/2 %s.1:29555 sv0 sv0 tcp' "$subnet" "$subnet")
[ "$out" = "$want" ] || fail "run environment: got '$out', want '$want'"
if "$tb" run --prefix "$prefix" -- sh -c 'exit $((RANK == 1 ? 5 : 0))'; then
  fail "run hid a failing rank"
fi

# The shaped link: TCP goodput from host 0 to host 1 within 10% of 100 Mbit/s.
port=$((30000 + RANDOM % 20000))
"$tb" exec 1 --prefix "$prefix" -- "$bench/testbed/linkrate" serve "$port" --seconds 3 \
  >"/tmp/linkrate.$$" &
server=$!
"$tb" exec 0 --prefix "$prefix" -- "$bench/testbed/linkrate" send "$subnet.2" "$port" --seconds 3
wait "$server"
mbit=$(cat "/tmp/linkrate.$$")
rm -f "/tmp/linkrate.$$"
echo "100mbit link: $mbit Mbit/s of TCP goodput"
awk -v m="$mbit" 'BEGIN { exit !(m >= 90 && m <= 110) }' || fail "$mbit Mbit/s is not 100 +- 10%"

# A Sieve all-reduce (checked) crosses sv0: host 0 sends at least its ring share.
if [ -x "$build/bench/sieve-perf" ]; then
  tx() { "$tb" exec 0 --prefix "$prefix" -- cat /sys/class/net/sv0/statistics/tx_bytes; }
  before=$(tx)
  "$tb" run --prefix "$prefix" -- "$build/bench/sieve-perf" -b 1M -e 1M -n 1 -w 0 -c 1 >/dev/null
  sent=$(($(tx) - before))
  # 3 calls (out-of-place, in-place, check) of 1 MiB on 2 ranks: >= 3 MiB from host 0.
  [ "$sent" -ge $((3 << 20)) ] || fail "only $sent bytes left host 0 on sv0"
fi

"$tb" down --prefix "$prefix"
"$tb" down --prefix "$prefix" || fail "a second down failed"

# --tcp-cc host keeps what a new namespace inherits from the machine; an unknown one fails.
"$tb" up --hosts 1 --rate none --tcp-cc host --prefix "$prefix" --subnet "$subnet"
ip netns add "sbtcc$$"
inherited=$(ip netns exec "sbtcc$$" sysctl -n net.ipv4.tcp_congestion_control)
ip netns del "sbtcc$$"
[ "$(host_cc 0)" = "$inherited" ] || fail "--tcp-cc host: $(host_cc 0), want $inherited"
"$tb" down --prefix "$prefix"
if "$tb" up --hosts 1 --tcp-cc no-such-cc --prefix "$prefix" --subnet "$subnet" 2>/dev/null; then
  fail "up --tcp-cc no-such-cc succeeded"
fi
! ip netns list | grep -q "^$prefix" || fail "namespaces left: $(ip netns list | grep "^$prefix")"
! ip -o link show | grep -q ": $prefix" || fail "links left: $(ip -o link show | grep ": $prefix")"
! tc qdisc show | grep -q "dev $prefix" || fail "qdiscs left"
echo "PASS"
