#!/usr/bin/env bash
# The main job: installs, builds, and runs sieve-bench: as root, 4 hosts (network
# namespaces) joined by 100 Mbit/s links, every Sieve all-reduce mode beside Open MPI and
# Gloo, 1-16 MiB, in under 5 minutes; the report (Markdown, CSV, plots) goes to
# bench-report-<time>/. Without root it runs unshaped on loopback and says so.
# Extra arguments go to sieve-bench (e.g. --link 1gbit --sizes 1M:256M).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec bench/sieve-bench --build build "$@"
