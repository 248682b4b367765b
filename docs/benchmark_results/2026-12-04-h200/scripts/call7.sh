#!/usr/bin/env bash
# Call 7: the Llama-3.1-8B model tune under the v3 method (8 x LLC rotation), default budget,
# stopped at 300 s by the device time left: its progress lines, bucket by bucket, against the
# v2 tune of ../2026-12-03-h200-3/call1/tune.log over the same buckets in the same order.
cd "$(dirname "$0")/../../../.."
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
R=$OUT/r; mkdir -p $R/cache; H=build/tools/hone/hone
export HONE_CACHE_DIR=$R/cache
ts=$(date +%s); timeout 300 $H --backend cuda tune --model models/llama-3.1-8b.json > $R/tune.log 2>&1; echo "tune rc=$? wall $(( $(date +%s) - ts )) s" >> $R/tune.log
tail -n 3 $R/tune.log
cp $R/tune.log $OUT/tune.log
