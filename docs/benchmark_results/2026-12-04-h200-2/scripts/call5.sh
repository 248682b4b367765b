#!/usr/bin/env bash
# Call 5: compute-sanitizer racecheck of the two wgmma engines, one launch per kernel (qmm_probe
# with QMM_PROBE_ONCE=1) at leftovers: n = 1000, m = 37 (and 200 for the 128-row tiles), split 1/2.
cd "$(dirname "$0")/../../../.."
tar -xf .carry/probe.tar; export PATH=$PATH:/usr/local/cuda/bin
R=$OUT/r; mkdir -p $R; export QMM_PROBE_ONCE=1
S="compute-sanitizer --tool racecheck --error-exitcode 86"
{ timeout 120 $S build/qmm_probe 37 1000 1536 64 2,16,64,256,5,8,1 2,16,64,256,5,4,2 2,16,128,256,9,6,1 2,16,128,256,9,4,2 2,32,64,256,5,6,1 2,32,64,256,5,4,2 2,32,128,256,9,5,1 2,32,128,256,9,3,2 2,64,64,256,5,4,1 2,64,128,256,9,4,2 2,64,256,256,17,3,2 2,128,64,256,5,3,2; echo "tma m37 rc=$?"
  timeout 60 $S build/qmm_probe 200 1000 1536 64 2,128,64,256,5,3,1; echo "tma m200 rc=$?"
  timeout 120 $S build/qmm_probe 37 1000 1280 64 1,16,64,256,16,3,2 1,16,64,128,8,4,2 1,32,64,128,8,3,2 1,32,64,256,16,3,2 1,32,128,128,16,3,2 1,64,64,64,4,4,2 1,64,64,128,8,3,2 1,64,64,256,16,3,2 1,64,128,128,16,3,2 1,128,64,64,4,4,2 1,128,64,128,8,3,2 1,128,128,64,8,4,2; echo "rs m37 rc=$?"
  timeout 60 $S build/qmm_probe 200 1000 1280 64 1,128,64,128,8,3,1 1,128,128,64,8,4,1; echo "rs m200 rc=$?"
} > $R/racecheck.log 2>&1
cat $R/racecheck.log | grep -v "^m=" ; grep -c " ran" $R/racecheck.log
