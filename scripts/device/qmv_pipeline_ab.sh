#!/usr/bin/env bash
# qmv.affine's mma register pipeline, each change alone: the harness built before the 32-bit load
# offsets and the copy-free fragments (before), with neither (R, the code after they were
# measured slower together), offsets only (O), ping-pong only (P), and both (after, the build
# measured in docs/benchmark_results/2026-12-05-h100-2); and R with the rows-1-8 kernel of one
# m16 tile (<4, 1, 1, J>) taking J = 2 (J2, 100 registers) or 4 (J4, 162 at a 256-thread cap)
# chunks of weights in flight per warp in place of 1 (the rows-1 kernels wait on their loads:
# more bytes in flight per SM). Every mma config and the grouped path at
# int4 g64 and g128, rows 1-32, each harness in turn, twice. Same bits in all seven.
# The harnesses are carried xz-packed in .carry/ab/ (see docs/notes/qmv_affine.md, v9). About
# 3.5 minutes (a second round as time allows).
#
#   scripts/device/qmv_pipeline_ab.sh "$OUT"      (carry .carry/ab)
set -u
VARIANTS="R J2 J4 before O P"
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
rm -f "$R"/before "$R"/R "$R"/O "$R"/P "$R"/after "$R"/J2 "$R"/J4
# One line per cell: each variant's mean default / best mma / grouped over the rounds.
awk -v V="$VARIANTS" 'BEGIN {nv = split(V, vs, " ")}
  {k = $3 " " $4 " " $5; d[k " " $1] += $6; b[k " " $1] += $7; gr[k " " $1] += $8; n[k " " $1]++; keys[k] = 1}
  END {for (k in keys) {line = k
         for (j = 1; j <= nv; j++) {x = k " " vs[j]
           if (n[x]) line = line sprintf("  %s %.2f/%.2f/%.2f", vs[j], d[x] / n[x], b[x] / n[x], gr[x] / n[x])}
         print line}}' "$R/summary.txt" | sort | tee "$R/table.txt"
pack
