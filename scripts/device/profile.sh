#!/usr/bin/env bash
# Where the decode and small-prefill kernels spend their cycles: one Nsight Compute profile per
# kernel (one launch each, caches flushed by ncu), with warp-state and source-level stall
# sampling, on the matrices where they miss the read ceiling or the cuBLAS bar:
#   qmv.affine int4 g64 at rows 1 and 16, and gemv.bf16 at rows 32 (their defaults, through
#   `hone bench`), on 28672 x 4096 and 14336 x 4096;
#   qmm.affine's TMA engine (64 x 256 tile) at 64 rows on 28672 x 4096, plain and with the
#   lookahead (engine 3), and its register-A engine (64 x 64) on 4096 x 14336, through qmm_probe
#   (one launch, no gate); and the 4096 x 4096 picks at 64 and 128 rows (mma.sync 64 x 32, TMA
#   lookahead 128 x 64 with stream-K).
# Then compute-sanitizer racecheck of every kernel of the two qmm wgmma engines (one launch each
# at leftover shapes). On request (step `peer`), qmv.affine's rows-1 default beside PyTorch's
# int4 kernel (tinygemm, torch._weight_int4pack_mm) on the same weights, int4 g64, one launch
# each, at the SM clock the run would have (--clock-control none): 896 x 896, where hone takes
# 3.3 us against torch's 2.6 (2026-12-05-h100-4), and 4096 x 4096 (1.16x torch's time,
# 2026-12-07-5; PEER_MATRICES names others). Its grid, warps per SM, memory throughput and
# stalls against torch's (an n8 output tile a CTA, 8 warps splitting K: 4x hone's warps on
# 896 x 896) say where the small matrices lose.
#
#   BUILD=build scripts/device/profile.sh OUTDIR [STEPS]
#     STEPS: ncu,racecheck (default both), peer, pick (the H200 int4 gate_up pick of 2026-12-05)
#     ahead (the `ahead=2` default and pick of 2026-12-06 on the same shape) and rows (the
#     int4 g64 defaults at 8 and 16 rows on 28672 x 4096)
#
# BUILD must hold tools/hone/hone and bench/qmm_probe (targets hone_tool and qmm_probe of a CUDA
# build with -DHONE_QMM_TACTICS=full). OUTDIR receives profile.tar.gz, which holds, per profile,
# NAME.txt (the details page: speed of light, occupancy, warp states, scheduler), NAME.stalls.txt
# (the 40 SASS lines with the most stall samples, with their stall reasons) and NAME.run.log, and
# racecheck.log. The reports themselves (tens of MB) stay in a scratch folder: the device tool
# brings back a few files of limited size.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: BUILD=build $0 OUTDIR [STEPS]" >&2; exit 2; }
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)
out=$1
steps=${2:-ncu,racecheck}
BUILD=${BUILD:-build}
case $out in /*) ;; *) out=$root/$out ;; esac
final=$out
out=$final/profile
mkdir -p "$out"
scratch=$(mktemp -d)
# The archive of the text outputs, whatever the script ran before it ends.
finish() {
  tar czf "$final/profile.tar.gz" -C "$final" profile && rm -rf "$out"
  rm -rf "$scratch"
}
trap finish EXIT
# shellcheck source=env.sh
source "$root/scripts/device/env.sh"
want() { case ",$steps," in *",$1,"*) return 0 ;; esac; return 1; }
hone=$BUILD/tools/hone/hone
probe=$BUILD/bench/qmm_probe
export HONE_CACHE_DIR=$scratch/cache
unset HONE_CACHE HONE_AUTOTUNE

sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
          --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters)

# profile NAME KERNEL_REGEX SKIP COMMAND...: the (SKIP+1)-th launch of a matching kernel.
# NCU_EXTRA: more ncu options.
profile() {
  local name=$1 regex=$2 skip=$3
  shift 3
  local rep=$scratch/$name
  # shellcheck disable=SC2086
  if ! timeout 240 ncu "${sections[@]}" ${NCU_EXTRA:-} --import-source no --kernel-name "regex:$regex" \
      --launch-skip "$skip" --launch-count 1 -f -o "$rep" "$@" >"$out/$name.run.log" 2>&1; then
    echo "$name: ncu failed (rc $?), see $name.run.log"
    return
  fi
  ncu -i "$rep.ncu-rep" --page details >"$out/$name.txt" 2>&1
  ncu -i "$rep.ncu-rep" --page source --print-source sass --csv >"$rep.source.csv" 2>&1 &&
    python3 "$root/scripts/ncu_stalls.py" "$rep.source.csv" --top 40 >"$out/$name.stalls.txt" 2>&1
  echo "$name: $(grep -m1 -E 'Duration' "$out/$name.txt" | tr -s ' ')"
}

if want ncu; then
  command -v ncu >/dev/null || { echo "profile: ncu not on PATH" >&2; exit 1; }
  q='--samples 1 --batch 1'
  profile qmv_r1_28672 'qmv_affine' 2 $hone bench --op qmv.affine \
    --shape rows=1,n=28672,k=4096,bits=4,group=64 $q
  # Under the tolerance gate: the batch-invariant one launches the rows-1 default too, which
  # this profile caught in 2026-12-05-h100-3 (84 registers, the grid of rows 1).
  profile qmv_r16_28672 'qmv_affine' 2 $hone bench --op qmv.affine \
    --shape rows=16,n=28672,k=4096,bits=4,group=64 --numerics tolerance $q
  profile gemv_r32_14336 'gemv_bf16' 2 $hone bench --op gemv.bf16 --shape rows=32,n=14336,k=4096 $q
  export QMM_PROBE_ONCE=1
  profile qmm_tma_64x256 'qmm_affine_tma' 0 $probe 64 28672 4096 64 2,64,256,256,17,3,1
  profile qmm_tma_ahead_64x256 'qmm_affine_tma' 0 $probe 64 28672 4096 64 3,64,256,256,17,3,1
  profile qmm_tma_stream_64x256 'qmm_affine_tma' 0 $probe 64 28672 4096 64 2,64,256,256,17,3,1,1
  profile qmm_rs_64x64 'qmm_affine_wgmma_rs' 0 $probe 64 4096 14336 64 1,64,64,256,16,3,1
  # The 4096 x 4096 picks where quantized_linear trails cuBLAS BF16 (0.73-0.94x at 48-64 rows,
  # 0.64-0.74x at 96-256): mma.sync 64 x 32 at 64 rows (the H200 pick) and the TMA lookahead
  # 128 x 64 with stream-K at 128 (the H100 pick). Per K block a CTA reads 4-16 KB of words and
  # 32-64 KB of activations, every CTA the same activations from L2: the memory workload
  # section's L2 bytes against the words' 9.4 MB say whether those re-reads bound it.
  profile qmm_mma_64x32_4096 'qmm_affine_mma' 0 $probe 64 4096 4096 64 0,64,32,256,8,3,1
  profile qmm_tma_ahead_128x64_4096 'qmm_affine_tma' 0 $probe 128 4096 4096 64 3,128,64,256,5,3,1,1
  unset QMM_PROBE_ONCE
fi

if want rows; then
  # The int4 g64 defaults at 8 and 16 rows on 28672 x 4096: the same weight bytes and
  # dequantisation, one activation tile against two (`<4, 2, 2, 1>`), 34 against 48 us on an
  # H100 (docs/notes/qmv_affine.md, v18). Their stall reasons and issue rates side by side say
  # what the second tile waits on.
  command -v ncu >/dev/null || { echo "profile: ncu not on PATH" >&2; exit 1; }
  # The pipes' utilisation and the instruction mix too: is the second tile's tensor work, or
  # its activation loads, what the 16-row kernel issues more of?
  # Matched by template arguments (<bits, n8 tiles, m16 tiles, J>), under the tolerance gate:
  # the batch-invariant gate also launches the rows-1 default, which the profiles of
  # 2026-12-05-h100-3 (qmv_r16_28672: 84 registers, the grid of rows 1) caught instead.
  export NCU_EXTRA="--kernel-name-base demangled --section ComputeWorkloadAnalysis --section InstructionStats"
  # The ring's fastest config at 16 rows and its 8-row twin (45.8 against 36.6 us, call1 of
  # 2026-12-06-h100-5): the same producer and weight stream, so what the second n8 tile adds
  # is the consumers' alone. 16 rows first: a call that runs out of time loses the 8-row ones.
  for spec in "16 2, \(int\)2, \(int\)1" "8 1, \(int\)1, \(int\)2"; do
    r=${spec%% *}
    profile "qmv_default_r${r}_28672" "qmv_affine_mma_kernel<\(int\)4, \(int\)${spec#* }, " 1 \
      $hone bench --op qmv.affine --shape rows=$r,n=28672,k=4096,bits=4,group=64 \
      --numerics tolerance --samples 1 --batch 1
    HONE_TACTIC_CUDA_QMV_AFFINE="qmv.affine.ring:rows_per_cta=$r,warps=8,warps_k=1,outputs_per_warp=32,split_k=1,stages=4,ctas_per_sm=1" \
      profile "qmv_ring_r${r}_28672" 'weight_ring_kernel' 1 $hone bench --op qmv.affine \
      --shape rows=$r,n=28672,k=4096,bits=4,group=64 --numerics tolerance --samples 1 --batch 1
  done
  unset NCU_EXTRA
fi

if want pick; then
  # The H200 step's int4 gate_up pick (tolerance tune): 32 rows a warp, 224 CTAs of 170
  # registers, bound by its grid on an H100 (docs/notes/qmv_affine.md, v13). hone bench runs the
  # default beside it, so the kernel is matched by its demangled template arguments.
  command -v ncu >/dev/null || { echo "profile: ncu not on PATH" >&2; exit 1; }
  export NCU_EXTRA="--kernel-name-base demangled"
  profile qmv_pick_r1_28672 \
    'qmv_affine_mma_kernel<\(int\)4, \(int\)1, \(int\)2, \(int\)2, \(int\)256' 1 \
    $hone bench --op qmv.affine --shape rows=1,n=28672,k=4096,bits=4,group=64 \
    --tactic qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=32,split_k=1 \
    --numerics tolerance --samples 1 --batch 1
  unset NCU_EXTRA
fi

if want ahead; then
  # The int4 gate_up picks with the parameter vectors (`ahead=2`, J = 2): the default at rows 1-8
  # (4 warps, 16 rows each, one K slice: since 9132551 its staged twin, 122 registers) and the
  # H200 tolerance tune's pick (2 warps, 2 K slices of 16 chunks: not staged at one row, 106
  # registers; docs/benchmark_results/2026-12-06-h200, call2), each forced for every launch of
  # hone bench through HONE_TACTIC_CUDA_QMV_AFFINE.
  command -v ncu >/dev/null || { echo "profile: ncu not on PATH" >&2; exit 1; }
  for spec in "default 4 1" "pick 2 2"; do
    read -r tag warps warps_k <<<"$spec"
    HONE_TACTIC_CUDA_QMV_AFFINE="qmv.affine.mma:rows_per_cta=8,warps=$warps,warps_k=$warps_k,outputs_per_warp=16,split_k=1,ahead=2" \
      profile "qmv_ahead2_${tag}_r1_28672" 'qmv_affine' 2 $hone bench --op qmv.affine \
      --shape rows=1,n=28672,k=4096,bits=4,group=64 --numerics tolerance --samples 1 --batch 1
  done
fi

if want peer; then
  command -v ncu >/dev/null || { echo "profile: ncu not on PATH" >&2; exit 1; }
  export NCU_EXTRA="--clock-control none"
  for m in ${PEER_MATRICES:-896x896 4096x4096}; do
    for who in qmv_affine tinygemm; do
      # The first launch of each: the peer's correctness check, cold (ncu flushes the caches).
      profile "peer_${who}_r1_$m" "$who" 0 env HONE_LIBRARY="$BUILD/lib/libhone.so" \
        PYTHONPATH=python python3 bench/peers/qmv_affine_torch.py --out "$scratch/peer_$m" \
        --matrices "$m" --rows 1 --formats 4:64 --read-bandwidth 3000
    done
  done
  unset NCU_EXTRA
fi

if want racecheck; then
  # Every kernel of both engines once (engine,tile_m,tile_n,tile_k,warps,stages,split_k), at
  # leftovers in M and N and, with split 2, unequal K slices.
  export QMM_PROBE_ONCE=1
  S="compute-sanitizer --tool racecheck --error-exitcode 86"
  {
    timeout 150 $S $probe 37 1000 1536 64 2,16,64,256,5,8,1 2,16,64,256,5,4,2 2,16,128,256,9,6,1 \
      2,16,128,256,9,4,2 2,32,64,256,5,6,1 2,32,64,256,5,4,2 2,32,128,256,9,5,1 2,32,128,256,9,3,2 \
      2,64,64,256,5,4,1 2,64,128,256,9,4,2 2,64,256,256,17,3,2 2,128,64,256,5,3,2
    echo "tma m37 rc=$?"
    timeout 60 $S $probe 200 1000 1536 64 2,128,64,256,5,3,1
    echo "tma m200 rc=$?"
    timeout 150 $S $probe 37 1000 1536 64 3,16,64,256,5,8,1 3,16,128,256,9,4,2 3,32,64,256,5,4,2 \
      3,32,128,256,9,5,1 3,64,64,256,5,4,1 3,64,128,256,9,4,2 3,64,256,256,17,3,2 3,128,64,256,5,3,2
    echo "tma ahead m37 rc=$?"
    timeout 150 $S $probe 37 1000 1280 64 1,16,64,256,16,3,2 1,16,64,128,8,4,2 1,32,64,128,8,3,2 \
      1,32,64,256,16,3,2 1,32,128,128,16,3,2 1,64,64,64,4,4,2 1,64,64,128,8,3,2 1,64,64,256,16,3,2 \
      1,64,128,128,16,3,2 1,128,64,64,4,4,2 1,128,64,128,8,3,2 1,128,128,64,8,4,2
    echo "rs m37 rc=$?"
    timeout 150 $S $probe 37 1000 1280 64 4,16,64,256,16,3,2 4,32,64,128,8,3,2 4,64,64,64,4,4,2 \
      4,64,64,256,16,3,2 4,64,128,128,16,3,2 4,128,64,64,4,4,2 4,128,128,64,8,4,2
    echo "rs late m37 rc=$?"
    timeout 60 $S $probe 200 1000 1280 64 1,128,64,128,8,3,1 1,128,128,64,8,4,1
    echo "rs m200 rc=$?"
  } >"$out/racecheck.log" 2>&1
  grep -E "rc=|ERROR SUMMARY|hazard" "$out/racecheck.log" | sort | uniq -c
  unset QMM_PROBE_ONCE
fi
