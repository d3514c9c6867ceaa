#!/usr/bin/env bash
# Every function nccl.h declares (ncclXxx and pncclXxx) is a defined dynamic symbol of
# libsieve-nccl.so, and the library exports nothing else.
# Usage: symbols_test.sh NCCL_H LIBSIEVE_NCCL   (NCCL_H "" or absent: skipped, exit 77)
set -euo pipefail
header="${1:-}"
lib="$2"
if [[ -z "$header" || ! -f "$header" ]]; then
  echo "skipped: no nccl.h (\$CUDA_HOME/include/nccl.h) to compare against"
  exit 77  # CTest's SKIP_RETURN_CODE (tests/shim/CMakeLists.txt)
fi

# Prototypes start at column 0 with their return type (ncclResult_t, const char*, void):
# take the first nccl/pnccl name followed by '(' on such lines; comments and macros are skipped.
mapfile -t wanted < <(grep -E '^[A-Za-z_]' "$header" | grep -vE '^#' |
                      grep -oE '\bp?nccl[A-Za-z0-9]+[[:space:]]*\(' | tr -d '( \t' | sort -u)
mapfile -t exported < <(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)

if (( ${#wanted[@]} < 80 )); then
  echo "FAIL: parsed only ${#wanted[@]} functions from $header; the parser needs a look"
  exit 1
fi
missing=$(comm -23 <(printf '%s\n' "${wanted[@]}") <(printf '%s\n' "${exported[@]}"))
extra=$(comm -13 <(printf '%s\n' "${wanted[@]}") <(printf '%s\n' "${exported[@]}") |
        grep -vE '^(_init|_fini)$' || true)
status=0
if [[ -n "$missing" ]]; then
  echo "FAIL: declared in $header but not exported by $lib:"
  echo "$missing"
  status=1
fi
if [[ -n "$extra" ]]; then
  echo "FAIL: exported by $lib but not in $header:"
  echo "$extra"
  status=1
fi
if (( status == 0 )); then
  echo "ok: all ${#wanted[@]} nccl*/pnccl* functions of $header are exported, nothing else"
fi
exit $status
