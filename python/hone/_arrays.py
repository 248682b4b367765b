"""Raw pointers and shapes from array objects, without a compile step or a hard dependency.

Host (CPU ops): numpy arrays and anything with __array_interface__, objects with __dlpack__ on
the CPU (torch CPU tensors), and buffer-protocol objects (array.array, memoryview).
Device (CUDA ops): torch tensors (.data_ptr()), anything with __cuda_array_interface__
(CuPy, Numba), and objects with __dlpack__ on a CUDA device.
Every array must be C-contiguous; a view is refused rather than copied silently.
"""

import ctypes
from collections import namedtuple

from ._lib import InvalidArgument

# pointer: int; shape: tuple of ints; dtype: "f32", "bf16", "u32", "u16", ...
Array = namedtuple("Array", ["pointer", "shape", "dtype", "device"])

_TYPESTR = {"<f4": "f32", "<u4": "u32", "<i4": "i32", "<u2": "u16", "<i2": "i16", "<f2": "f16",
            "<f8": "f64", "|u1": "u8"}
_BUFFER_FORMAT = {"f": "f32", "I": "u32", "H": "u16", "=f": "f32", "<f": "f32", "=I": "u32",
                  "<I": "u32", "=H": "u16", "<H": "u16", "L": None}
_TORCH_DTYPE = {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16",
                "torch.int32": "i32", "torch.uint16": "u16", "torch.uint32": "u32",
                "torch.int16": "i16"}
_ITEMSIZE = {"f32": 4, "u32": 4, "i32": 4, "u16": 2, "i16": 2, "bf16": 2, "f16": 2, "f64": 8,
             "u8": 1}
# DLPack: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4; kDLCPU 1, kDLCUDA 2.
_DL_DTYPE = {(2, 32): "f32", (4, 16): "bf16", (2, 16): "f16", (1, 32): "u32", (1, 16): "u16",
             (0, 32): "i32", (0, 16): "i16", (2, 64): "f64"}


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _contiguous(shape, strides, itemsize):
    """Byte strides; dimensions of extent 1 may carry any stride."""
    expected = _c_strides(shape, itemsize)
    return all(s == e or d == 1 for d, s, e in zip(shape, strides, expected))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(obj, name):
    # The capsule is read, not consumed: its destructor releases it, while `obj` (which the
    # caller keeps alive through the call) owns the memory.
    capsule = obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dtype = _DL_DTYPE.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if dtype is None:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s: unsupported DLPack dtype code=%d bits=%d lanes=%d" %
                              (name, t.dtype.code, t.dtype.bits, t.dtype.lanes))
    if t.strides:
        strides = tuple(t.strides[i] * _ITEMSIZE[dtype] for i in range(t.ndim))
        if not _contiguous(shape, strides, _ITEMSIZE[dtype]):
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s is not C-contiguous (strides %s)" % (name, strides))
    device = {1: "cpu", 2: "cuda"}.get(t.device.device_type, "dlpack:%d" % t.device.device_type)
    return Array((t.data or 0) + t.byte_offset, shape, dtype, device)


def _from_interface(iface, name, device):
    shape = tuple(iface["shape"])
    dtype = _TYPESTR.get(iface["typestr"])
    if dtype is None:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s: unsupported dtype %s" % (name, iface["typestr"]))
    strides = iface.get("strides")
    if strides is not None and not _contiguous(shape, tuple(strides), _ITEMSIZE[dtype]):
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s is not C-contiguous (strides %s)" % (name, tuple(strides)))
    pointer, readonly = iface["data"]
    return Array(pointer or 0, shape, dtype, device)


def _is_torch(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _from_torch(obj, name):
    dtype = _TORCH_DTYPE.get(str(obj.dtype))
    if dtype is None:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s: unsupported dtype %s" % (name, obj.dtype))
    if not obj.is_contiguous():
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s is not contiguous (strides %s)" % (name, tuple(obj.stride())))
    return Array(obj.data_ptr(), tuple(obj.shape), dtype, "cuda" if obj.is_cuda else "cpu")


def host_array(obj, name):
    """An Array of host memory from `obj`."""
    if _is_torch(obj):
        a = _from_torch(obj, name)
    elif hasattr(obj, "__array_interface__"):
        a = _from_interface(obj.__array_interface__, name, "cpu")
    elif hasattr(obj, "__dlpack__"):
        a = _from_dlpack(obj, name)
    else:
        try:
            view = memoryview(obj)
        except TypeError:
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s: expected an array (numpy, __array_interface__, __dlpack__ "
                                  "or a buffer), got %s" % (name, type(obj).__name__)) from None
        dtype = _BUFFER_FORMAT.get(view.format)
        if dtype is None or not view.c_contiguous:
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s: buffer of format %r%s is not supported" %
                                  (name, view.format, "" if view.c_contiguous else
                                   " (not contiguous)"))
        if view.readonly:
            raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                                  "%s: read-only buffers are not supported; pass a numpy array "
                                  "or a writable buffer" % name)
        pointer = 0
        if view.nbytes:
            pointer = ctypes.addressof((ctypes.c_char * view.nbytes).from_buffer(view))
        a = Array(pointer, tuple(view.shape), dtype, "cpu")
    if a.device != "cpu":
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s is on %s; this op takes host (CPU) memory" % (name, a.device))
    return a


def device_array(obj, name):
    """An Array of CUDA device memory from `obj`."""
    if _is_torch(obj):
        a = _from_torch(obj, name)
    elif hasattr(obj, "__cuda_array_interface__"):
        iface = obj.__cuda_array_interface__
        a = _from_interface(iface, name, "cuda")
        if a.dtype == "u16":  # bf16 bit patterns (numpy-style interfaces have no bf16)
            a = a._replace(dtype="bf16")
    elif hasattr(obj, "__dlpack__"):
        a = _from_dlpack(obj, name)
    else:
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s: expected a CUDA array (torch tensor, __cuda_array_interface__ "
                              "or __dlpack__), got %s; or pass raw pointers to the *_raw ops" %
                              (name, type(obj).__name__))
    if a.device != "cuda":
        raise InvalidArgument("HONE_ERROR_INVALID_ARGUMENT",
                              "%s is on %s; this op takes CUDA device memory" % (name, a.device))
    return a
