#!/usr/bin/env bash
# One call (~5 min, either device): how qmv.affine's group parameters are read.
#   1. bench/read_ceiling --params 64 on the int4 words of gate_up, down, qkv and lm_head: the
#      qrows patterns p0-p7 (words alone; today's loads; the pairs array; the pairs tile-major;
#      vector loads; staged in shared memory; today's loads asking L2 for 128 or 256 bytes).
#   2. The qmv.affine kernel tests of this build (parameter loads with the L2 line hint,
#      kQmvParameterL2Lines) on reduced shapes.
#   3. The qmv table (mma and ring configs) by the harness built without the hint
#      (.carry/base_qmv_affine_harness.xz) and by this build's, in turn, ROUNDS times (default
#      2), on 28672 x 4096 and 4096 x 14336 at rows 1 and 16, int4 g64 and g128.
# Everything lands in OUT/param_loads.tar.gz (the device tool returns few files) beside a
# summary on stdout.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_param_loads.sh OUT
set -u
OUT=$1
W=$OUT/param_loads
mkdir -p "$W"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
timeout 240 build/bench/read_ceiling --shapes 28672x2048,4096x7168,6144x2048,128256x2048 \
  --params 64 --json "$W/rc.json" >"$W/rc.log" 2>&1
echo "read_ceiling rc=$?"
grep -E "qrows|bandwidth|rows J2 k1 " "$W/rc.log"
HONE_DEVICE_TEST_REDUCED=1 timeout 150 build/tests/device/qmv_affine_kernel_test \
  >"$W/kernel_test.log" 2>&1
echo "qmv_affine_kernel_test rc=$?"
grep -E "PASSED|FAILED" "$W/kernel_test.log" | head -n 6
xz -dc .carry/base_qmv_affine_harness.xz >/tmp/base_harness && chmod +x /tmp/base_harness
for round in $(seq "${ROUNDS:-2}"); do
  for which in base l2; do
    bin=build/bench/qmv_affine_harness
    [ $which = base ] && bin=/tmp/base_harness
    HONE_TEST_PATHS=mma,ring timeout 90 "$bin" --no-check --shapes 28672x4096,4096x14336 \
      --rows 1,16 --formats 4x64,4x128 --csv "$W/table_${which}_$round.csv" \
      >"$W/table_${which}_$round.log" 2>&1
    echo "$which round $round rc=$?"
    grep -E '^[48]x' "$W/table_${which}_$round.log" | cut -c1-70
  done
done
tar czf "$OUT/param_loads.tar.gz" -C "$OUT" param_loads && rm -rf "$W"
