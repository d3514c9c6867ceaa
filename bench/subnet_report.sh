#!/usr/bin/env bash
# SDP / D2FT against dense on local ranks: sieve-perf at one size for dense,
# --layout sdp:C and --d2ft P, each run ROUNDS times interleaved (the best
# time of the rounds is kept, since other load only adds), then one table:
# time out-of-place / in-place, ratio to dense, bytes/rank vs the plan's ideal,
# and the goals time <= (C + 0.05) x dense, bytes within 5% of ideal.
# Usage: bench/subnet_report.sh [BUILD_DIR] [NRANKS] [SIZE] [ROUNDS]
set -euo pipefail
build="${1:-build}" n="${2:-4}" size="${3:-64M}" rounds="${4:-3}"
configs=("dense" "sdp:0.25" "sdp:0.5" "sdp:0.75" "d2ft:0.25" "d2ft:0.5")
declare -A best_out best_in bytes ideal
for ((r = 0; r < rounds; ++r)); do
  for c in "${configs[@]}"; do
    case "$c" in
      dense) args=() ;;
      sdp:*) args=(--layout "$c") ;;
      d2ft:*) args=(--d2ft "${c#d2ft:}") ;;
    esac
    out=$("$build/src/sieve-run" -n "$n" "$build/bench/sieve-perf" -b "$size" -e "$size" \
          -n 3 -w 1 -c 0 "${args[@]}" 2>&1)
    line=$(grep -E '^\[0\] +[0-9]' <<<"$out" | head -1)
    read -r _ _ _ _ _ _ t_out _ _ b_out _ t_in _ _ _ _ <<<"$line"
    ideal[$c]=$(grep -oE 'ideal bytes/rank at size [0-9]+: [0-9]+' <<<"$out" | awk '{print $NF}' || true)
    bytes[$c]=$b_out
    if [[ -z "${best_out[$c]:-}" ]] || (( $(echo "$t_out < ${best_out[$c]}" | bc) )); then best_out[$c]=$t_out; fi
    if [[ -z "${best_in[$c]:-}" ]] || (( $(echo "$t_in < ${best_in[$c]}" | bc) )); then best_in[$c]=$t_in; fi
  done
done
printf '# %d ranks, %s float32, best of %d rounds (3 timed calls each); load: %s\n' \
  "$n" "$size" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %12s %12s %8s %8s %12s %12s %8s %s\n' config out_us in_us out/den in/den \
  bytes/rank ideal bytes/id goal
for c in "${configs[@]}"; do
  ro=$(echo "scale=3; ${best_out[$c]} / ${best_out[dense]}" | bc)
  ri=$(echo "scale=3; ${best_in[$c]} / ${best_in[dense]}" | bc)
  id="${ideal[$c]:-}"
  rb=$([[ -n "$id" && "$id" != 0 ]] && echo "scale=4; ${bytes[$c]} / $id" | bc || echo "-")
  goal="-"
  [[ "$c" == sdp:* ]] && goal="time <= $(echo "${c#sdp:} + 0.05" | bc) x dense"
  printf '%-10s %12.0f %12.0f %8s %8s %12s %12s %8s %s\n' "$c" "${best_out[$c]}" \
    "${best_in[$c]}" "$ro" "$ri" "${bytes[$c]}" "${id:--}" "$rb" "$goal"
done
