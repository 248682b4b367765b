#!/usr/bin/env bash
# One call (~6 min): qmv.affine's lean two-tile kernel (`ahead=1` on rows_per_cta 8,
# outputs_per_warp 32: 128 registers, per weight only), first on a GPU. The kernel tests of the
# mma path (every config against the reference, batch invariance, no spills, the config rules),
# the op's SiLU epilogue test (the slot's per-weight SiLU twin), then the step with
# tolerance-mode linears (step_tolerance.sh), whose int4 tune times the new configs beside the
# rest: its report says whether they win gate_up.
#
#   tar xJf .carry/bin.tar.xz && scripts/device/call_lean_qmv.sh OUT
set -u
OUT=$1
[ -x build/tools/hone/hone ] || tar xJf .carry/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
HONE_TEST_PATHS=mma HONE_DEVICE_TEST_REDUCED=1 timeout 150 build/tests/device/qmv_affine_kernel_test \
  >"$OUT/qmv_kernel_test.log" 2>&1
echo "qmv_affine_kernel_test rc=$?"
grep -E "FAILED|PASSED|Failure" "$OUT/qmv_kernel_test.log" | head -n 12
HONE_DEVICE_TEST_REDUCED=1 timeout 90 build/tests/device/qmv_affine_op_test --gtest_filter='*Silu*' \
  >"$OUT/qmv_op_silu.log" 2>&1
echo "qmv_affine_op_test (SiLU) rc=$?"
scripts/device/step_tolerance.sh "$OUT" build >"$OUT/step_tolerance.out" 2>&1
echo "step_tolerance rc=$?"
tail -n 24 "$OUT/step_tolerance.out"
tar xzf "$OUT/step_tolerance.tar.gz" -C /tmp 2>/dev/null
python3 - "$OUT" <<'PY'
import json, lzma, sys, glob
for path in glob.glob('/tmp/step_tolerance/tune_int4_g64.json*'):
    d = json.load(lzma.open(path) if path.endswith('.xz') else open(path))
    for r in d['reports']:
        if 'n=28672' not in r['bucket'] and 'n=4096,k=14336' not in r['bucket']:
            continue
        print(r['bucket'])
        c = sorted((x for x in r['candidates'] if x.get('median_s')), key=lambda x: x['median_s'])
        for x in c[:6] + [x for x in c if 'ahead=1' in x['tactic']][:4]:
            print('  %8.2f us  %s' % (x['median_s'] * 1e6, x['tactic']))
PY
