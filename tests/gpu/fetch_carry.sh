#!/usr/bin/env bash
# Fills tests/gpu/carry/ (ignored by git) with everything tests/gpu/run.sh
# needs on a GPU machine that has CUDA, CMake, ninja and Python but no
# package manager and no network. Run on a networked Debian 12 machine (this
# project's dev/CI kind), then hand the folder to the device run:
#   run(command="tests/gpu/run.sh", carry=["tests/gpu/carry"], timeout_s=600)
#   debs/           the Debian packages the build and its run need, with the
#                   libraries they load (tests/gpu/carry.py unpacks them with
#                   Python alone: no dpkg there)
#   ucx-cu13.tar.xz UCX with CUDA support (PyPI's libucx-cu13 wheel, its
#                   libraries, modules and headers only): the direct path
#   MANIFEST        what came from where, with SHA-256s
# Checks the 64 MiB the device run may carry beside the source tree.
set -euo pipefail
cd "$(dirname "$0")"
carry=carry
rm -rf "$carry.new"
mkdir -p "$carry.new/debs"
# Build: pkg-config (pkgconf), hwloc and libibverbs (topo/), UCX (transport/),
# OpenSSL's libcrypto (bootstrap SHA-256/HMAC), GoogleTest and GoogleMock
# (GTestConfig names gmock too); libibverbs.pc requires libnl's .pc files.
# Run time: what those libraries load (libnl, librdmacm and libnuma for UCX
# and verbs, libudev for hwloc, libpkgconf for pkgconf).
pkgs=(pkgconf pkgconf-bin libpkgconf3
      libhwloc-dev libhwloc15 libudev1
      libibverbs-dev libibverbs1 libnl-3-dev libnl-3-200 libnl-route-3-dev libnl-route-3-200
      libucx-dev libucx0 librdmacm1 libnuma1
      libssl-dev libssl3
      libgtest-dev libgmock-dev)
(cd "$carry.new/debs" && apt-get download "${pkgs[@]}")
wheel_dir=$(mktemp -d)
trap 'rm -rf "$wheel_dir"' EXIT
python3 -m pip download --no-deps --only-binary=:all: libucx-cu13 -d "$wheel_dir"
wheel=$(ls "$wheel_dir"/libucx_cu13-*.whl)
python3 carry.py slim-wheel "$wheel" "$carry.new/ucx-cu13.tar.xz"
{
  echo "# tests/gpu/carry: made by tests/gpu/fetch_carry.sh on $(. /etc/os-release; echo "$PRETTY_NAME")"
  echo "# wheel $(basename "$wheel") $(sha256sum "$wheel" | cut -d' ' -f1)"
  (cd "$carry.new" && sha256sum debs/*.deb ucx-cu13.tar.xz)
} >"$carry.new/MANIFEST"
bytes=$(du -sb "$carry.new" | cut -f1)
if (( bytes > 64 << 20 )); then
  echo "FAIL: the carry is $((bytes >> 20)) MiB, over the 64 MiB a device run may carry" >&2
  exit 1
fi
rm -rf "$carry"
mv "$carry.new" "$carry"
echo "tests/gpu/carry: ${#pkgs[@]} packages and UCX (CUDA), $((bytes >> 10)) KiB; carry it as tests/gpu/carry"
