#!/usr/bin/env bash
# Call 2: a second full Llama-3.1-8B tune with the runoff (cache F); cache verify; call 1's
# picks (E) against F's head to head (scripts/compare_tunes.py), then E against the cache of the
# previous session's run 2 (A, tuned without the runoff), in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - T0) )); }
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cacheF
ts=$(date +%s); HONE_CACHE_DIR=$R/cacheF timeout $(( $(left) - 60 )) $H tune --model models/llama-3.1-8b.json --json $R/tuneF.json > $R/tuneF.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tuneF.log
HONE_CACHE_DIR=$R/cacheF $H cache verify > $R/cacheF_verify.log 2>&1; echo "verify rc=$?" >> $R/cacheF_verify.log
L=$(left); echo "left for compare: $L s" > $R/compareEF.log
timeout $(( L )) python3 scripts/compare_tunes.py .carry/cacheE/tuning-cache.json $R/cacheF/tuning-cache.json --hone $H --samples 7 --budget $(( L - 25 )) --md $R/compareEF.md --json $R/compareEF.json >> $R/compareEF.log 2>&1; echo "compare rc=$?" >> $R/compareEF.log
cd $OUT && tar czf results.tar.gz r && rm -rf r
