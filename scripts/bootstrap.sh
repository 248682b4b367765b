#!/usr/bin/env bash
# Checks for what building and testing hone needs; installs what is missing with apt-get when
# run as root, otherwise prints the exact apt-get command and exits non-zero.
#
#   scripts/bootstrap.sh          # exit 0: everything is present
#
# Needs: cmake >= 3.25, ninja, g++ (C++20), python3, and the packages nlohmann-json3-dev,
# libcli11-dev, libgtest-dev, libbenchmark-dev, python3-pytest, python3-numpy (the Python
# package's tests; ctest runs them with the first python3 that has both). CUDA is optional: with nvcc on PATH (or
# CMAKE_CUDA_COMPILER set) the CUDA backend is built as well.
# With nvcc, the CUTLASS headers that qmm.affine builds on are copied from the PyPI package
# nvidia-cutlass (pinned below; pip, no dependencies) into third_party/cutlass/include
# (git-ignored; HONE_CUTLASS_INCLUDE_DIR's default). Without them the rest still builds.
set -euo pipefail

readonly min_cmake=3.25
missing=()

have() { command -v "$1" >/dev/null 2>&1; }
# version_ge A B: true when version A >= version B.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }
# pkg_or_header PACKAGE HEADER: a dev package counts as present when dpkg knows it installed,
# or (on systems without dpkg) when its header is on the default include path.
pkg_or_header() {
  if have dpkg-query; then
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' && return 0
  fi
  for dir in /usr/include /usr/local/include; do
    [ -e "$dir/$2" ] && return 0
  done
  return 1
}

# python_module NAME: importable by the python3 on PATH or by the system's /usr/bin/python3.
python_module() {
  local py
  for py in python3 /usr/bin/python3; do
    have "$py" && "$py" -c "import $1" >/dev/null 2>&1 && return 0
  done
  return 1
}

check() {
  if ! have cmake; then
    missing+=(cmake)
  elif ! version_ge "$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')" "$min_cmake"; then
    cmake_too_old=$(cmake --version | head -n1)
    missing+=(cmake)
  fi
  have ninja || missing+=(ninja-build)
  have g++ || missing+=(g++)
  have python3 || missing+=(python3)
  pkg_or_header nlohmann-json3-dev nlohmann/json.hpp || missing+=(nlohmann-json3-dev)
  pkg_or_header libcli11-dev CLI/CLI.hpp || missing+=(libcli11-dev)
  pkg_or_header libgtest-dev gtest/gtest.h || missing+=(libgtest-dev)
  pkg_or_header libbenchmark-dev benchmark/benchmark.h || missing+=(libbenchmark-dev)
  python_module pytest || missing+=(python3-pytest)
  python_module numpy || missing+=(python3-numpy)
  if cuda_wanted && [ ! -f "$cutlass_dir/cutlass/version.h" ]; then
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  fi
}

# The CUTLASS/CuTe headers of qmm.affine, copied (not linked: the tree travels to the GPU
# machine with them) from the pinned wheel. Failing to fetch them is a warning: CMake then
# builds everything but qmm.affine and says why.
readonly cutlass_version=4.2.0.0
readonly cutlass_dir="$(cd "$(dirname "$0")/.." && pwd)/third_party/cutlass/include"
cuda_wanted() { have nvcc || [ -x /usr/local/cuda/bin/nvcc ]; }
cutlass_headers() {
  cuda_wanted || return 0
  local stamp="$cutlass_dir/../nvidia-cutlass.version"
  if [ -f "$cutlass_dir/cutlass/version.h" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$cutlass_version" ]; then
    echo "bootstrap: CUTLASS headers present ($cutlass_dir, nvidia-cutlass $cutlass_version)"
    return 0
  fi
  local tmp
  tmp=$(mktemp -d)
  if python3 -m pip install --quiet --no-deps --disable-pip-version-check --root-user-action=ignore --target "$tmp" \
       "nvidia-cutlass==$cutlass_version" &&
     [ -f "$tmp/cutlass_library/source/include/cutlass/version.h" ]; then
    rm -rf "$cutlass_dir"
    mkdir -p "$cutlass_dir"
    cp -R "$tmp/cutlass_library/source/include/." "$cutlass_dir/"
    echo "$cutlass_version" >"$stamp"
    echo "bootstrap: CUTLASS headers copied to $cutlass_dir (nvidia-cutlass $cutlass_version)"
  else
    echo "bootstrap: WARNING: could not install nvidia-cutlass==$cutlass_version with pip;" \
      "qmm.affine will not be built" >&2
  fi
  rm -rf "$tmp"
}

# matplotlib, for `hone sweep`'s charts and their test (SweepOutput.ChartsOfOneUnitEach), in the
# python3 on PATH, which is the one `hone sweep` runs: with pip where it is missing and this runs
# as root. Failing that is a warning: the sweep then writes its table without charts and says
# why, and the test is skipped.
matplotlib_module() {
  python3 -c 'import matplotlib' >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -eq 0 ] && python3 -m pip --version >/dev/null 2>&1 &&
     python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
       matplotlib && python3 -c 'import matplotlib' >/dev/null 2>&1; then
    echo "bootstrap: matplotlib installed with pip for $(command -v python3)"
  else
    echo "bootstrap: WARNING: $(command -v python3) has no matplotlib; hone sweep will write" \
      "no charts (pip install matplotlib)" >&2
  fi
}

cmake_too_old=""
check
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all build dependencies are present"
  have nvcc && echo "bootstrap: nvcc found: the CUDA backend will be built" ||
    echo "bootstrap: no nvcc: building the CPU backend only"
  cutlass_headers
  matplotlib_module
  exit 0
fi

install_cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "bootstrap: missing: ${missing[*]}" >&2
  [ -n "$cmake_too_old" ] && echo "bootstrap: $cmake_too_old is older than $min_cmake" >&2
  echo "bootstrap: install them as root with:" >&2
  echo "  sudo sh -c '$install_cmd'" >&2
  exit 1
fi
if ! have apt-get; then
  echo "bootstrap: missing: ${missing[*]}; apt-get is not available, install them by hand" >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"

missing=()
cmake_too_old=""
check
if [ ${#missing[@]} -ne 0 ]; then
  echo "bootstrap: still missing after apt-get: ${missing[*]}" >&2
  [ -n "$cmake_too_old" ] &&
    echo "bootstrap: this distribution's $cmake_too_old is older than $min_cmake; install a newer cmake (e.g. pip install cmake, or Kitware's apt repository)" >&2
  exit 1
fi
echo "bootstrap: all build dependencies are present"
cutlass_headers
matplotlib_module
