#!/usr/bin/env bash
# Call 1: a full `hone tune --model` of Llama-3.1-8B (default 9-minute budget, int4 g64 and
# bf16), timed to its end, with the 15-kernel mma set; then `cache verify`. The cache comes back
# (results.tar.gz) for call 2's quantized_linear matrix.
cd "$(dirname "$0")/../../../.."
T0=$(date +%s)
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cache
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $R/gpu.txt 2>&1
export HONE_CACHE_DIR=$R/cache
$H --backend cuda tune --model models/llama-3.1-8b.json --dry-run > $R/tune_dry.log 2>&1
ts=$(date +%s); timeout $(( 580 - ($(date +%s) - T0) )) $H --backend cuda tune --model models/llama-3.1-8b.json --json $R/tune.json > $R/tune.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tune.log
$H cache verify > $R/cache_verify.log 2>&1; echo "verify rc=$?" >> $R/cache_verify.log
cp $R/tune.log $OUT/
cd $OUT && xz -T8 r/tune.json; tar czf results.tar.gz r && rm -rf r
