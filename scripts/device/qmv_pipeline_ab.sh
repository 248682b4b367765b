#!/usr/bin/env bash
# qmv.affine's mma register pipeline: how many chunks of weights each warp holds in flight (J),
# and the two instruction cuts measured slower together (docs/benchmark_results/2026-12-05-h100-2).
# Harnesses, each run in turn, twice:
#   R     this code (64-bit pointers, fragment copies: kQmvMmaOffsets32 and kQmvMmaPingPong off);
#   J2    R with the rows-1-8 kernel of one m16 tile, <4, 1, 1, J>, at J = 2 (100 registers);
#   J4    the same at J = 4 (162 registers, 256-thread cap);
#   Jall  R with J doubled in every 4-bit kernel but <4, 4, 2> (G0 kernels 100-252 registers; the
#         g128 kernels of <4, 1, 1> and <4, 1, 2> spill 8-48 bytes, so read their g128 cells
#         with that in mind);
#   after the build measured in docs/benchmark_results/2026-12-05-h100-2 (both cuts on), against
#         which R was 2-9 % faster on that H100: on an H200, whose higher bandwidth leaves the
#         kernels more bound by their instructions, the decision is tested again;
#   O     R with the 32-bit offsets alone.
# The rows-1 default runs 13.6 warps per SM with 1 KB of weights in flight each, about 14 KB
# per SM against the ~23 KB that 3.1 TB/s at ~1 us of loaded latency needs. Every mma config and
# the grouped path at int4 g64 and g128, rows 1-32. Same bits in all. The harnesses are carried
# xz-packed in .carry/ab/ (docs/notes/qmv_affine.md, v9 measured). About 3.5 minutes (a second
# round as time allows).
#
#   scripts/device/qmv_pipeline_ab.sh "$OUT"      (carry .carry/ab)
set -u
VARIANTS="R J2 J4 Jall after O"
source "$(dirname "$0")/env.sh"
run_begin qmv_pipeline_ab 200 "${1:?OUTDIR}" build
for v in $VARIANTS; do
  xz -dc ".carry/ab/$v.xz" >"$R/$v" && chmod +x "$R/$v"
done
for round in 1 2; do
  for v in $VARIANTS; do
    [ "$(left)" -lt 25 ] && break 2
    HONE_TEST_PATHS=mma,grouped timeout "$(cap 30)" "$R/$v" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16,32 --formats 4x64,4x128 \
      >"$R/${v}_$round.log" 2>&1
    stamp "$v round $round" $?
    # variant, format, shape, rows, default, best invariant (mma), grouped (tolerance)
    grep -E '^[48]x' "$R/${v}_$round.log" |
      awk -v v=$v -v r=$round '{print v, r, $1, $2, $3, $4, $6, $15}' >>"$R/summary.txt"
    pack
  done
done
for v in $VARIANTS; do rm -f "${R:?}/$v"; done
# One line per cell: each variant's mean default / best mma / grouped over the rounds.
awk -v V="$VARIANTS" 'BEGIN {nv = split(V, vs, " ")}
  {k = $3 " " $4 " " $5; d[k " " $1] += $6; b[k " " $1] += $7; gr[k " " $1] += $8; n[k " " $1]++; keys[k] = 1}
  END {for (k in keys) {line = k
         for (j = 1; j <= nv; j++) {x = k " " vs[j]
           if (n[x]) line = line sprintf("  %s %.2f/%.2f/%.2f", vs[j], d[x] / n[x], b[x] / n[x], gr[x] / n[x])}
         print line}}' "$R/summary.txt" | sort | tee "$R/table.txt"
pack
