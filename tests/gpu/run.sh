#!/usr/bin/env bash
# The GPU proof, in ONE call that cannot hang, on a lent GPU machine (CUDA 13,
# CMake, ninja, Python with PyTorch; no package manager, no network):
#   run(command="tests/gpu/run.sh", carry=["tests/gpu/carry"], timeout_s=600)
# tests/gpu/carry comes from tests/gpu/fetch_carry.sh (Debian packages + UCX
# with CUDA); tests/gpu/carry_dry_run.sh proves here that it is complete.
#
# Steps (each prints ONE line: PASS, FAIL, SKIP or TIMEOUT, and why):
#   machine     the GPU, driver, nvcc, PyTorch
#   deps        the carry unpacked into $SIEVE_DEPS (tests/gpu/carry.py)
#   configure   CMake over the carry only (tests/gpu/carry_env.sh), CUDA on
#   build       the library, the NCCL shim, the GPU tests and the kernel bench (all cores)
#   carry-check nothing of the build came from the system's /usr
#   cuda-tests  every cuda-labelled test, on UCX with CUDA support (the
#               direct path runs there); device-kernel paths confirmed from the logs
#   kernels     the kernel table against a device-to-device copy
#   ddp         the NCCL shim under PyTorch DDP (2 ranks on one GPU, LD_PRELOAD
#               in place of nvidia-nccl's library) vs a single-process run
#   shared-queue the direct path with more streams than hardware queues
#   sanitizer   compute-sanitizer memcheck and racecheck on a short device-path test
# A watchdog gives each step a budget (all within SIEVE_GPU_RUN_BUDGET, 570 s):
# a step past it is stopped and the line says where it was (the test running,
# each process's state and kernel wait channel; details in $OUT/<step>.where).
# The last lines are a table of the steps. Logs go to $OUT (or /tmp/sieve-gpu).
# Exit status 0 when no step failed (skips are not failures).
#
# Without a GPU (here) the GPU steps say so in one line each. Knobs for
# testing the script itself: SIEVE_GPU_RUN_REUSE=<build dir> skips
# configure/build; SIEVE_GPU_RUN_SELFTEST=1 adds a step that hangs on purpose.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-/tmp/sieve-gpu}
mkdir -p "$out"
budget_total=${SIEVE_GPU_RUN_BUDGET:-570}
t0=$(date +%s)
build=${SIEVE_GPU_RUN_REUSE:-$root/build-gpu}
export SIEVE_DEPS=${SIEVE_DEPS:-/tmp/sieve-deps}
declare -a table=()
failed=0

# --- the watchdog -----------------------------------------------------------

# The processes of process group $1, from /proc (no ps needed).
group_pids() {
  local stat
  for stat in /proc/[0-9]*/stat; do
    awk -v g="$1" '{sub(/.*\) /, ""); if ($3 == g) print FILENAME}' "$stat" 2>/dev/null
  done | sed 's#^/proc/##; s#/stat$##'
}

