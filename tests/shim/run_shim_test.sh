#!/usr/bin/env bash
# Interposition: nccl_app (real nccl.h, linked against the real libnccl.so) runs as 3 processes
# with libsieve-nccl.so preloaded and must pass, served by Sieve, with the INFO line at init;
# then runs without the preload and must fail at init (the real NCCL has no GPU here).
# Usage: run_shim_test.sh LIBSIEVE_NCCL NCCL_APP [PRELOAD_FIRST]   (NCCL_APP "": skipped, exit 77)
# PRELOAD_FIRST: a sanitizer runtime a sanitized shim needs ahead of it (leak checks off: the
# program and the real libnccl are not ours).
set -uo pipefail
shim="$1"
app="${2:-}"
preload="$shim"
if [[ -n "${3:-}" ]]; then
  preload="$3 $shim"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
nranks=3
if [[ -z "$app" || ! -x "$app" ]]; then
  echo "skipped: nccl_app was not built (needs \$CUDA_HOME/include/nccl.h and libnccl.so)"
  exit 77  # CTest's SKIP_RETURN_CODE (tests/shim/CMakeLists.txt)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo SIEVE_TIMEOUT=60

# Runs nranks copies of nccl_app (extra env in "$@"); writes each rank's output to
# $work/<tag>.<rank>.log and its exit code to $work/<tag>.<rank>.rc.
run_ranks() {
  local tag=$1
  shift
  rm -f "$work/$tag.id"
  local pids=()
  for ((r = 0; r < nranks; ++r)); do
    env RANK=$r WORLD_SIZE=$nranks NCCL_APP_ID_FILE="$work/$tag.id" "$@" timeout 300 "$app" \
      >"$work/$tag.$r.log" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < nranks; ++r)); do
    wait "${pids[$r]}"
    echo $? >"$work/$tag.$r.rc"
  done
}

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $(basename "$f")"; tail -n 30 "$f"; done
  exit 1
}

# 1. Preloaded: every rank passes, Sieve answered, and says so at INFO.
run_ranks sieve LD_PRELOAD="$preload" SIEVE_DEBUG=INFO SIEVE_DEBUG_SUBSYS=INIT
for ((r = 0; r < nranks; ++r)); do
  [[ $(cat "$work/sieve.$r.rc") == 0 ]] ||
    fail "rank $r exited $(cat "$work/sieve.$r.rc") with the shim preloaded"
  grep -q "served by Sieve" "$work/sieve.$r.log" || fail "rank $r was not served by Sieve"
  grep -q "all collectives correct" "$work/sieve.$r.log" || fail "rank $r did not check its results"
  grep -q "Sieve serving NCCL calls (mode dense)" "$work/sieve.$r.log" ||
    fail "rank $r did not log 'Sieve serving NCCL calls (mode dense)' at SIEVE_DEBUG=INFO"
done
echo "ok: $nranks ranks served by Sieve through LD_PRELOAD, every collective correct"

# 2. A mode Sieve does not implement fails init, naming the accepted values.
run_ranks badmode LD_PRELOAD="$preload" SIEVE_NCCL_MODE=fast NCCL_APP_WAIT_S=20
for ((r = 0; r < nranks; ++r)); do
  [[ $(cat "$work/badmode.$r.rc") == 2 ]] ||
    fail "rank $r: SIEVE_NCCL_MODE=fast did not fail init"
done
grep -q "SIEVE_NCCL_MODE=fast is not one of dense|auto-mask|ternary|auto-mask+ternary|auto" "$work/badmode.0.log" ||
  fail "the failure does not name SIEVE_NCCL_MODE and its accepted values"
echo "ok: SIEVE_NCCL_MODE=fast fails init naming the accepted values"

# 2b. SIEVE_NCCL_MODE=auto-mask: a gradient with a fixed zero pattern, 12 steps, exact results,
# fewer bytes than the same job in dense mode (counters logged at destroy at SIEVE_DEBUG=INFO).
sent_bytes() { sed -n 's/.*counters: \([0-9]*\) bytes sent.*/\1/p' "$1" | tail -n 1; }
for mode in dense auto-mask; do
  run_ranks "grad-$mode" LD_PRELOAD="$preload" SIEVE_NCCL_MODE=$mode NCCL_APP_GRADIENT_STEPS=12 \
    SIEVE_DEBUG=INFO SIEVE_DEBUG_SUBSYS=COLL
  for ((r = 0; r < nranks; ++r)); do
    [[ $(cat "$work/grad-$mode.$r.rc") == 0 ]] || fail "rank $r: gradient steps failed in $mode mode"
  done
