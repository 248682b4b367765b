#!/usr/bin/env bash
# Call 3: a second full Llama-3.1-8B tune (cache B), then call 2's picks (cache A) against B's,
# head to head (scripts/compare_tunes.py) in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cacheB
ts=$(date +%s); HONE_CACHE_DIR=$R/cacheB timeout $(( $(left) - 60 )) $H tune --model models/llama-3.1-8b.json > $R/tuneB.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tuneB.log
HONE_CACHE_DIR=$R/cacheB $H cache verify > $R/cacheB_verify.log 2>&1
L=$(left); echo "left for compare: $L s" > $R/compare.log
timeout $(( L )) python3 scripts/compare_tunes.py .carry/cacheA/tuning-cache.json $R/cacheB/tuning-cache.json --hone $H --samples 7 --budget $(( L - 25 )) --md $R/compare.md --json $R/compare.json >> $R/compare.log 2>&1; echo "compare rc=$?" >> $R/compare.log
cd $OUT && tar czf results.tar.gz r && rm -rf r
