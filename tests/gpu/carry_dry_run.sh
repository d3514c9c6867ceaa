#!/usr/bin/env bash
# Proves here that tests/gpu/carry is complete before a GPU machine (no
# package manager, no network) depends on it: unpacks only the carried files
# into an empty prefix, configures and builds the GPU run's targets against
# that prefix alone (tests/gpu/carry_env.sh: no system prefixes, the carried
# pkgconf over the prefix's .pc files), then checks that no header or library
# of a carried package came from the system's /usr (carry.py check-build:
# the headers each object read, the link lines, the CMake cache), that the
# built library resolves every carried library inside the prefix, and that it
# runs on both carried UCX builds (Debian's 1.13 and the wheel's 1.22).
# Usage: tests/gpu/carry_dry_run.sh [targets...]  (default: the GPU run's)
set -euo pipefail
cd "$(dirname "$0")/../.."
export SIEVE_DEPS=${SIEVE_DEPS:-/tmp/sieve-carry-dry-run}
build=${SIEVE_DRY_BUILD:-build-carry}
rm -rf "$SIEVE_DEPS"
python3 tests/gpu/carry.py unpack tests/gpu/carry "$SIEVE_DEPS"
# shellcheck source=carry_env.sh
source tests/gpu/carry_env.sh
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
targets=("$@")
((${#targets[@]})) || targets=(sieve sieve_nccl sieve-info gpu_host_test gpu_cuda_mp_test
                                 kernels_cuda_test sieve-gpu-kernel-bench)
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIEVE_WITH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "${carry_cmake_args[@]}" \
  >"$build/configure.log" 2>&1 || { tail -30 "$build/configure.log"; exit 1; }
grep -E "Found (PkgConfig|OpenSSL|GTest)|Checking for module|  Found" "$build/configure.log" || true
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
python3 tests/gpu/carry.py check-build "$build" "$SIEVE_DEPS"
# Every carried library libsieve loads resolves inside the prefix.
lib=$(ls "$build"/src/libsieve.so.* | head -1)
bad=$(with_debian_ucx ldd "$lib" | grep -E 'lib(ucp|ucs|uct|ucm|hwloc|ibverbs|nl-|rdmacm|numa|udev|crypto)' |
      grep -v "$SIEVE_DEPS" || true)
[[ -z $bad ]] || { echo "FAIL: resolved outside the prefix:"; echo "$bad"; exit 1; }
echo "ok: libsieve's carried libraries all resolve in $SIEVE_DEPS"
with_debian_ucx "$build/src/sieve-info" -n 1 | grep -E '^UCX ' | sed 's/^/debian UCX: /'
with_cuda_ucx "$build/src/sieve-info" -n 1 | grep -E '^UCX ' | sed 's/^/wheel UCX:  /'
with_debian_ucx "$build/tests/gpu_host_test" --gtest_brief=1 2>&1 | tail -2
echo "dry run: the carry configures and builds ${#targets[@]} targets with nothing of the system's packages"
