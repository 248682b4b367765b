#!/usr/bin/env bash
# One call (~3 min, either device): qmv.affine's parameter vectors (kQmvParameterVectors: int4
# g64 per weight, register pipeline, one activation tile; each row's scales and biases of J
# chunks in one vector load), first on a GPU:
#   1. the qmv.affine kernel and op tests of this build on reduced shapes (every config against
#      the reference, and bit-identical to the configs of its order that still load a parameter
#      a chunk: cp.async, ring);
#   2. the qmv table (mma and ring configs) by the harness built without the vectors
#      (.carry/base_qmv_affine_harness.xz) and by this build's, in turn, ROUNDS times (default
#      2): int4 g64 on gate_up, down, qkv and o of Llama-3.1-8B at rows 1, 4, 8 and 16 (16 runs
#      two activation tiles: unchanged, a control), int4 g128 (unchanged) on gate_up. FORMATS
#      (default 4x64) adds others, e.g. 4x64,4x128,8x64.
# Everything lands in OUT/param_vectors.tar.gz beside a summary on stdout.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_param_vectors.sh OUT
set -u
OUT=$1
W=$OUT/param_vectors
mkdir -p "$W"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
for t in qmv_affine_kernel_test qmv_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 150 build/tests/device/$t >"$W/$t.log" 2>&1
  echo "$t rc=$?"
  grep -E "PASSED|FAILED|Failure" "$W/$t.log" | head -n 6
done
xz -dc .carry/base_qmv_affine_harness.xz >/tmp/base_harness && chmod +x /tmp/base_harness
for round in $(seq "${ROUNDS:-2}"); do
  for which in base vec; do
    bin=build/bench/qmv_affine_harness
    [ $which = base ] && bin=/tmp/base_harness
    HONE_TEST_PATHS=mma,ring timeout 120 "$bin" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16 --formats "${FORMATS:-4x64}" \
      --csv "$W/table_${which}_$round.csv" >"$W/table_${which}_$round.log" 2>&1
    echo "$which round $round rc=$?"
    grep -E '^[48]x' "$W/table_${which}_$round.log" | cut -c1-70
    HONE_TEST_PATHS=mma,ring timeout 60 "$bin" --no-check --shapes 28672x4096 --rows 1 \
      --formats 4x128 >"$W/control_${which}_$round.log" 2>&1
    grep -E '^[48]x' "$W/control_${which}_$round.log" | cut -c1-70
  done
done
tar czf "$OUT/param_vectors.tar.gz" -C "$OUT" param_vectors && rm -rf "$W"
