#!/usr/bin/env bash
# Call 4: the 5 keys whose picks differed between caches E and F, head to head again with 15
# samples; the Llama-3.1-8B batch-1 steps with cache F (call 3 ran them with E); the batch-4 and
# batch-16 steps with cache E, in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( ${LIMIT:-290} - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R
timeout 80 python3 scripts/compare_tunes.py .carry/cacheE5/tuning-cache.json .carry/cacheF5/tuning-cache.json --hone $H --samples 15 --md $R/compare5.md --json $R/compare5.json > $R/compare5.log 2>&1; echo "rc=$?" >> $R/compare5.log
export HONE_CACHE_DIR=$PWD/.carry/cacheF
for q in bf16 int4:g64; do
  L=$(left); [ $L -lt 40 ] && break
  timeout $(( L - 5 )) $H step --model models/llama-3.1-8b.json --batch 1 --context 4k --quant $q --samples 9 --check-replays 1000 --no-breakdown --json $R/stepF_b1_${q%%:*}.json >> $R/stepF.log 2>&1; echo "rc=$?" >> $R/stepF.log
done
export HONE_CACHE_DIR=$PWD/.carry/cacheE
for cell in "4 bf16" "4 int4:g64" "16 bf16" "16 int4:g64"; do
  set -- $cell; L=$(left); [ $L -lt 40 ] && break
  timeout $(( L - 5 )) $H step --model models/llama-3.1-8b.json --batch $1 --context 4k --quant $2 --samples 7 --check-replays 1000 --no-breakdown --json $R/stepE_b$1_${2%%:*}.json >> $R/stepE.log 2>&1; echo "rc=$?" >> $R/stepE.log
done
cd $OUT && tar czf results.tar.gz r && rm -rf r
