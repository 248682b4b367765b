"""hone from Python: the C API (libhone.so) through ctypes, mirroring the `hone` CLI.

    import hone
    pick = hone.tune("gemv.f32", "rows=8,n=4096,k=4096")     # like hone tune --op --shape
    y = hone.ops.gemv_f32(x, w)                              # numpy float32
    packed, scales, biases = hone.quantize_affine(w, bits=4, group=64)
    y = hone.ops.qmv_affine_bf16(xt, qt, st, bt, bits=4, group=64)  # torch CUDA tensors
    hone.cache.path(); hone.cache.verify(); hone.cache.clear()

Importing needs neither numpy nor torch; numpy is only used to allocate results.
"""

import ctypes

from . import _arrays
from ._lib import (HoneError, HoneRuntimeError, InvalidArgument, NoDevice, C_API_VERSION_MAJOR,
                   DeviceInfo, call_string, check, lib)
from . import cache, ops

__all__ = ["HoneError", "InvalidArgument", "NoDevice", "HoneRuntimeError", "api_version",
           "version", "backends", "op_names", "op_dimensions", "device_info", "tune",
           "quantize_affine", "dequantize_affine", "cache", "ops"]

__version__ = lib.hone_version().decode()
TUNE_FORCE = 1


def version():
    """The library's version, e.g. '0.1.0'."""
    return lib.hone_version().decode()


def api_version():
    """(major, minor) of the loaded library's C API."""
    v = lib.hone_api_version()
    return v >> 16, v & 0xFFFF


def backends():
    """Backends usable here, best first: ['cuda', 'cpu'] or ['cpu']."""
    return call_string(lib.hone_backends).split(",")


def op_names():
    """{op name: backend} of every op this build carries. An op both backends carry
    (qmv.affine) maps to the backend tune() uses for it: the first of backends() with it."""
    rank = {b: i for i, b in enumerate(backends())}
    out = {}
    for item in call_string(lib.hone_ops).split(","):
        name, backend = item.split(":")
        if name not in out or rank.get(backend, len(rank)) < rank.get(out[name], len(rank)):
            out[name] = backend
    return out


def op_dimensions(op):
    """The op's dimension names in order, e.g. ['rows', 'n', 'k']."""
    return call_string(lib.hone_op_dimensions, op.encode()).split(",")


def device_info(backend=None):
    """Device facts of `backend` ('cpu', 'cuda'; None: the best present) as a dict."""
    info = DeviceInfo()
    info.struct_size = ctypes.sizeof(DeviceInfo)
    check(lib.hone_device_info_get(backend.encode() if backend else None, ctypes.byref(info)))
    out = {}
    for name, _ in DeviceInfo._fields_[1:]:
        v = getattr(info, name)
        out[name] = v.decode() if isinstance(v, bytes) else v
    out["llc_known"] = bool(out["llc_known"])
    return out


def _shape_values(op, shape):
    if isinstance(shape, str):
        items = dict(tok.split("=", 1) for tok in shape.split(",") if "=" in tok)
        if len(items) != len([t for t in shape.split(",") if t]):
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "shape %r: expected name=value tokens such as rows=8,n=4096,"
                                  "k=4096" % shape)
        shape = items
    if isinstance(shape, dict):
        names = op_dimensions(op)
        unknown = sorted(set(shape) - set(names))
        missing = [d for d in names if d not in shape]
        if unknown or missing:
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s takes dimensions %s; %s" %
                                  (op, ", ".join(names),
                                   "unknown: " + ", ".join(unknown) if unknown else
                                   "missing: " + ", ".join(missing)))
        shape = [shape[d] for d in names]
    try:
        return [int(v) for v in shape]
    except (TypeError, ValueError):
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "shape %r: dimensions must be integers" % (shape,)) from None


def tune(op, shape, dtype=None, force=False):
    """Tunes one shape like `hone tune --op OP --shape ...` and returns the pick's tactic.

    shape: "rows=8,n=4096,k=4096", a dict of dimension names, or a sequence in the op's
    dimension order (op_dimensions(op)). The pick is recorded in the cache (unless
    HONE_CACHE=off); a fresh cached pick is returned without measuring unless force.
    An op both backends carry (qmv.affine) is tuned on CUDA (bf16) when a device is present,
    else on the CPU (f32); dtype="f32" or "bf16" picks the backend explicitly."""
    values = _shape_values(op, shape)
    dims = (ctypes.c_int64 * max(len(values), 1))(*values)
    return call_string(lib.hone_tune, op.encode(), dims, len(values),
                       dtype.encode() if dtype else None, TUNE_FORCE if force else 0,
                       capacity=4096, retry=False)


def quantize_affine(w, bits=4, group=64):
    """Quantizes w (float32 [n, k]) to hone's affine layout; returns (packed uint32
    [n, k * bits / 32], scales uint16 [n, k / group], biases uint16 [n, k / group]) as numpy
    arrays (scales and biases are bf16 bit patterns)."""
    numpy = ops._numpy()
    wa = _arrays.host_array(w, "w")
    ops._want(wa, "w", "f32")
    if len(wa.shape) != 2:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "w must be 2-D [n, k], got shape %s" % (tuple(wa.shape),))
    n, k = wa.shape
    words, groups = ctypes.c_int64(), ctypes.c_int64()
    check(lib.hone_affine_sizes(n, k, bits, group, ctypes.byref(words), ctypes.byref(groups)))
    packed = numpy.empty((n, words.value // n), dtype=numpy.uint32)
    scales = numpy.empty((n, groups.value // n), dtype=numpy.uint16)
    biases = numpy.empty_like(scales)
    check(lib.hone_quantize_affine(wa.pointer, n, k, bits, group, packed.ctypes.data,
                                   scales.ctypes.data, biases.ctypes.data))
    return packed, scales, biases


def dequantize_affine(packed, scales, biases, bits, group):
    """float32 [n, k] = q * scale + bias from quantize_affine's arrays."""
    numpy = ops._numpy()
    pa, sa, ba = ops._checked(_arrays.host_array, (packed, "packed", "u32"),
                              (scales, "scales", "u16"), (biases, "biases", "u16"))
    if len(pa.shape) != 2:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "packed must be 2-D [n, k * bits / 32], got shape %s" %
                              (tuple(pa.shape),))
    n = pa.shape[0]
    if bits not in (4, 8):
        check(lib.hone_affine_sizes(n, 32, bits, group, None, None))
    k = pa.shape[1] * 32 // bits
    words, groups = ctypes.c_int64(), ctypes.c_int64()
    check(lib.hone_affine_sizes(n, k, bits, group, ctypes.byref(words), ctypes.byref(groups)))
    for a, name in ((sa, "scales"), (ba, "biases")):
        if tuple(a.shape) != (n, groups.value // n):
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s has shape %s, expected [%d, %d]" %
                                  (name, tuple(a.shape), n, groups.value // n))
    w = numpy.empty((n, k), dtype=numpy.float32)
    check(lib.hone_dequantize_affine(pa.pointer, sa.pointer, ba.pointer, n, k, bits, group,
                                     w.ctypes.data))
    return w
