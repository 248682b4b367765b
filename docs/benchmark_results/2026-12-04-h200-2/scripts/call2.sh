#!/usr/bin/env bash
# Call 2: what bounds the mma path's wgmma engine at 16-256 rows. qmm_probe (scripts/qmm_probe.cu)
# times chosen kernels with parts of their work removed (HONE_QMM_ABLATE: 1 no activation refills,
# 2 no weight / parameter refills, 4 no dequantisation or wgmma, 8 K blocks rotated per CTA), each
# mode its own process; then ncu of two baseline kernels.
cd "$(dirname "$0")/../../../.."
tar -xf .carry/probe.tar
export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r; mkdir -p $R; P=build/qmm_probe
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
run() { for a in 0 1 2 3 4 5 8; do HONE_QMM_ABLATE=$a timeout 30 $P "$@"; done; }
{
run 64 4096 4096 64 1,64,64,128,8,3,2 1,64,64,256,16,3,2
run 64 28672 4096 64 1,64,64,128,8,3,1 1,64,128,128,16,3,1
run 16 28672 4096 64 1,16,64,256,16,3,1 1,16,64,128,8,4,1
run 32 4096 14336 64 1,32,64,256,16,3,2 1,32,64,128,8,3,2
run 256 4096 14336 64 1,128,64,128,8,3,1 1,128,128,64,8,4,1
} > $R/ablate.log 2>&1
cat $R/ablate.log
for spec in "64 28672 4096 64 1,64,64,128,8,3,1" "16 28672 4096 64 1,16,64,256,16,3,1"; do
  timeout 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats -k regex:qmm_affine -c 1 \
    $P $spec >> $R/ncu.log 2>&1
done
grep -E "Duration|Throughput|Busy|Warp Cycles|Achieved Occupancy|Registers|Stall|Hit Rate|Issued" $R/ncu.log | head -80