done
for ((r = 0; r < nranks; ++r)); do
  dense=$(sent_bytes "$work/grad-dense.$r.log")
  masked=$(sent_bytes "$work/grad-auto-mask.$r.log")
  [[ -n "$dense" && -n "$masked" ]] || fail "rank $r: no counters line at destroy"
  grep -q "mask tracker: buffer of 65536 elements masked" "$work/grad-auto-mask.$r.log" ||
    fail "rank $r: the mask tracker never masked the gradient"
  # 3 learning steps are dense, 9 masked (a quarter kept): well under 3/4 of dense.
  ((masked * 4 < dense * 3)) || fail "rank $r: auto-mask sent $masked bytes, dense $dense"
  echo "ok: rank $r sent $masked bytes with auto-mask, $dense dense (12 exact steps)"
done

# 2c. Ternary modes: results within the quantization bound and unbiased, far fewer bytes.
for mode in ternary auto-mask+ternary; do
  run_ranks "grad-$mode" LD_PRELOAD="$preload" SIEVE_NCCL_MODE=$mode NCCL_APP_GRADIENT_STEPS=12 \
    NCCL_APP_LOSSY=1 SIEVE_DEBUG=INFO SIEVE_DEBUG_SUBSYS=COLL
  for ((r = 0; r < nranks; ++r)); do
    [[ $(cat "$work/grad-$mode.$r.rc") == 0 ]] || fail "rank $r: gradient steps failed in $mode mode"
    dense=$(sent_bytes "$work/grad-dense.$r.log")
    sent=$(sent_bytes "$work/grad-$mode.$r.log")
    ((sent * 6 < dense)) || fail "rank $r: $mode sent $sent bytes, dense $dense"
    echo "ok: rank $r sent $sent bytes with $mode, $dense dense (12 steps within the bound)"
  done
done

# 2d. SIEVE_NCCL_MODE=auto at a stated 100 Mbit/s: every rank chooses a level for the
# gradient (which L depends on this machine's kernel speed), logged at INFO; results within
# the bound; well under half of dense's bytes (127 levels, the most, send 14 bits per element).
run_ranks grad-auto LD_PRELOAD="$preload" SIEVE_NCCL_MODE=auto SIEVE_LINK_RATE=12m \
  NCCL_APP_GRADIENT_STEPS=12 NCCL_APP_LOSSY=1 SIEVE_DEBUG=INFO SIEVE_DEBUG_SUBSYS=COLL
for ((r = 0; r < nranks; ++r)); do
  [[ $(cat "$work/grad-auto.$r.rc") == 0 ]] || fail "rank $r: gradient steps failed in auto mode"
  grep -q "auto: all-reduce of 65536 elements: q[0-9]" "$work/grad-auto.$r.log" ||
    fail "rank $r: auto did not choose a level for the gradient at 100 Mbit/s"
  dense=$(sent_bytes "$work/grad-dense.$r.log")
  sent=$(sent_bytes "$work/grad-auto.$r.log")
  ((sent * 2 < dense)) || fail "rank $r: auto sent $sent bytes, dense $dense"
  echo "ok: rank $r sent $sent bytes with auto at 100 Mbit/s, $dense dense"
done

# 3. Not preloaded: the real NCCL answers and fails at init (no GPU).
run_ranks real NCCL_APP_WAIT_S=20
for ((r = 0; r < nranks; ++r)); do
  grep -q "served by NCCL" "$work/real.$r.log" || fail "rank $r: the real NCCL did not answer"
  [[ $(cat "$work/real.$r.rc") == 2 ]] ||
    fail "rank $r exited $(cat "$work/real.$r.rc") without the shim; expected an init failure (2)"
done
echo "ok: without the preload the real NCCL answered and failed at init:"
grep -h "init failed" "$work/real.0.log" || true
