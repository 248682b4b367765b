"""Loading libhone.so and calling the C API (include/hone/hone.h) through ctypes.

The library is found at $HONE_LIBRARY (a file), else next to this package (a pip install puts
it there), else in a build directory of the source tree (<repo>/build/lib, then any
<repo>/build*/lib, newest first).
"""

import ctypes
import glob
import os
import re
import sys

C_API_VERSION_MAJOR = 1  # the HONE_C_API_VERSION_MAJOR this package was written against

OK = 0
INVALID_ARGUMENT = 1
RUNTIME = 2
NO_DEVICE = 3
BUFFER_TOO_SMALL = 4
VERSION_MISMATCH = 5
INTERNAL = 6


class HoneError(Exception):
    """A failed hone call; `status` is the C API's hone_status name."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InvalidArgument(HoneError, ValueError):
    """Bad input: a bad shape, dtype, pointer or op name (HONE_ERROR_INVALID_ARGUMENT)."""


class NoDevice(HoneError, RuntimeError):
    """A CUDA op without a CUDA device or backend (HONE_ERROR_NO_DEVICE)."""


class HoneRuntimeError(HoneError, RuntimeError):
    """A broken environment or an internal error (HONE_ERROR_RUNTIME, _INTERNAL, ...)."""


_ERRORS = {INVALID_ARGUMENT: InvalidArgument, NO_DEVICE: NoDevice}

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(os.path.dirname(_PACKAGE_DIR))


def candidates():
    """Paths tried, in order."""
    env = os.environ.get("HONE_LIBRARY")
    if env:
        return [env]
    out = [os.path.join(_PACKAGE_DIR, "libhone.so"), os.path.join(_REPO_ROOT, "build", "lib",
                                                                   "libhone.so")]
    builds = glob.glob(os.path.join(_REPO_ROOT, "build*", "lib", "libhone.so"))
    out += sorted(set(builds) - set(out), key=os.path.getmtime, reverse=True)
    return out


def _preload_missing(error):
    """Loads a CUDA library the loader could not find (e.g. libcublasLt.so.13) from where a
    CUDA toolkit or a pip wheel keeps it, so that libhone.so's dependency resolves."""
    match = re.search(r"(lib[\w]+\.so[.\d]*): cannot open shared object", str(error))
    if not match:
        return False
    name = match.group(1)
    roots = ["/usr/local/cuda/lib64", "/usr/local/cuda/lib"]
    roots += glob.glob("/usr/local/cuda*/lib*") + glob.glob("/usr/local/cuda*/targets/*/lib")
    for p in sys.path:
        roots += glob.glob(os.path.join(p, "nvidia", "*", "lib"))
    for root in roots:
        path = os.path.join(root, name)
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return True
    return False


def _load():
    tried = []
    for path in candidates():
        if not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            if _preload_missing(e):
                return ctypes.CDLL(path)
            tried.append("%s (%s)" % (path, e))
    raise ImportError("hone: libhone.so not found; set HONE_LIBRARY to its path or build it "
                      "(cmake --build build --target hone_c). Tried: " + "; ".join(tried))


lib = _load()

