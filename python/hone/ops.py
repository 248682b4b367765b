"""hone's ops on array objects, each through the dispatcher (cache and HONE_TACTIC_* apply).

    y = hone.ops.gemv_f32(x, w)                  # numpy float32 x [rows, k], w [n, k]
    y = hone.ops.gemv_bf16(x, w)                 # torch bf16 CUDA tensors; current stream
    y = hone.ops.qmv_affine_bf16(x, q, scales, biases, bits=4, group=64)   # torch, CUDA
    y = hone.ops.quantized_linear_bf16(x, q, scales, biases, bits=4, group=64)  # any rows
    o = hone.ops.decode_paged_bf16(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len)
    y = hone.ops.rmsnorm_bf16(x, w, eps=1e-5)    # also rope_bf16, kv_append_bf16, silu_mul_bf16
"""

import ctypes
from collections import namedtuple

from . import _arrays
from ._lib import InvalidArgument, check, function, lib


def _bad(message):
    return InvalidArgument("HONE_ERROR_INVALID_ARGUMENT", message)


def _dims2(a, name):
    """(rows, cols) of a 1-D (one row) or 2-D array."""
    if len(a.shape) == 1:
        return 1, a.shape[0]
    if len(a.shape) == 2:
        return a.shape
    raise _bad("%s must be 1-D or 2-D, got shape %s" % (name, a.shape))


def _want(a, name, dtype, shape=None):
    """Checks a's dtype (one name, or a tuple of accepted names) and, when given, its shape
    ([1, cols] also accepts a 1-D [cols])."""
    dtypes = (dtype,) if isinstance(dtype, str) else tuple(dtype)
    if a.dtype not in dtypes:
        raise _bad("%s has dtype %s, expected %s" % (name, a.dtype, " or ".join(dtypes)))
    if shape is not None and tuple(a.shape) != tuple(shape) and \
            not (len(a.shape) == 1 and shape[0] == 1 and a.shape[0] == shape[1]):
        raise _bad("%s has shape %s, expected %s" % (name, tuple(a.shape), tuple(shape)))


def _checked(convert, *specs):
    """Arrays from (obj, name, dtype) specs through `convert` (_arrays.host_array or
    device_array): every object is converted first, then every dtype checked, in order."""
    arrays = [convert(obj, name) for obj, name, _ in specs]
    for a, (_, name, dtype) in zip(arrays, specs):
        _want(a, name, dtype)
    return arrays


def _numpy():
    try:
        import numpy
    except ImportError:
        raise _bad("out=None needs numpy to allocate the result; pass out=") from None
    return numpy


def _numpy_empty(like, shape):
    return _numpy().empty(shape, dtype="float32")


def _torch_empty(like, shape):
    if not hasattr(like, "new_empty"):
        raise _bad("out=None needs a torch tensor x to allocate the result; pass out=")
    return like.new_empty(shape)


# Where an op's arrays live and what they hold. array: the converter; dtype: x, w and out;
# packed, params: quantized words and affine scales/biases; empty(x, shape): allocates out.
_Memory = namedtuple("_Memory", ["array", "dtype", "packed", "params", "empty"])
_HOST = _Memory(_arrays.host_array, "f32", "u32", "u16", _numpy_empty)
_CUDA = _Memory(_arrays.device_array, "bf16", ("u32", "i32"), "bf16", _torch_empty)


def _gemv_args(mem, x, w):
    """(xa, wa, rows, n, k) of gemv's x [rows, k] or [k] and w [n, k]."""
    xa, wa = _checked(mem.array, (x, "x", mem.dtype), (w, "w", mem.dtype))
    rows, k = _dims2(xa, "x")
    n, wk = _dims2(wa, "w")
    if len(wa.shape) != 2 or wk != k:
        raise _bad("w has shape %s, expected [n, %d] (k of x)" % (tuple(wa.shape), k))
    return xa, wa, rows, n, k


