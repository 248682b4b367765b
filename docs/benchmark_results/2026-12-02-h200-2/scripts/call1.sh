#!/usr/bin/env bash
# Call 1: the L2 slice prefetch, off (pf0) against on (pf1), interleaved per shape; --pattern.
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
S=.carry/standalone
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version,memory.total --format=csv > $R/gpu.txt 2>&1
cuobjdump -sass $S/qmv_pf1 | grep -oE "UBLKPF[A-Z.0-9]*|BLKPF[A-Z.0-9]*" | sort | uniq -c > $R/sass_prefetch.txt 2>&1
cuobjdump -sass $S/qmv_pf0 | grep -cE "BLKPF" >> $R/sass_prefetch.txt 2>&1
cuobjdump -sass $S/gemv_pf1 | grep -oE "UBLKPF[A-Z.0-9]*|BLKPF[A-Z.0-9]*" | sort | uniq -c >> $R/sass_prefetch.txt 2>&1
for sh in 28672x4096 4096x14336 6144x4096; do
  for pf in 0 1; do
    timeout 100 $S/qmv_pf$pf --no-check --rows 1,2,4,8,16,32 --shapes $sh --formats 4x64,4x128,8x64 --csv $R/qmv_pf${pf}_$sh.csv >> $R/qmv_pf$pf.log 2>&1
  done
done
for sh in 28672x4096 4096x14336 128256x4096; do
  for pf in 0 1; do
    timeout 60 $S/gemv_pf$pf --no-check --rows 1,4,8,16,32 --shapes $sh --csv $R/gemv_pf${pf}_$sh.csv >> $R/gemv_pf$pf.log 2>&1
  done
done
timeout 60 $S/qmv_pf1 --pattern --shapes 28672x4096,4096x14336 > $R/pattern.log 2>&1
timeout 90 $S/qmv_pf1 --quick --rows 1 --shapes 4096x4096 --formats 4x64 > $R/qmv_pf1_check.log 2>&1; echo "check rc=$?" >> $R/qmv_pf1_check.log
timeout 60 $S/gemv_pf1 --quick --rows 1 --shapes 4096x4096 > $R/gemv_pf1_check.log 2>&1; echo "check rc=$?" >> $R/gemv_pf1_check.log
cd $OUT && tar czf results.tar.gz r && rm -rf r