_c = ctypes
_SIGNATURES = {
    "hone_api_version": (_c.c_uint32, []),
    "hone_version": (_c.c_char_p, []),
    "hone_check_version": (_c.c_int, [_c.c_int32]),
    "hone_last_error": (_c.c_char_p, []),
    "hone_status_name": (_c.c_char_p, [_c.c_int]),
    "hone_backends": (_c.c_int, [_c.c_char_p, _c.c_size_t, _c.POINTER(_c.c_size_t)]),
    "hone_ops": (_c.c_int, [_c.c_char_p, _c.c_size_t, _c.POINTER(_c.c_size_t)]),
    "hone_op_dimensions": (_c.c_int, [_c.c_char_p, _c.c_char_p, _c.c_size_t,
                                      _c.POINTER(_c.c_size_t)]),
    "hone_gemv_f32": (_c.c_int, [_c.c_void_p] * 3 + [_c.c_int64] * 3),
    "hone_qmv_affine": (_c.c_int, [_c.c_void_p] * 5 + [_c.c_int64] * 3 + [_c.c_int32] * 2),
    "hone_affine_sizes": (_c.c_int, [_c.c_int64, _c.c_int64, _c.c_int32, _c.c_int32,
                                     _c.POINTER(_c.c_int64), _c.POINTER(_c.c_int64)]),
    "hone_quantize_affine": (_c.c_int, [_c.c_void_p, _c.c_int64, _c.c_int64, _c.c_int32,
                                        _c.c_int32, _c.c_void_p, _c.c_void_p, _c.c_void_p]),
    "hone_dequantize_affine": (_c.c_int, [_c.c_void_p] * 3 + [_c.c_int64, _c.c_int64,
                                                              _c.c_int32, _c.c_int32,
                                                              _c.c_void_p]),
    "hone_gemv_bf16": (_c.c_int, [_c.c_void_p] * 3 + [_c.c_int64] * 3 + [_c.c_void_p]),
    "hone_qmv_affine_bf16": (_c.c_int, [_c.c_void_p] * 5 + [_c.c_int64] * 3 + [_c.c_int32] * 2
                             + [_c.c_void_p]),
    "hone_decode_paged_bf16": (_c.c_int, [_c.c_void_p] * 10 + [_c.c_int64] * 6 + [_c.c_float]
                               + [_c.c_void_p]),
    "hone_qmm_affine_bf16": (_c.c_int, [_c.c_void_p] * 5 + [_c.c_int64] * 3 + [_c.c_int32] * 2
                             + [_c.c_void_p]),
    "hone_quantized_linear_bf16": (_c.c_int, [_c.c_void_p] * 5 + [_c.c_int64] * 3
                                   + [_c.c_int32] * 2 + [_c.c_void_p]),
    "hone_tune": (_c.c_int, [_c.c_char_p, _c.POINTER(_c.c_int64), _c.c_int32, _c.c_char_p,
                             _c.c_uint32, _c.c_char_p, _c.c_size_t, _c.POINTER(_c.c_size_t)]),
    "hone_cache_path": (_c.c_int, [_c.c_char_p, _c.c_size_t, _c.POINTER(_c.c_size_t)]),
    "hone_cache_verify": (_c.c_int, [_c.POINTER(_c.c_int32), _c.c_char_p, _c.c_size_t,
                                     _c.POINTER(_c.c_size_t)]),
    "hone_cache_clear": (_c.c_int, []),
    "hone_rmsnorm_bf16": (_c.c_int, [_c.c_void_p] * 5 + [_c.c_int64] * 2 + [_c.c_float,
                                                                          _c.c_void_p]),
    "hone_rope_bf16": (_c.c_int, [_c.c_void_p] * 3 + [_c.c_int64] * 6 +
                       [_c.c_double, _c.POINTER(_c.c_double), _c.c_void_p]),
    "hone_kv_append_bf16": (_c.c_int, [_c.c_void_p] * 9 + [_c.c_int64] * 7 + [_c.c_void_p]),
    "hone_silu_mul_bf16": (_c.c_int, [_c.c_void_p] * 3 + [_c.c_int64] * 2 + [_c.c_void_p]),
    "hone_rope_kv_append_bf16": (_c.c_int, [_c.c_void_p] * 12 + [_c.c_int64] * 9 +
                                 [_c.c_double, _c.POINTER(_c.c_double), _c.c_void_p]),
}
# Functions added in a minor version: a library of an older minor version loads without them,
# and calling one raises (see function()).
_SINCE_MINOR = {"hone_qmv_affine_bf16": 1, "hone_decode_paged_bf16": 2,
                "hone_qmm_affine_bf16": 3, "hone_quantized_linear_bf16": 3,
                "hone_rmsnorm_bf16": 4, "hone_rope_bf16": 4, "hone_kv_append_bf16": 4,
                "hone_silu_mul_bf16": 4, "hone_rope_kv_append_bf16": 5}
for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _f = getattr(lib, _name, None)
    if _f is None and _name in _SINCE_MINOR:
        continue
    if _f is None:
        raise ImportError("hone: %s lacks %s" % (lib._name, _name))
    _f.restype = _restype
    _f.argtypes = _argtypes


class DeviceInfo(ctypes.Structure):
    """hone_device_info (C API 1.0 layout)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("backend", ctypes.c_char * 16),
        ("model", ctypes.c_char * 128),
        ("llc_bytes", ctypes.c_uint64),
        ("llc_known", ctypes.c_int32),
        ("compute_units", ctypes.c_int32),
        ("compute_capability", ctypes.c_char * 16),
        ("runtime_version", ctypes.c_char * 64),
        ("driver_version", ctypes.c_char * 64),
        ("memory_budget_bytes", ctypes.c_uint64),
    ]


lib.hone_device_info_get.restype = ctypes.c_int
lib.hone_device_info_get.argtypes = [ctypes.c_char_p, ctypes.POINTER(DeviceInfo)]


def function(name):
    """The C API function `name`; raises HoneRuntimeError when the loaded library predates it."""
    f = getattr(lib, name, None)
    if f is None:
        v = lib.hone_api_version()
        raise HoneRuntimeError("HONE_ERROR_RUNTIME",
                               "%s is C API %d.%d and lacks %s (C API %d.%d); rebuild it or set "
                               "HONE_LIBRARY to a newer libhone.so" %
                               (lib._name, v >> 16, v & 0xFFFF, name, C_API_VERSION_MAJOR,
                                _SINCE_MINOR.get(name, 0)))
    return f


def check(status):
    """Raises the HoneError subclass of a failed status with hone_last_error()'s message."""
    if status == OK:
        return
    name = lib.hone_status_name(status).decode()
    message = lib.hone_last_error().decode(errors="replace")
    raise _ERRORS.get(status, HoneRuntimeError)(name, message)


def call_string(function, *args, capacity=256, retry=True):
    """Calls a C API function that returns a string into a caller buffer; grows the buffer
    and calls again when it was too small, unless `retry` is false (a call with effects)."""
    length = ctypes.c_size_t(0)
    while True:
        buf = ctypes.create_string_buffer(capacity)
        status = function(*args, buf, capacity, ctypes.byref(length))
        if status != BUFFER_TOO_SMALL or not retry:
            check(status)
            return buf.value.decode()
        capacity = length.value + 1


check(lib.hone_check_version(C_API_VERSION_MAJOR))
