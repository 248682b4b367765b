#!/usr/bin/env bash
# Call 4: the 5 keys whose picks differed between caches E and F, head to head again with 15
# samples; the Llama-3.1-8B batch-1 steps with cache E and with cache F, one call; the batch-4
# and batch-16 steps with cache E, in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( ${LIMIT:-170} - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R
timeout 45 python3 scripts/compare_tunes.py .carry/cacheE5/tuning-cache.json .carry/cacheF5/tuning-cache.json --hone $H --samples 15 --md $R/compare5.md --json $R/compare5.json > $R/compare5.log 2>&1; echo "rc=$?" >> $R/compare5.log
step() { # CACHE BATCH QUANT
  L=$(left); [ $L -lt 20 ] && return
  HONE_CACHE_DIR=$PWD/.carry/cache$1 timeout $(( L - 3 )) $H step --model models/llama-3.1-8b.json --batch $2 --context 4k --quant $3 --samples 7 --check-replays 1000 --no-breakdown --json $R/step$1_b$2_${3%%:*}.json >> $R/step$1.log 2>&1; echo "rc=$?" >> $R/step$1.log
}
step E 1 int4:g64; step F 1 int4:g64; step E 1 bf16; step F 1 bf16
step E 4 bf16; step E 4 int4:g64; step E 16 bf16; step E 16 int4:g64
cd $OUT && tar czf results.tar.gz r && rm -rf r
