#!/usr/bin/env bash
# The GPU proof of the device-buffer path (issue 6) and of the NCCL shim on GPU
# tensors (issue 7), in one call on a machine with a CUDA GPU (no network):
#   1. builds build-gpu/ with CUDA (sm_90 unless SIEVE_GPU_ARCH says otherwise);
#   2. runs every cuda-labelled test: CUDA kernels bit-identical to the CPU ones,
#      and all collectives on device buffers (2 and 4 ranks sharing the GPU)
#      bit-identical to the host path, plus a busy stream proving the calls only
#      enqueue; the masked all-reduce there runs the kernels embedded in
#      libsieve (pack/unpack on the stream, only the packed vector staged), and
#      the ternary all-reduce quantizes there, dense and masked, with and
#      without error feedback (abs-max/quantize/dequantize kernels, the
#      residual in device memory, only the scales and the 2-bit wire staged);
#      where UCX supports CUDA memory, the direct dense collectives (device
#      memory handed to UCX, reductions by the embedded kernels) too, else
#      their test reports a skip naming why;
#      then the GPU path's host-side tests;
#   3. prints the kernel table (kernel, bytes, GB/s, % of a device-to-device
#      copy), fused masked pack + ternary quantize included;
#   4. runs bindings/nccl/gpu_check.sh (PyTorch DDP over libsieve-nccl.so).
# UCX and GoogleTest come from the system, or from Debian packages carried in
# tests/gpu/debs (see fetch_debs.sh). Logs and the table go to $OUT (or
# /tmp/sieve-gpu). Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/sieve-gpu}
mkdir -p "$out"
jobs=$(nproc)
t0=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - t0 )) s)"; }
fail=()
extra_cmake=()

step "machine"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: none"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
nvcc --version | tail -1

# 1. Build dependencies.
have_system_deps() {
  [[ -e /usr/lib/x86_64-linux-gnu/cmake/ucx/ucx-config.cmake || -e /usr/lib/cmake/ucx/ucx-config.cmake ]] &&
    [[ -e /usr/lib/x86_64-linux-gnu/libgtest.a || -e /usr/lib/libgtest.a || -e /usr/local/lib/libgtest.a ]]
}
if ! have_system_deps || [[ ${SIEVE_GPU_USE_DEBS:-0} == 1 ]]; then
  step "unpacking carried packages"
  if ! ls tests/gpu/debs/*.deb >/dev/null 2>&1; then
    echo "FAIL: UCX/GoogleTest are not installed and tests/gpu/debs is empty;"
    echo "      run tests/gpu/fetch_debs.sh on a networked machine and carry tests/gpu/debs"
    exit 1
  fi
  deps=/tmp/sieve-deps
  for f in tests/gpu/debs/*.deb; do dpkg -x "$f" "$deps"; done
  lib=$deps/usr/lib/x86_64-linux-gnu
  # The packages' CMake files name /usr paths; point them at the unpacked tree.
  sed -i "s#set(prefix \"/usr\")#set(prefix \"$deps/usr\")#" "$lib"/cmake/ucx/*.cmake
  export CMAKE_PREFIX_PATH=$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export UCX_MODULE_DIR=$lib/ucx
  extra_cmake=(-DGTEST_ROOT=$deps/usr -DCMAKE_INCLUDE_PATH=$deps/usr/include -DCMAKE_LIBRARY_PATH=$lib)
fi

step "configure and build (CUDA arch ${SIEVE_GPU_ARCH:-90})"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSIEVE_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${SIEVE_GPU_ARCH:-90}" "${extra_cmake[@]}" >"$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; echo "FAIL: configure"; exit 1; }
cmake --build build-gpu -j"$jobs" >"$out/build.log" 2>&1 ||
  { grep -E "error|Error" "$out/build.log" | head -30; echo "FAIL: build"; exit 1; }
echo "built"

step "cuda-labelled tests (device buffers, CUDA kernels)"
# Run directly so a skip (no GPU seen) shows; ctest would count it as passed.
for t in gpu_cuda_mp_test kernels_cuda_test masked_kernels_cuda_test ternary_kernels_cuda_test \
         nonzero_kernels_cuda_test; do
  timeout 600 "build-gpu/tests/$t" >"$out/$t.log" 2>&1
  rc=$?
  summary=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) \]" "$out/$t.log" | head -3 | tr '\n' ' ')
  echo "$t: rc $rc  $summary"
  if ((rc != 0)) || grep -q "^\[  FAILED  \]" "$out/$t.log"; then
    fail+=("$t"); grep -E "rank check failed|Failure|error" "$out/$t.log" | head -10
  elif grep -q "no CUDA device" "$out/$t.log"; then
    fail+=("$t skipped (no CUDA device seen)")
  fi
done
grep -hE "returned in|SIEVE INFO.*(CUDA driver|device buffers|device kernels)" "$out/gpu_cuda_mp_test.log" | sed 's/^.*SIEVE INFO //' | sort -u | head -16
# The direct dense all-reduce (device memory to UCX): run, or skipped with the reason.
grep -hE "direct all-reduce on [0-9]+ ranks|direct path not taken" "$out/gpu_cuda_mp_test.log" | sort -u
# The masked path must have packed on the device (kernels embedded and loaded).
grep -q "masked allreduce on device buffers: pack/unpack kernels" "$out/gpu_cuda_mp_test.log" ||
  fail+=("masked all-reduce did not take the device-kernel path (see device kernels above)")
# Ternary must have quantized on the device (only scales and wire staged):
# dense, masked (packed first), and both with error feedback (residual in
# device memory). "SIEVE INFO file:line " precedes each path's line.
for path in "ternary allreduce on device buffers" "masked ternary allreduce on device buffers" \
            "ternary allreduce on device buffers with error feedback" \
            "masked ternary allreduce on device buffers with error feedback"; do
  grep -qE "SIEVE INFO [^ ]+ $path: abs-max/quantize/dequantize kernels" "$out/gpu_cuda_mp_test.log" ||
    fail+=("$path: not on the device-kernel path (see device kernels above)")
done

step "GPU path host-side tests"
ctest --test-dir build-gpu -R '^(CudaDriverLoad|CudaDeviceOps|KernelLaunch|DriverClassifier|GpuRuntime|ClassifyCall|PlanStream|SplitEven|StagingPool|ProgressEngine|DeviceScratch|DeviceFakeMp|DeviceDirectFakeMp|DeviceTernaryFakeMp)\.' \
  --output-on-failure >"$out/ctest-host.log" 2>&1 || fail+=("host-side GPU path tests")
grep -E "tests passed|tests failed" "$out/ctest-host.log"

step "kernel table"
build-gpu/bench/sieve-gpu-kernel-bench 64 256 | tee "$out/kernel_table.md" || fail+=("kernel bench")

step "NCCL shim under PyTorch DDP (bindings/nccl/gpu_check.sh)"
timeout 300 bindings/nccl/gpu_check.sh build-gpu/bindings/nccl/libsieve-nccl.so >"$out/gpu_check.log" 2>&1 ||
  fail+=("gpu_check.sh")
grep -E "served by|ok:|FAIL" "$out/gpu_check.log" | sort -u | head -8

step "summary"
if ((${#fail[@]})); then
  printf 'FAILED: %s\n' "${fail[@]}"
  echo "logs: $out"
  exit 1
fi
echo "all GPU checks passed; logs and kernel_table.md in $out"
