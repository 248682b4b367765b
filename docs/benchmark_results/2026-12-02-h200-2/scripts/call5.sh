#!/usr/bin/env bash
# Call 5: the runoff. The five keys whose picks differed in runs 3 and 4, each tuned twice (caches
# C and D), then C's picks against D's head to head.
cd "$(dirname "$0")/.."
xz -d -T8 -c .carry/build.tar.xz | tar -xf -
export BUILD=build; source scripts/device/env.sh
H=build/tools/hone/hone
R=$OUT/r; mkdir -p $R/cacheC $R/cacheD
for c in C D; do
  for spec in "qmv.affine rows=16,n=4096,k=14336,bits=4,group=64" "rope rows=64,hq=32,hkv=8,head_dim=128" \
              "silu_mul rows=512,inter=14336" "rmsnorm rows=6,hidden=4096,residual=1" "rmsnorm rows=7,hidden=4096,residual=1"; do
    set -- $spec
    HONE_CACHE_DIR=$R/cache$c timeout 40 $H tune --op $1 --shape $2 --json $R/tune${c}_$1_${2%%,*}.json >> $R/tune$c.log 2>&1
  done
done
timeout 90 python3 scripts/compare_tunes.py $R/cacheC/tuning-cache.json $R/cacheD/tuning-cache.json --hone $H --samples 15 --md $R/compareCD.md --json $R/compareCD.json > $R/compareCD.log 2>&1; echo "rc=$?" >> $R/compareCD.log
cd $OUT && tar czf results.tar.gz r && rm -rf r
