#!/usr/bin/env bash
# Installs what Sieve needs on a fresh Debian 12 machine (root or sudo), then
# configures and builds it in build/ (Release). Idempotent.
# Env: SIEVE_BUILD_DIR (default build), SIEVE_CMAKE_ARGS, SIEVE_BUILD_TARGET (default all).
set -euo pipefail
cd "$(dirname "$0")/.."

# libopenblas0-pthread: Debian's python3-torch otherwise runs on the reference
# BLAS (libblas3, about 10x slower), which makes every example trainer look
# compute-bound; installed, it takes over libblas.so.3 through the alternatives.
packages=(build-essential cmake pkg-config libucx-dev libhwloc-dev libibverbs-dev
          libgtest-dev libgmock-dev libbenchmark-dev openmpi-bin libopenmpi-dev iproute2
          libssl-dev
          libgloo-dev gnuplot-nox python3
          python3-torch python3-numpy python3-sklearn python3-pytest python3-matplotlib
          libopenblas0-pthread
          python3-pip python3-setuptools
          clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build_dir=${SIEVE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${SIEVE_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target "${SIEVE_BUILD_TARGET:-all}"
