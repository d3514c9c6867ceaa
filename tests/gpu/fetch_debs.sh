#!/usr/bin/env bash
# Run on a networked Debian 12 machine (this project's dev/CI kind) before a GPU
# run: downloads the Debian packages Sieve builds against that the GPU image
# lacks (UCX, GoogleTest) into tests/gpu/debs/, which git ignores; pass
# carry=["tests/gpu/debs"] to the device run so tests/gpu/run.sh can unpack them
# (under /tmp, never over /) on a machine that cannot fetch anything.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p debs
cd debs
apt-get download libucx0 libucx-dev libgtest-dev libgmock-dev libnuma1 libibverbs1 librdmacm1
ls -l