# Where a stuck step is: the test it was running, every process of its group
# with its state and kernel wait channel (and threads' channels, counted).
describe_stuck() {
  local pgid=$1 log=$2 where=$3
  {
    echo "last test started: $(grep -E '^\[ RUN +\]' "$log" 2>/dev/null | tail -1)"
    echo "last log line: $(tail -1 "$log" 2>/dev/null)"
    local p
    for p in $(group_pids "$pgid"); do
      [[ -r /proc/$p/stat ]] || continue
      local comm state wchan threads
      comm=$(cat /proc/$p/comm 2>/dev/null)
      state=$(awk '{print $3}' /proc/$p/stat 2>/dev/null)
      wchan=$(cat /proc/$p/wchan 2>/dev/null)
      threads=$(for t in /proc/$p/task/*; do cat "$t/wchan" 2>/dev/null; echo; done |
                sed 's/^$/running/' | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
      echo "pid $p $comm state $state wchan ${wchan:-0} threads: $threads"
      head -8 /proc/$p/stack 2>/dev/null | sed 's/^/    kernel: /'
      if command -v gdb >/dev/null; then
        timeout 20 gdb -q -batch -p "$p" -ex 'thread apply all bt 8' 2>/dev/null |
          grep -E '^(Thread|#)' | head -40 | sed 's/^/    /'
      fi
    done
  } >"$where" 2>&1
  # The one-line summary: the test, then each process and where it waits.
  local test procs
  test=$(sed -n 's/^last test started: \[ RUN *\] *//p' "$where")
  procs=$(grep -E '^pid ' "$where" | awk '{printf "%s%s(%s) %s", sep, $3, $5, $7; sep="; "}' | head -c 300)
  echo "${test:+in $test; }${procs:-no process left}"
}

# step NAME BUDGET COMMAND...: runs COMMAND (a function or a program) in a
# process group of its own, output to $OUT/NAME.log. COMMAND prints its
# one-line note as the last line of its log ("NOTE: ..."); exit 0 pass,
# 77 skip, else fail.
step() {
  local name=$1 budget=$2
  shift 2
  local log=$out/$name.log start now left
  start=$(date +%s)
  left=$((budget_total - (start - t0)))
  if ((left < 5)); then
    report "$name" SKIP 0 "no time left in the ${budget_total} s budget"
    return 1
  fi
  ((budget > left)) && budget=$left
  set -m
  ("$@") >"$log" 2>&1 </dev/null &
  local pid=$!
  set +m
  while kill -0 "$pid" 2>/dev/null; do
    now=$(date +%s)
    if ((now - start >= budget)); then
      local where
      where=$(describe_stuck "$pid" "$log" "$out/$name.where")
      kill -TERM -- "-$pid" 2>/dev/null
      for _ in 1 2 3 4 5; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -KILL -- "-$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      report "$name" TIMEOUT $(($(date +%s) - start)) "stopped after ${budget} s: $where"
      return 1
    fi
    sleep 1
  done
  wait "$pid"
  local rc=$? note
  note=$(grep -E '^NOTE: ' "$log" | tail -1 | cut -c7-)
  [[ -n $note ]] || note=$(tail -1 "$log" | cut -c1-200)
  case $rc in
    0) report "$name" PASS $(($(date +%s) - start)) "$note" ;;
    77) report "$name" SKIP $(($(date +%s) - start)) "$note"; return 1 ;;
    *) report "$name" FAIL $(($(date +%s) - start)) "$note (exit $rc; $log)"; return 1 ;;
  esac
}

report() {  # NAME RESULT SECONDS NOTE: the step's one line, kept for the table
  local line
  line=$(printf '%-8s %-12s %4s s  %s' "$2" "$1" "$3" "$4")
  echo "$line"
  table+=("$line")
  [[ $2 == FAIL || $2 == TIMEOUT ]] && failed=1
  return 0
}

note() { echo "NOTE: $*"; }

# --- the steps --------------------------------------------------------------

