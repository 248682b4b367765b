#!/usr/bin/env bash
# Issue 13's PyTorch int4 points over carried programs (scripts/device/pack_carry.sh): qmv.affine
# against torch._weight_int4pack_mm with the matched group, ">= 5x at rows 16 and no cell below
# 1.0x, including the small matrices at rows 1". Each cell (the 15 shapes of
# bench/shapes/decode_matrix/qmv.affine.txt at rows 1 and 16, int4 g64 and g128) is tuned first
# (`hone tune --op qmv.affine`, batch-invariant numerics, into this run's own cache), then
# bench/peers/qmv_affine_torch.py times hone's pick through the Python package (its dispatcher
# reads that cache) against torch's kernel on the same weights, interleaved, cold L2, after both
# are checked against a float64 reference. About 5 minutes. ROWS (default 1,16) and FORMATS
# (default 4:64,4:128) narrow or widen it, as MATRICES (NxK,...; default the 15) does.
# NUMERICS (default batch_invariant) is the tunes' gate:
# torch's kernel makes no batch-invariance promise, so `tolerance` (which admits the grouped and
# stream configs) is the like-for-like comparison; the run directory is named after it.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/qmv_torch_peer.sh "$OUT" build [ROWS] [FORMATS] \
#     [NUMERICS]
set -u
rows=${3:-1,16}
formats=${4:-4:64,4:128}
numerics=${5:-batch_invariant}
source "$(dirname "$0")/env.sh"
run_begin "qmv_torch_peer${5:+_$numerics}" "${BUDGET:-570}" "${1:?OUTDIR}" "${2:-build}"
mkdir -p "$R/cache"
export HONE_CACHE_DIR=$R/cache
unset HONE_CACHE HONE_AUTOTUNE HONE_TACTIC_QMV_AFFINE
matrices=${MATRICES:-$(grep '^full:' bench/shapes/decode_matrix/qmv.affine.txt |
  sed -E 's/.*n=([0-9]+), *k=([0-9]+).*/\1x\2/' | sort -u | paste -sd, -)}
echo "matrices $matrices; rows $rows; formats $formats; numerics $numerics" | tee "$R/steps.log"

# 1. Tunes, one cell at a time, within two thirds of the budget.
IFS=, read -ra M <<<"$matrices"
IFS=, read -ra RW <<<"$rows"
IFS=, read -ra F <<<"$formats"
tuned=0
for f in "${F[@]}"; do
  for r in "${RW[@]}"; do
    for m in "${M[@]}"; do
      [ "$(left)" -lt "${PEER_RESERVE:-200}" ] && break 3 # seconds kept for the peer
      timeout 60 "$BUILD/tools/hone/hone" tune --op qmv.affine \
        --shape "rows=$r,n=${m%x*},k=${m#*x},bits=${f%:*},group=${f#*:}" \
        --numerics "$numerics" >>"$R/tune.log" 2>&1 &&
        tuned=$((tuned + 1))
    done
  done
done
stamp "tunes: $tuned of $((${#F[@]} * ${#RW[@]} * ${#M[@]})) cells" 0
pack

# 2. The peer, over the same cache.
HONE_LIBRARY=$BUILD/lib/libhone.so PYTHONPATH=python timeout "$(($(left) - 15))" \
  python3 bench/peers/qmv_affine_torch.py --out "$R" --matrices "$matrices" --rows "$rows" \
  --formats "$formats" >"$R/peer.log" 2>&1
stamp "qmv_affine_torch.py" $?
tail -40 "$R/peer.log"
pack
