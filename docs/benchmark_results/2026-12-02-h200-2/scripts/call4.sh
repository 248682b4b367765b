#!/usr/bin/env bash
# Call 4: the 7 keys whose picks differed in call 3, head to head again (more samples); then
# the batch-4 and batch-16 steps with cache A, in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( ${LIMIT:-300} - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R
timeout 80 python3 scripts/compare_tunes.py .carry/cacheA7/tuning-cache.json .carry/cacheB7/tuning-cache.json --hone $H --samples 15 --md $R/compare7.md --json $R/compare7.json > $R/compare7.log 2>&1; echo "rc=$?" >> $R/compare7.log
export HONE_CACHE_DIR=$PWD/.carry/cacheA
for cell in "4 bf16" "4 int4:g64" "16 bf16" "16 int4:g64"; do
  set -- $cell; L=$(left); [ $L -lt 40 ] && break
  timeout $(( L - 5 )) $H step --model models/llama-3.1-8b.json --batch $1 --context 4k --quant $2 --samples 7 --check-replays 1000 --no-breakdown --json $R/step_b$1_${2%%:*}.json >> $R/step.log 2>&1
done
cd $OUT && tar czf results.tar.gz r && rm -rf r