have_gpu=0
gpu_why="no GPU"
machine() {
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  local gpu nvcc torch
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
  nvcc=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
  torch=$(python3 -c 'import torch; print(torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)
  echo "gpu: $gpu"; echo "nvcc: $nvcc"; echo "torch: $torch"
  if ! nvidia-smi -L >/dev/null 2>&1; then
    note "no GPU ($(command -v nvidia-smi >/dev/null && echo "nvidia-smi lists none" || echo "no nvidia-smi")); nvcc ${nvcc:-absent}; torch $torch"
    return 77
  fi
  note "$gpu; nvcc ${nvcc:-absent}; torch $torch"
}

deps() {
  if ! ls tests/gpu/carry/debs/*.deb >/dev/null 2>&1; then
    note "tests/gpu/carry is missing: run tests/gpu/fetch_carry.sh where there is a network and carry it"
    return 1
  fi
  rm -rf "$SIEVE_DEPS"
  python3 tests/gpu/carry.py unpack tests/gpu/carry "$SIEVE_DEPS" || return 1
  note "$(ls tests/gpu/carry/debs | wc -l) packages and UCX $(sed -n 's/^Version: //p' "$SIEVE_DEPS"/ucx-cu13/libucx/lib/pkgconfig/ucx.pc) (CUDA) in $SIEVE_DEPS"
}

configure() {
  # shellcheck source=carry_env.sh
  source tests/gpu/carry_env.sh
  command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIEVE_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${SIEVE_GPU_ARCH:-90}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    "${carry_cmake_args[@]}" || { note "cmake failed (see the log)"; return 1; }
  note "CUDA arch ${SIEVE_GPU_ARCH:-90}, dependencies from $SIEVE_DEPS only"
}

gpu_targets=(sieve sieve_nccl sieve-info gpu_cuda_mp_test kernels_cuda_test
             masked_kernels_cuda_test ternary_kernels_cuda_test nonzero_kernels_cuda_test
             block_quant_cuda_test sieve-gpu-kernel-bench)
build_all() {
  local jobs
  jobs=$(nproc)
  cmake --build "$build" -j"$jobs" --target "${gpu_targets[@]}" ||
    { grep -E "error" "$out/build.log" | head -5; note "build failed"; return 1; }
  note "${#gpu_targets[@]} targets on $jobs cores"
}

carry_check() {
  python3 tests/gpu/carry.py check-build "$build" "$SIEVE_DEPS" | tee /dev/stderr | tail -1 |
    sed 's/^/NOTE: /'
  return "${PIPESTATUS[0]}"
}

needs_gpu() {  # a GPU step without a GPU: one line, a skip
  if ((!have_gpu)); then note "$gpu_why"; return 77; fi
}

cuda_tests() {
  needs_gpu || return 77
  source tests/gpu/carry_env.sh
  local t rc=0 passed=0 failed_tests=() summary
  for t in gpu_cuda_mp_test kernels_cuda_test masked_kernels_cuda_test ternary_kernels_cuda_test \
           nonzero_kernels_cuda_test block_quant_cuda_test; do
    # The shared-queue case has a step of its own (a hang there must not cost these).
    SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo with_cuda_ucx "$build/tests/$t" \
      --gtest_filter=-DeviceCudaMp.DirectWithStreamsSharingQueues >"$out/$t.log" 2>&1
    summary=$(grep -E '^\[  PASSED  \]' "$out/$t.log" | grep -o '[0-9]*' | head -1)
    passed=$((passed + ${summary:-0}))
    if grep -qE '^\[  FAILED  \]' "$out/$t.log" || ! grep -q '^\[  PASSED  \]' "$out/$t.log"; then
      failed_tests+=("$t"); rc=1
      grep -E 'rank check failed|Failure|error' "$out/$t.log" | head -5
    fi
  done
  local log=$out/gpu_cuda_mp_test.log direct paths=0 path
  direct=$(grep -hoE 'direct all-reduce on [0-9]+ ranks|direct path not taken: .*' "$log" | sort -u | head -1)
  for path in "masked allreduce on device buffers: pack/unpack kernels" \
              "ternary allreduce on device buffers: abs-max" \
              "masked ternary allreduce on device buffers: abs-max" \
              "ternary allreduce on device buffers with error feedback: abs-max"; do
    grep -q "$path" "$log" && paths=$((paths + 1))
  done
  ((paths == 4)) || { rc=1; failed_tests+=("device-kernel paths: $paths of 4 seen"); }
  if ((rc)); then note "failed: ${failed_tests[*]}"; return 1; fi
  note "$passed tests passed in 5 binaries; device-kernel paths 4 of 4; ${direct:-direct path: no line}"
}

sanitizer() {
  needs_gpu || return 77
  source tests/gpu/carry_env.sh
  local tool rc=0 notes=()
  for tool in memcheck racecheck; do
    SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo with_cuda_ucx compute-sanitizer --tool "$tool" \
      --target-processes all --error-exitcode 99 \
      "$build/tests/gpu_cuda_mp_test" --gtest_filter='DeviceCudaMp.ShortDevicePath' \
      >"$out/sanitizer-$tool.log" 2>&1
    local r=$?
    local errors
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$out/sanitizer-$tool.log" | awk '{s += $3} END {print s + 0}')
    notes+=("$tool: exit $r, $errors errors")
    ((r == 0)) || rc=1
  done
  note "${notes[*]}"
  return $rc
}

kernels() {
  needs_gpu || return 77
  "$build/bench/sieve-gpu-kernel-bench" 64 256 | tee "$out/kernel_table.md" || return 1
  local fused
  fused=$(grep -E 'masked pack \+ ternary quantize' "$out/kernel_table.md" | head -1 |
          awk -F'|' '{gsub(/ /, "", $5); print $5}')
  note "fused masked pack + ternary quantize at 64 MiB: ${fused:-?} of the D2D copy (goal >= 60%); table in $out/kernel_table.md"
}

shared_queue() {
  needs_gpu || return 77
  source tests/gpu/carry_env.sh
  SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo CUDA_DEVICE_MAX_CONNECTIONS=2 with_cuda_ucx \
    "$build/tests/gpu_cuda_mp_test" --gtest_filter='DeviceCudaMp.DirectWithStreamsSharingQueues' ||
    { note "failed (a hang is stopped by the watchdog: see docs/gpu.md on hardware queues)"; return 1; }
  grep -q SKIPPED "$out/shared-queue.log" &&
    { note "$(grep -oE 'direct path not taken: .*' "$out/shared-queue.log" | head -1)"; return 77; }
  note "direct path with 34 streams over 2 hardware queues completed"
}

ddp() {
  needs_gpu || return 77
  source tests/gpu/carry_env.sh
  with_cuda_ucx bindings/nccl/gpu_check.sh "$build/bindings/nccl/libsieve-nccl.so" ||
    { note "$(grep -E 'FAIL' "$out/ddp.log" | tail -1)"; return 1; }
  note "$(grep -E '^ok: DDP' "$out/ddp.log" | tail -1 | cut -c5-)"
}

# SIEVE_GPU_RUN_SELFTEST: the watchdog must stop this, naming the "test" it was in.
stuck() {
  echo "[ RUN      ] WatchdogSelftest.SleepsPastItsBudget"
  sleep 600
}

# --- the run ----------------------------------------------------------------

echo "Sieve GPU run: $(git log -1 --format='%h %s' 2>/dev/null | cut -c1-70); budget ${budget_total} s; logs in $out"
step machine 30 machine && have_gpu=1
[[ -f $out/machine.log ]] && gpu_why=$(grep -E '^NOTE: ' "$out/machine.log" | cut -c7- | cut -d';' -f1)
[[ ${SIEVE_GPU_RUN_SELFTEST:-0} == 1 ]] && step watchdog-selftest 3 stuck
built=0
if [[ -n ${SIEVE_GPU_RUN_REUSE:-} ]]; then
  step deps 30 deps
  report configure SKIP 0 "reusing $build (SIEVE_GPU_RUN_REUSE)"
  report build SKIP 0 "reusing $build"
  built=1
elif step deps 30 deps && step configure 90 configure && step build 300 build_all; then
  built=1
  step carry-check 20 carry_check
fi
if ((built)); then
  # Most telling first: a slow step leaves the later ones "no time left".
  step cuda-tests 150 cuda_tests
  step kernels 45 kernels
  step ddp 120 ddp
  step shared-queue 40 shared_queue
  step sanitizer 100 sanitizer
else
  for s in cuda-tests kernels ddp shared-queue sanitizer; do report "$s" SKIP 0 "nothing built"; done
fi

echo
echo "| result   | step         | time | note"
printf '%s\n' "${table[@]}" | sed 's/^/| /'
echo "total $(($(date +%s) - t0)) s; logs in $out"
exit $failed
