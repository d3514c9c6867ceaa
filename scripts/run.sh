#!/usr/bin/env bash
# The main job: installs, builds, and runs sieve-perf all-reduce on 4 local
# ranks from 8 B to 64 MiB, checking every result. Extra arguments go to sieve-perf.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/src/sieve-run -n "${SIEVE_RANKS:-4}" build/bench/sieve-perf -x allreduce -b 8 -e 64M -f 2 -c 1 "$@"