def _qmv_args(mem, x, packed, scales, biases, bits, group):
    """(xa, pa, sa, ba, rows, n, k) of qmv's x [rows, k] or [k], packed [n, k * bits / 32]
    and scales, biases [n, k / group]; bits and group are checked by hone_affine_sizes."""
    xa, pa, sa, ba = _checked(mem.array, (x, "x", mem.dtype), (packed, "packed", mem.packed),
                              (scales, "scales", mem.params), (biases, "biases", mem.params))
    rows, k = _dims2(xa, "x")
    n = pa.shape[0] if len(pa.shape) == 2 else 0
    words, groups = ctypes.c_int64(), ctypes.c_int64()
    check(lib.hone_affine_sizes(max(n, 1), k, bits, group, ctypes.byref(words),
                                ctypes.byref(groups)))
    if n < 1 or tuple(pa.shape) != (n, words.value // n):
        raise _bad("packed has shape %s, expected [n, %d] for k=%d, bits=%d" %
                   (tuple(pa.shape), k * bits // 32, k, bits))
    for a, name in ((sa, "scales"), (ba, "biases")):
        if tuple(a.shape) != (n, groups.value // n):
            raise _bad("%s has shape %s, expected [%d, %d] for k=%d, group=%d" %
                       (name, tuple(a.shape), n, k // group, k, group))
    return xa, pa, sa, ba, rows, n, k


def _output(mem, out, x, xa, rows, n):
    """(out, its Array): `out` checked against [rows, n] ([n] for a 1-D x), allocated like x
    when None."""
    if out is None:
        out = mem.empty(x, (n,) if len(xa.shape) == 1 else (rows, n))
    ya = mem.array(out, "out")
    _want(ya, "out", mem.dtype, (rows, n))
    return out, ya


def gemv_f32(x, w, out=None):
    """out[r, n] = sum_k x[r, k] * w[n, k] in float32 on the CPU (hone_gemv_f32).

    x: [rows, k] or [k]; w: [n, k]; host float32, C-contiguous. Returns out ([rows, n], or
    [n] for a 1-D x), allocated with numpy when None."""
    xa, wa, rows, n, k = _gemv_args(_HOST, x, w)
    out, ya = _output(_HOST, out, x, xa, rows, n)
    check(lib.hone_gemv_f32(xa.pointer, wa.pointer, ya.pointer, rows, n, k))
    return out


def qmv_affine(x, packed, scales, biases, bits, group, out=None):
    """out[r, n] = sum_k x[r, k] * W[n, k], W affine-quantized (hone_qmv_affine).

    packed: uint32 [n, k * bits / 32]; scales, biases: bf16 bit patterns as uint16
    [n, k / group] (hone.quantize_affine makes them); x: float32 [rows, k] or [k]."""
    xa, pa, sa, ba, rows, n, k = _qmv_args(_HOST, x, packed, scales, biases, bits, group)
    out, ya = _output(_HOST, out, x, xa, rows, n)
    check(lib.hone_qmv_affine(xa.pointer, pa.pointer, sa.pointer, ba.pointer, ya.pointer, rows,
                              n, k, bits, group))
    return out


def _stream_value(stream, like):
    if stream is None:
        if _arrays._is_torch(like):
            import torch
            return torch.cuda.current_stream(like.device).cuda_stream
        return 0
    return int(getattr(stream, "cuda_stream", getattr(stream, "ptr", stream)))


def gemv_bf16(x, w, out=None, stream=None):
    """out[r, n] = sum_k x[r, k] * w[n, k] in bf16 with fp32 accumulation on CUDA
    (hone_gemv_bf16). Enqueued on `stream` (a torch/CuPy stream or a cudaStream_t as int);
    default: torch's current stream for torch tensors, else the legacy default stream.

    x: [rows, k] or [k]; w: [n, k]; bf16 CUDA arrays (torch tensors, or uint16 bit patterns
    through __cuda_array_interface__). out=None allocates with x.new_empty (torch)."""
    xa, wa, rows, n, k = _gemv_args(_CUDA, x, w)
    out, ya = _output(_CUDA, out, x, xa, rows, n)
    check(lib.hone_gemv_bf16(xa.pointer, wa.pointer, ya.pointer, rows, n, k,
                             _stream_value(stream, x)))
    return out


def qmv_affine_bf16(x, packed, scales, biases, bits, group, out=None, stream=None):
    """out[r, n] = sum_k x[r, k] * W[n, k] in bf16 with fp32 accumulation on CUDA, W
    affine-quantized (hone_qmv_affine_bf16). Enqueued on `stream` as gemv_bf16.

    x: bf16 [rows, k] or [k], rows 1-32; packed: uint32 or int32 [n, k * bits / 32] (the words
    hone.quantize_affine makes, copied as they are); scales, biases: bf16 [n, k / group]; all
    CUDA arrays (torch tensors, or __cuda_array_interface__ with uint16 bit patterns for bf16).
    From hone.quantize_affine's numpy arrays to torch:
        torch.from_numpy(packed.view(numpy.int32)).cuda()
        torch.from_numpy(scales.view(numpy.int16)).view(torch.bfloat16).cuda()
    out=None allocates with x.new_empty (torch)."""
    xa, pa, sa, ba, rows, n, k = _qmv_args(_CUDA, x, packed, scales, biases, bits, group)
    out, ya = _output(_CUDA, out, x, xa, rows, n)
    check(function("hone_qmv_affine_bf16")(xa.pointer, pa.pointer, sa.pointer, ba.pointer,
                                           ya.pointer, rows, n, k, bits, group,
                                           _stream_value(stream, x)))
    return out


def _affine_linear_bf16(name, x, packed, scales, biases, bits, group, out, stream):
    """qmm_affine_bf16 and quantized_linear_bf16: qmv_affine_bf16's operands, any rows."""
    xa, pa, sa, ba, rows, n, k = _qmv_args(_CUDA, x, packed, scales, biases, bits, group)
    out, ya = _output(_CUDA, out, x, xa, rows, n)
    check(function(name)(xa.pointer, pa.pointer, sa.pointer, ba.pointer, ya.pointer, rows, n, k,
                         bits, group, _stream_value(stream, x)))
    return out


def qmm_affine_bf16(x, packed, scales, biases, bits, group, out=None, stream=None):
    """The prefill GEMM on Hopper tensor cores (hone_qmm_affine_bf16): qmv_affine_bf16's result
    and operands, the same one copy of the weights, rows 1-16384; n a multiple of 8; x, packed
    and out 16-byte aligned. Its scratch is hone's per-stream workspace."""
    return _affine_linear_bf16("hone_qmm_affine_bf16", x, packed, scales, biases, bits, group,
                               out, stream)


def quantized_linear_bf16(x, packed, scales, biases, bits, group, out=None, stream=None):
    """One quantized linear layer for any row count (hone_quantized_linear_bf16): qmv up to the
    tuned crossover (HONE_QMV_MAX_ROWS overrides it), qmm above, each with its own tactic, on
    the one copy of the weights. Operands and rules as qmm_affine_bf16."""
    return _affine_linear_bf16("hone_quantized_linear_bf16", x, packed, scales, biases, bits,
                               group, out, stream)


def _host_table(host, device, name, length):
    """An Array of the host copy of a page-table array: `host` when given, else a copy of the
    device tensor `device` (torch: .cpu(), which waits for the device)."""
    if host is None:
        if not _arrays._is_torch(device):
            raise _bad("%s_host is needed when %s is not a torch tensor (the plan reads the host "
                       "copy of the page table)" % (name, name))
        host = device.cpu()
    a = _arrays.host_array(host, name + "_host")
    _want(a, name + "_host", "i32")
    if tuple(a.shape) != (length,):
        raise _bad("%s_host has shape %s, expected (%d,)" % (name, tuple(a.shape), length))
    return host, a


def decode_paged_bf16(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, scale=None,
                      out=None, lse=None, kv_indptr_host=None, kv_last_page_len_host=None,
                      stream=None):
    """Paged-attention decode of one step on CUDA (hone_decode_paged_bf16): out[b, h] = softmax
    over request b's tokens of scale q[b, h] . k, applied to v, with KV head h / (hq / hkv).

    q: bf16 [batch, hq, head_dim]; k_cache, v_cache: bf16 [num_pages, page_size, hkv,
    head_dim]; kv_indptr: int32 [batch + 1]; kv_indices: int32 [pages] (page numbers, request
    b's at kv_indptr[b] .. kv_indptr[b + 1] - 1); kv_last_page_len: int32 [batch] (1 ..
    page_size); all CUDA arrays. head_dim 64, 128 or 256; page_size 16, 32 or 64; hq a multiple
    of hkv, at most 8 times it. scale: default 1 / sqrt(head_dim). out: bf16 [batch, hq,
    head_dim], allocated with q.new_empty when None (torch). lse: None, or a float32 [batch, hq]
    CUDA array that receives the natural-log log-sum-exp. kv_indptr_host,
    kv_last_page_len_host: host int32 copies for the plan; when None they are copied from the
    torch tensors (a device sync) -- a runtime passes the copies it already holds. Enqueued on
    `stream` as gemv_bf16."""
    qa, ka, va = _checked(_CUDA.array, (q, "q", "bf16"), (k_cache, "k_cache", "bf16"),
                          (v_cache, "v_cache", "bf16"))
    ia, xa, la = _checked(_CUDA.array, (kv_indptr, "kv_indptr", "i32"),
                          (kv_indices, "kv_indices", "i32"),
                          (kv_last_page_len, "kv_last_page_len", "i32"))
    if len(qa.shape) != 3:
        raise _bad("q has shape %s, expected [batch, hq, head_dim]" % (tuple(qa.shape),))
    batch, hq, head_dim = qa.shape
    if len(ka.shape) != 4 or ka.shape[3] != head_dim:
        raise _bad("k_cache has shape %s, expected [num_pages, page_size, hkv, %d]" %
                   (tuple(ka.shape), head_dim))
    if tuple(va.shape) != tuple(ka.shape):
        raise _bad("v_cache has shape %s, expected %s (that of k_cache)" %
                   (tuple(va.shape), tuple(ka.shape)))
    num_pages, page_size, hkv, _ = ka.shape
    if tuple(ia.shape) != (batch + 1,):
        raise _bad("kv_indptr has shape %s, expected (%d,) (batch + 1)" %
                   (tuple(ia.shape), batch + 1))
    if tuple(la.shape) != (batch,):
        raise _bad("kv_last_page_len has shape %s, expected (%d,)" % (tuple(la.shape), batch))
    if len(xa.shape) != 1:
        raise _bad("kv_indices has shape %s, expected 1-D" % (tuple(xa.shape),))
    indptr_host, ih = _host_table(kv_indptr_host, kv_indptr, "kv_indptr", batch + 1)
    last_host, lh = _host_table(kv_last_page_len_host, kv_last_page_len, "kv_last_page_len",
                                batch)
    if out is None:
        out = _torch_empty(q, (batch, hq, head_dim))
    oa = _CUDA.array(out, "out")
    _want(oa, "out", "bf16", (batch, hq, head_dim))
    lse_pointer = 0
    if lse is not None:
        sa = _CUDA.array(lse, "lse")
        _want(sa, "lse", "f32", (batch, hq))
        lse_pointer = sa.pointer
    if scale is None:
        scale = head_dim ** -0.5
    check(function("hone_decode_paged_bf16")(
        qa.pointer, ka.pointer, va.pointer, ia.pointer, xa.pointer, la.pointer, ih.pointer,
        lh.pointer, oa.pointer, lse_pointer, batch, num_pages, hq, hkv, head_dim, page_size,
        float(scale), _stream_value(stream, q)))
    del indptr_host, last_host  # the host copies lived through the call
    return out


def _rows_of(a, name, cols=None):
    """(rows, cols) of a contiguous [rows, cols] or [cols] array."""
    rows, c = _dims2(a, name)
    if cols is not None and c != cols:
        raise _bad("%s has shape %s, expected [rows, %d]" % (name, tuple(a.shape), cols))
    return rows, c


def rmsnorm_bf16(x, w, eps=1e-6, residual=None, out=None, residual_out=None, stream=None):
    """out = h / sqrt(mean(h^2) + eps) * w per row on CUDA (hone_rmsnorm_bf16), h = x, or with
    `residual` h = bf16(x + residual), also written to residual_out (a decoder layer's fused
    residual add). x, residual: bf16 [rows, hidden] or [hidden]; w: bf16 [hidden]. out and
    residual_out are allocated like x when None (torch); out may be x and residual_out may be
    residual (in place). Returns out, or (out, residual_out) with a residual. Enqueued on
    `stream` as gemv_bf16."""
    xa, wa = _checked(_CUDA.array, (x, "x", "bf16"), (w, "w", "bf16"))
    rows, hidden = _rows_of(xa, "x")
    _want(wa, "w", "bf16", (1, hidden))
    out, oa = _output(_CUDA, out, x, xa, rows, hidden)
    ra = ro = None
    if residual is not None:
        ra = _CUDA.array(residual, "residual")
        _want(ra, "residual", "bf16", (rows, hidden))
        residual_out, ro = _output(_CUDA, residual_out, x, xa, rows, hidden)
    check(function("hone_rmsnorm_bf16")(
        xa.pointer, ra.pointer if ra else None, ro.pointer if ro else None, wa.pointer,
        oa.pointer, rows, hidden, float(eps), _stream_value(stream, x)))
    return (out, residual_out) if residual is not None else out


def silu_mul_bf16(gate, up=None, out=None, stream=None):
    """out = silu(gate) * up on CUDA (hone_silu_mul_bf16). With up=None, gate is the fused
    gate/up projection output [rows, 2 * inter] (gate the first half of each row); else gate
    and up are [rows, inter]. bf16 CUDA arrays; out allocated like gate when None (torch).
    Enqueued on `stream` as gemv_bf16."""
    ga = _CUDA.array(gate, "gate")
    _want(ga, "gate", "bf16")
    rows, cols = _rows_of(ga, "gate")
    if up is None:
        if cols % 2:
            raise _bad("gate has shape %s: a fused gate/up row has an even length" %
                       (tuple(ga.shape),))
        inter, ua = cols // 2, None
    else:
        inter = cols
        ua = _CUDA.array(up, "up")
        _want(ua, "up", "bf16", (rows, inter))
    out, oa = _output(_CUDA, out, gate, ga, rows, inter)
    check(function("hone_silu_mul_bf16")(ga.pointer, ua.pointer if ua else None, oa.pointer,
                                         rows, inter, _stream_value(stream, gate)))
    return out


def _llama3_scaling(llama3_scaling):
    """The C array of a (factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings) tuple, or None."""
    if llama3_scaling is None:
        return None
    if len(llama3_scaling) != 4:
        raise _bad("llama3_scaling has %d values, expected 4 (factor, low_freq_factor, "
                   "high_freq_factor, original_max_position_embeddings)" % len(llama3_scaling))
    return (ctypes.c_double * 4)(*[float(v) for v in llama3_scaling])


def rope_bf16(q, k, positions, theta=10000.0, llama3_scaling=None, stream=None):
    """Rotary position embedding in place on CUDA, half rotation as Llama and Qwen2
    (hone_rope_bf16). q: bf16 [rows, hq, head_dim]; k: bf16 [rows, hkv, head_dim]; positions:
    int32 [rows]; all contiguous CUDA arrays. llama3_scaling: None, or (factor,
    low_freq_factor, high_freq_factor, original_max_position_embeddings) of a "rope_type":
    "llama3" config. Returns (q, k). Enqueued on `stream` as gemv_bf16."""
    qa, ka, pa = _checked(_CUDA.array, (q, "q", "bf16"), (k, "k", "bf16"),
                          (positions, "positions", "i32"))
    if len(qa.shape) != 3:
        raise _bad("q has shape %s, expected [rows, hq, head_dim]" % (tuple(qa.shape),))
    rows, hq, head_dim = qa.shape
    if len(ka.shape) != 3 or ka.shape[0] != rows or ka.shape[2] != head_dim:
        raise _bad("k has shape %s, expected [%d, hkv, %d]" % (tuple(ka.shape), rows, head_dim))
    if tuple(pa.shape) != (rows,):
        raise _bad("positions has shape %s, expected (%d,)" % (tuple(pa.shape), rows))
    scaling = _llama3_scaling(llama3_scaling)
    check(function("hone_rope_bf16")(qa.pointer, ka.pointer, pa.pointer, rows, hq, ka.shape[1],
                                     head_dim, 0, 0, float(theta), scaling,
                                     _stream_value(stream, q)))
    return q, k


def kv_append_bf16(k, v, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                   kv_indptr_host=None, kv_last_page_len_host=None, stream=None):
    """Writes the new token's K and V of every request into the paged cache decode_paged_bf16
    reads (hone_kv_append_bf16): slot kv_last_page_len[b] - 1 of page kv_indices[kv_indptr[b +
    1] - 1]. k, v: bf16 [batch, hkv, head_dim]; k_cache, v_cache: bf16 [num_pages, page_size,
    hkv, head_dim]; the page table int32 as decode_paged_bf16's; all CUDA arrays. The host
    copies are checked first; when None they are copied from the torch tensors (a device
    sync). Enqueued on `stream` as gemv_bf16."""
    ka, va = _checked(_CUDA.array, (k, "k", "bf16"), (v, "v", "bf16"))
    if len(ka.shape) != 3:
        raise _bad("k has shape %s, expected [batch, hkv, head_dim]" % (tuple(ka.shape),))
    if tuple(va.shape) != tuple(ka.shape):
        raise _bad("v has shape %s, expected %s (that of k)" % (tuple(va.shape), tuple(ka.shape)))
    t = _PagedAppend(ka.shape, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                     kv_indptr_host, kv_last_page_len_host)
    check(function("hone_kv_append_bf16")(
        ka.pointer, va.pointer, t.kc.pointer, t.vc.pointer, t.ia.pointer, t.xa.pointer,
        t.la.pointer, t.ih.pointer, t.lh.pointer, t.batch, t.num_pages, t.hkv, t.head_dim,
        t.page_size, 0, 0, _stream_value(stream, k)))
    del t  # the host copies lived through the call
    return k_cache, v_cache


class _PagedAppend(object):
    """The checked caches and page table of an append of tokens shaped `kv_shape` ([batch, hkv,
    head_dim]): kv_append_bf16's and rope_kv_append_bf16's. Holds the host copies until it is
    dropped."""

    def __init__(self, kv_shape, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                 kv_indptr_host, kv_last_page_len_host):
        self.batch, self.hkv, self.head_dim = kv_shape
        self.kc, self.vc = _checked(_CUDA.array, (k_cache, "k_cache", "bf16"),
                                    (v_cache, "v_cache", "bf16"))
        self.ia, self.xa, self.la = _checked(_CUDA.array, (kv_indptr, "kv_indptr", "i32"),
                                             (kv_indices, "kv_indices", "i32"),
                                             (kv_last_page_len, "kv_last_page_len", "i32"))
        kc, vc, batch = self.kc, self.vc, self.batch
        if len(kc.shape) != 4 or tuple(kc.shape[2:]) != (self.hkv, self.head_dim):
            raise _bad("k_cache has shape %s, expected [num_pages, page_size, %d, %d]" %
                       (tuple(kc.shape), self.hkv, self.head_dim))
        if tuple(vc.shape) != tuple(kc.shape):
            raise _bad("v_cache has shape %s, expected %s (that of k_cache)" %
                       (tuple(vc.shape), tuple(kc.shape)))
        self.num_pages, self.page_size = kc.shape[0], kc.shape[1]
        if tuple(self.ia.shape) != (batch + 1,):
            raise _bad("kv_indptr has shape %s, expected (%d,) (batch + 1)" %
                       (tuple(self.ia.shape), batch + 1))
        if tuple(self.la.shape) != (batch,):
            raise _bad("kv_last_page_len has shape %s, expected (%d,)" %
                       (tuple(self.la.shape), batch))
        self.indptr_host, self.ih = _host_table(kv_indptr_host, kv_indptr, "kv_indptr",
                                                batch + 1)
        self.last_host, self.lh = _host_table(kv_last_page_len_host, kv_last_page_len,
                                              "kv_last_page_len", batch)


def rope_kv_append_bf16(q, k, v, positions, k_cache, v_cache, kv_indptr, kv_indices,
                        kv_last_page_len, qkv_bias=None, theta=10000.0, llama3_scaling=None,
                        kv_indptr_host=None, kv_last_page_len_host=None, stream=None):
    """rope_bf16 and kv_append_bf16 in one launch (hone_rope_kv_append_bf16): q rotated in
    place; k rotated and written with v into the paged cache (k itself is not written). With
    qkv_bias (Qwen2: bf16 [(hq + 2 hkv) * head_dim], q's heads, k's, v's), every q, k and v
    element is first bf16(x + bias). Bit for bit the bias add, rope_bf16 and kv_append_bf16 in
    turn. q: bf16 [batch, hq, head_dim]; k, v: bf16 [batch, hkv, head_dim]; positions: int32
    [batch]; caches and page table as kv_append_bf16's (page_size 16, 32 or 64). Returns (q,
    k_cache, v_cache). Enqueued on `stream` as gemv_bf16."""
    qa, ka, va, pa = _checked(_CUDA.array, (q, "q", "bf16"), (k, "k", "bf16"), (v, "v", "bf16"),
                              (positions, "positions", "i32"))
    if len(qa.shape) != 3:
        raise _bad("q has shape %s, expected [batch, hq, head_dim]" % (tuple(qa.shape),))
    batch, hq, head_dim = qa.shape
    if len(ka.shape) != 3 or ka.shape[0] != batch or ka.shape[2] != head_dim:
        raise _bad("k has shape %s, expected [%d, hkv, %d]" % (tuple(ka.shape), batch, head_dim))
    if tuple(va.shape) != tuple(ka.shape):
        raise _bad("v has shape %s, expected %s (that of k)" % (tuple(va.shape), tuple(ka.shape)))
    if tuple(pa.shape) != (batch,):
        raise _bad("positions has shape %s, expected (%d,)" % (tuple(pa.shape), batch))
    hkv = ka.shape[1]
    bias_pointer = None
    if qkv_bias is not None:
        ba = _CUDA.array(qkv_bias, "qkv_bias")
        _want(ba, "qkv_bias", "bf16")
        if tuple(ba.shape) != ((hq + 2 * hkv) * head_dim,):
            raise _bad("qkv_bias has shape %s, expected (%d,) ((hq + 2 hkv) x head_dim)" %
                       (tuple(ba.shape), (hq + 2 * hkv) * head_dim))
        bias_pointer = ba.pointer
    scaling = _llama3_scaling(llama3_scaling)
    t = _PagedAppend(ka.shape, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                     kv_indptr_host, kv_last_page_len_host)
    check(function("hone_rope_kv_append_bf16")(
        qa.pointer, ka.pointer, va.pointer, bias_pointer, t.kc.pointer, t.vc.pointer,
        pa.pointer, t.ia.pointer, t.xa.pointer, t.la.pointer, t.ih.pointer, t.lh.pointer, batch,
        t.num_pages, hq, hkv, head_dim, t.page_size, 0, 0, 0, float(theta), scaling,
        _stream_value(stream, q)))
    del t  # the host copies lived through the call
    return q, k_cache, v_cache


def gemv_f32_raw(x, w, y, rows, n, k):
    """hone_gemv_f32 on raw host pointers (ints)."""
    check(lib.hone_gemv_f32(x, w, y, rows, n, k))


def gemv_bf16_raw(x, w, y, rows, n, k, stream=0):
    """hone_gemv_bf16 on raw device pointers (ints) and a cudaStream_t (int, 0: legacy)."""
    check(lib.hone_gemv_bf16(x, w, y, rows, n, k, stream))


def qmv_affine_bf16_raw(x, q, scales, biases, y, rows, n, k, bits, group, stream=0):
    """hone_qmv_affine_bf16 on raw device pointers (ints) and a cudaStream_t (int, 0: legacy)."""
    check(function("hone_qmv_affine_bf16")(x, q, scales, biases, y, rows, n, k, bits, group,
                                           stream))


def decode_paged_bf16_raw(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len,
                          kv_indptr_host, kv_last_page_len_host, o, lse, batch, num_pages, hq,
                          hkv, head_dim, page_size, scale, stream=0):
    """hone_decode_paged_bf16 on raw pointers (ints; the two *_host ones host memory, lse 0 for
    none) and a cudaStream_t (int, 0: legacy)."""
    check(function("hone_decode_paged_bf16")(q, k_cache, v_cache, kv_indptr, kv_indices,
                                             kv_last_page_len, kv_indptr_host,
                                             kv_last_page_len_host, o, lse, batch, num_pages, hq,
                                             hkv, head_dim, page_size, float(scale), stream))
