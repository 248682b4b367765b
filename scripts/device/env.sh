# Sourced by the device scripts: nvcc on PATH, and libcublasLt where the image keeps it when the
# loader does not find it (the programs link it dynamically). BUILD must name the build.
export PATH=$PATH:/usr/local/cuda/bin
if [ -x "$BUILD/bench/op_matrix" ] && ldd "$BUILD/bench/op_matrix" | grep -q 'libcublasLt.*not found'; then
  lib=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so.*' -print -quit 2>/dev/null)
  [ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
