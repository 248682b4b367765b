#!/usr/bin/env bash
# One call (~4 min, either device): qmv.affine's two parameter-vector flags that are off
# (kQmvParameterVectorsAsync: the cp.async ring's blocks of S chunks; kQmvParameterVectorsFactored:
# int4 g128 and int8 g64, a word for two chunks), first on a GPU. The programs built with both
# flags on are carried as .carry/vecflags_{qmv_affine_harness,qmv_affine_kernel_test,
# qmv_affine_op_test}.xz; the carried build (.carry/bin.tar.xz, both off) is the base.
#   1. the kernel and op tests of the flags-on build on reduced shapes (every config against the
#      reference, and bit for bit against the configs of its K order);
#   2. the qmv table (mma and ring configs, which hold the cp.async ones) by the base harness and
#      the flags-on harness in turn, ROUNDS times (default 2): gate_up, down, qkv and o of
#      Llama-3.1-8B at rows 1, 4, 8 and 16, FORMATS (default 4x64,4x128,8x64).
# Keep each flag on only where it is faster. Everything lands in OUT/param_flags.tar.gz.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_param_flags.sh OUT
set -u
OUT=$1
W=$OUT/param_flags
mkdir -p "$W"
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$W/gpu.txt"
V=$(mktemp -d)
for b in qmv_affine_harness qmv_affine_kernel_test qmv_affine_op_test; do
  xz -dc ".carry/vecflags_$b.xz" >"$V/$b" && chmod +x "$V/$b"
done
for t in qmv_affine_kernel_test qmv_affine_op_test; do
  HONE_DEVICE_TEST_REDUCED=1 timeout 150 "$V/$t" >"$W/$t.log" 2>&1
  echo "$t (flags on) rc=$?"
  grep -E "PASSED|FAILED|Failure" "$W/$t.log" | head -n 6
done
for round in $(seq "${ROUNDS:-2}"); do
  for which in base flags; do
    bin=build/bench/qmv_affine_harness
    [ $which = flags ] && bin=$V/qmv_affine_harness
    HONE_TEST_PATHS=mma,ring timeout 150 "$bin" --no-check \
      --shapes 28672x4096,4096x14336,6144x4096,4096x4096 --rows 1,4,8,16 \
      --formats "${FORMATS:-4x64,4x128,8x64}" --csv "$W/table_${which}_$round.csv" \
      >"$W/table_${which}_$round.log" 2>&1
    echo "$which round $round rc=$?"
    grep -E '^[48]x' "$W/table_${which}_$round.log" | cut -c1-70
  done
done
rm -rf "$V"
tar czf "$OUT/param_flags.tar.gz" -C "$OUT" param_flags && rm -rf "$W"
