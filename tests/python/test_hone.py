"""The Python package over libhone.so (CPU backend; CUDA paths only as far as their errors)."""
import array
import os
import subprocess
import sys

import numpy as np
import pytest

import hone


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_imports_without_torch_or_numpy():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['numpy'] = None; "
            "import hone; print(hone.version(), hone.api_version())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith(str(hone.api_version()))
    assert hone.api_version() >= (1, 1)


def test_library_not_found_names_where_it_looked(tmp_path):
    env = dict(os.environ, HONE_LIBRARY=str(tmp_path / "nowhere.so"))
    out = subprocess.run([sys.executable, "-c", "import hone"], capture_output=True, text=True,
                         env=env)
    assert out.returncode != 0
    assert "nowhere.so" in out.stderr and "HONE_LIBRARY" in out.stderr


def test_version_backends_ops_device():
    assert hone.api_version()[0] == 1
    assert "cpu" in hone.backends()
    assert hone.op_names()["gemv.f32"] == "cpu"
    assert hone.op_dimensions("qmv.affine") == ["rows", "n", "k", "bits", "group"]
    info = hone.device_info("cpu")
    assert info["backend"] == "cpu" and info["compute_units"] > 0
    with pytest.raises(hone.InvalidArgument, match="'tpu'"):
        hone.device_info("tpu")
    with pytest.raises(hone.InvalidArgument, match="unknown op 'nope'"):
        hone.op_dimensions("nope")


def test_gemv_f32_matches_numpy():
    x, w = rand(4, 96), rand(40, 96, seed=1)
    y = hone.ops.gemv_f32(x, w)
    assert y.shape == (4, 40) and y.dtype == np.float32
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-4, atol=1e-4)
    out = np.empty((4, 40), np.float32)
    assert hone.ops.gemv_f32(x, w, out=out) is out
    np.testing.assert_array_equal(out, y)
    y1 = hone.ops.gemv_f32(x[1], w)  # a 1-D x is one row
    assert y1.shape == (40,)
    np.testing.assert_array_equal(y1, y[1])


def test_gemv_f32_accepts_buffers_and_dlpack():
    w = rand(8, 16)
    x = array.array("f", [0.5] * 16)
    np.testing.assert_allclose(hone.ops.gemv_f32(x, w), 0.5 * w.sum(axis=1), rtol=1e-5)

    class DLPackOnly:  # only __dlpack__, as a torch CPU tensor offers
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

    xx = rand(2, 16, seed=3)
    np.testing.assert_allclose(hone.ops.gemv_f32(DLPackOnly(xx), DLPackOnly(w)), xx @ w.T,
                               rtol=1e-4, atol=1e-5)


def test_gemv_f32_raw_pointers():
    x, w = rand(2, 8), rand(3, 8, seed=2)
    y = np.zeros((2, 3), np.float32)
    hone.ops.gemv_f32_raw(x.ctypes.data, w.ctypes.data, y.ctypes.data, 2, 3, 8)
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-5, atol=1e-5)


def test_gemv_f32_errors_name_the_bad_value():
    x, w = rand(2, 8), rand(3, 8)
    with pytest.raises(hone.InvalidArgument, match="x has dtype f64, expected f32"):
        hone.ops.gemv_f32(x.astype(np.float64), w)
    with pytest.raises(hone.InvalidArgument, match=r"w has shape \(3, 7\)"):
        hone.ops.gemv_f32(x, rand(3, 7))
    with pytest.raises(hone.InvalidArgument, match="not C-contiguous"):
        hone.ops.gemv_f32(x, rand(8, 3).T)
    with pytest.raises(hone.InvalidArgument, match=r"out has shape \(3, 2\)"):
        hone.ops.gemv_f32(x, w, out=np.empty((3, 2), np.float32))
    with pytest.raises(hone.InvalidArgument, match="x: expected an array"):
        hone.ops.gemv_f32("text", w)
    with pytest.raises(hone.InvalidArgument, match="rows=0"):
        hone.ops.gemv_f32(np.empty((0, 8), np.float32), w)
    with pytest.raises(hone.InvalidArgument, match="x is NULL"):
        hone.ops.gemv_f32_raw(0, w.ctypes.data, x.ctypes.data, 1, 3, 8)


def test_quantize_dequantize_and_qmv_affine():
    w, x = rand(16, 128), rand(3, 128, seed=5)
    packed, scales, biases = hone.quantize_affine(w, bits=4, group=64)
    assert packed.shape == (16, 16) and packed.dtype == np.uint32
    assert scales.shape == (16, 2) and scales.dtype == np.uint16
    wd = hone.dequantize_affine(packed, scales, biases, bits=4, group=64)
    assert wd.shape == (16, 128)
    assert np.abs(wd - w).max() < 0.5  # 4-bit steps of a standard normal's range
    y = hone.ops.qmv_affine(x, packed, scales, biases, bits=4, group=64)
    np.testing.assert_allclose(y, x @ wd.T, rtol=1e-4, atol=1e-4)


def test_affine_errors_name_the_bad_value():
    w = rand(4, 96)
    with pytest.raises(hone.InvalidArgument, match="k=96 is not a multiple of group=64"):
        hone.quantize_affine(w, bits=4, group=64)
    with pytest.raises(hone.InvalidArgument, match="bits=3"):
        hone.quantize_affine(rand(4, 64), bits=3, group=64)
    packed, scales, biases = hone.quantize_affine(rand(4, 64), bits=8, group=32)
    with pytest.raises(hone.InvalidArgument, match="scales has dtype f32"):
        hone.ops.qmv_affine(rand(1, 64), packed, scales.astype(np.float32), biases, 8, 32)
    with pytest.raises(hone.InvalidArgument, match="group=48"):
        hone.ops.qmv_affine(rand(1, 64), packed, scales, biases, 8, 48)
    with pytest.raises(hone.InvalidArgument, match=r"packed has shape"):
        hone.ops.qmv_affine(rand(1, 32), packed, scales, biases, 8, 32)


def test_gemv_bf16_without_a_device_raises_clearly():
    if "cuda" in hone.backends():
        pytest.skip("a CUDA device is present")
    with pytest.raises(hone.InvalidArgument, match="x is on cpu"):
        hone.ops.gemv_bf16(rand(1, 8), rand(8, 8))
    with pytest.raises(hone.NoDevice, match="CUDA"):
        hone.ops.gemv_bf16_raw(16, 16, 16, 1, 8, 8)
    if "gemv.bf16" in hone.op_names():
        with pytest.raises(hone.InvalidArgument, match="rows=40"):
            hone.ops.gemv_bf16_raw(16, 16, 16, 40, 8, 8)


class FakeCudaArray:
    """Only __cuda_array_interface__ at a made-up (16-byte aligned) address: enough for every
    check that runs before the device is touched."""

    def __init__(self, shape, typestr, pointer=4096):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (pointer, False), "version": 3}


def qmv_bf16_arrays(rows=2, n=16, k=128, bits=4, group=64):
    return (FakeCudaArray((rows, k), "<u2"), FakeCudaArray((n, k * bits // 32), "<u4"),
            FakeCudaArray((n, k // group), "<u2"), FakeCudaArray((n, k // group), "<u2"),
            FakeCudaArray((rows, n), "<u2"))


def test_step_ops_bf16_errors_name_the_bad_value():
    x, w = FakeCudaArray((2, 1536), "<u2"), FakeCudaArray((1536,), "<u2")
    out = FakeCudaArray((2, 1536), "<u2")
    with pytest.raises(hone.InvalidArgument, match="x has dtype f32, expected bf16"):
        hone.ops.rmsnorm_bf16(FakeCudaArray((2, 1536), "<f4"), w, out=out)
    with pytest.raises(hone.InvalidArgument, match=r"w has shape \(1000,\)"):
        hone.ops.rmsnorm_bf16(x, FakeCudaArray((1000,), "<u2"), out=out)
    with pytest.raises(hone.InvalidArgument, match=r"residual has shape \(3, 1536\)"):
        hone.ops.rmsnorm_bf16(x, w, residual=FakeCudaArray((3, 1536), "<u2"), out=out,
                              residual_out=out)
    with pytest.raises(hone.InvalidArgument, match="even length"):
        hone.ops.silu_mul_bf16(FakeCudaArray((2, 17), "<u2"), out=out)
    with pytest.raises(hone.InvalidArgument, match=r"up has shape \(2, 8\)"):
        hone.ops.silu_mul_bf16(x, FakeCudaArray((2, 8), "<u2"), out=out)
    q, k = FakeCudaArray((2, 4, 128), "<u2"), FakeCudaArray((2, 2, 128), "<u2")
    positions = FakeCudaArray((2,), "<i4")
    with pytest.raises(hone.InvalidArgument, match="q has shape"):
        hone.ops.rope_bf16(FakeCudaArray((2, 512), "<u2"), k, positions)
    with pytest.raises(hone.InvalidArgument, match=r"positions has shape \(3,\)"):
        hone.ops.rope_bf16(q, k, FakeCudaArray((3,), "<i4"))
    with pytest.raises(hone.InvalidArgument, match="llama3_scaling has 3 values"):
        hone.ops.rope_bf16(q, k, positions, llama3_scaling=(8, 1, 4))
    kv, cache = FakeCudaArray((2, 2, 128), "<u2"), FakeCudaArray((8, 16, 2, 128), "<u2")
    indptr, last = FakeCudaArray((3,), "<i4"), FakeCudaArray((2,), "<i4")
    indices = FakeCudaArray((2,), "<i4")
    with pytest.raises(hone.InvalidArgument, match=r"v has shape \(2, 1, 128\)"):
        hone.ops.kv_append_bf16(kv, FakeCudaArray((2, 1, 128), "<u2"), cache, cache, indptr,
                                indices, last)
    with pytest.raises(hone.InvalidArgument, match=r"k_cache has shape \(8, 16, 4, 128\)"):
        hone.ops.kv_append_bf16(kv, kv, FakeCudaArray((8, 16, 4, 128), "<u2"), cache, indptr,
                                indices, last)
    with pytest.raises(hone.InvalidArgument, match=r"v has shape \(2, 1, 128\)"):
        hone.ops.rope_kv_append_bf16(q, kv, FakeCudaArray((2, 1, 128), "<u2"), positions, cache,
                                     cache, indptr, indices, last)
    with pytest.raises(hone.InvalidArgument, match=r"qkv_bias has shape \(1000,\)"):
        hone.ops.rope_kv_append_bf16(q, kv, kv, positions, cache, cache, indptr, indices, last,
                                     qkv_bias=FakeCudaArray((1000,), "<u2"))
    with pytest.raises(hone.InvalidArgument, match=r"kv_last_page_len has shape \(3,\)"):
        hone.ops.rope_kv_append_bf16(q, kv, kv, positions, cache, cache, indptr, indices,
                                     FakeCudaArray((3,), "<i4"))
    with pytest.raises(hone.InvalidArgument, match="llama3_scaling has 2 values"):
        hone.ops.rope_kv_append_bf16(q, kv, kv, positions, cache, cache, indptr, indices, last,
                                     llama3_scaling=(8, 1))


def test_qmv_affine_bf16_errors_name_the_bad_value():
    x, q, s, b, y = qmv_bf16_arrays()
    with pytest.raises(hone.InvalidArgument, match="x is on cpu"):
        hone.ops.qmv_affine_bf16(rand(2, 128), q, s, b, 4, 64, out=y)
    with pytest.raises(hone.InvalidArgument, match="x has dtype f32, expected bf16"):
        hone.ops.qmv_affine_bf16(FakeCudaArray((2, 128), "<f4"), q, s, b, 4, 64, out=y)
    with pytest.raises(hone.InvalidArgument, match="packed has dtype f32, expected u32 or i32"):
        hone.ops.qmv_affine_bf16(x, FakeCudaArray((16, 16), "<f4"), s, b, 4, 64, out=y)
    with pytest.raises(hone.InvalidArgument, match="bits=3"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 3, 64, out=y)
    with pytest.raises(hone.InvalidArgument, match="group=48"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 4, 48, out=y)
    with pytest.raises(hone.InvalidArgument, match="k=96 is not a multiple of group=64"):
        hone.ops.qmv_affine_bf16(FakeCudaArray((2, 96), "<u2"), q, s, b, 4, 64, out=y)
    with pytest.raises(hone.InvalidArgument,
                       match=r"packed has shape \(16, 16\), expected \[n, 32\]"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 8, 64, out=y)  # 8-bit: 32 words a row
    with pytest.raises(hone.InvalidArgument, match=r"biases has shape \(16, 4\)"):
        hone.ops.qmv_affine_bf16(x, q, s, FakeCudaArray((16, 4), "<u2"), 4, 64, out=y)
    with pytest.raises(hone.InvalidArgument, match=r"out has shape \(2, 8\)"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 4, 64, out=FakeCudaArray((2, 8), "<u2"))
    with pytest.raises(hone.InvalidArgument, match="out=None needs a torch tensor"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 4, 64)
    # The C API's own checks, on raw pointers: all before the device.
    with pytest.raises(hone.InvalidArgument, match="x is NULL"):
        hone.ops.qmv_affine_bf16_raw(0, 4096, 4096, 4096, 4096, 1, 16, 128, 4, 64)
    with pytest.raises(hone.InvalidArgument, match="rows=40 outside 1..32"):
        hone.ops.qmv_affine_bf16_raw(4096, 4096, 4096, 4096, 4096, 40, 16, 128, 4, 64)
    with pytest.raises(hone.InvalidArgument, match="q=.* is not 16-byte aligned"):
        hone.ops.qmv_affine_bf16_raw(4096, 4100, 4096, 4096, 4096, 1, 16, 128, 4, 64)


def test_qmv_affine_bf16_without_a_device_raises_clearly():
    if "cuda" in hone.backends():
        pytest.skip("a CUDA device is present")
    x, q, s, b, y = qmv_bf16_arrays()
    with pytest.raises(hone.NoDevice, match="CUDA"):
        hone.ops.qmv_affine_bf16(x, q, s, b, 4, 64, out=y)
    with pytest.raises(hone.NoDevice, match="CUDA"):  # int32 words, as torch holds them
        hone.ops.qmv_affine_bf16(x, FakeCudaArray((16, 16), "<i4"), s, b, 4, 64, out=y)
    with pytest.raises(hone.NoDevice, match="CUDA"):
        hone.ops.qmv_affine_bf16_raw(4096, 4096, 4096, 4096, 4096, 1, 16, 128, 4, 64)
    assert hone.op_names()["qmv.affine"] == "cpu"  # the backend tune() resolves it to
    assert hone.tune("qmv.affine", "rows=1,n=64,k=64,bits=4,group=32").startswith("qmv.affine:")
    hone.cache.clear()


def test_tune_records_the_pick_and_cache_functions():
    assert hone.cache.path() == os.path.join(os.environ["HONE_CACHE_DIR"], "tuning-cache.json")
    hone.cache.clear()
    pick = hone.tune("gemv.f32", "rows=1,n=64,k=64")
    assert pick.startswith("gemv.f32:")
    assert os.path.exists(hone.cache.path())
    assert hone.tune("gemv.f32", {"rows": 1, "n": 64, "k": 64}) == pick  # cached
    assert hone.tune("gemv.f32", [1, 64, 64]) == pick
    assert hone.cache.verify() == []
    with open(hone.cache.path(), "w") as f:
        f.write("{ not json")
    problems = hone.cache.verify()
    assert [p.problem for p in problems] == ["corrupt"]
    hone.cache.clear()
    assert not os.path.exists(hone.cache.path())


def test_tune_errors_name_the_bad_value():
    with pytest.raises(hone.InvalidArgument, match="unknown op 'gemv.f64'"):
        hone.tune("gemv.f64", [1, 64, 64])
    with pytest.raises(hone.InvalidArgument, match="missing: k"):
        hone.tune("gemv.f32", "rows=1,n=64")
    with pytest.raises(hone.InvalidArgument, match="unknown: m"):
        hone.tune("gemv.f32", {"rows": 1, "n": 64, "k": 64, "m": 2})
    with pytest.raises(hone.InvalidArgument, match="rank=2"):
        hone.tune("gemv.f32", [1, 64])
    with pytest.raises(hone.InvalidArgument, match="bf16"):
        hone.tune("gemv.f32", [1, 64, 64], dtype="bf16")
    with pytest.raises(hone.InvalidArgument, match="k=100"):
        hone.tune("qmv.affine", "rows=1,n=64,k=100,bits=4,group=32")


def decode_paged_arrays(batch=2, hq=8, hkv=2, head_dim=64, num_pages=8, page_size=16):
    return dict(q=FakeCudaArray((batch, hq, head_dim), "<u2"),
                k_cache=FakeCudaArray((num_pages, page_size, hkv, head_dim), "<u2"),
                v_cache=FakeCudaArray((num_pages, page_size, hkv, head_dim), "<u2"),
                kv_indptr=FakeCudaArray((batch + 1,), "<i4"),
                kv_indices=FakeCudaArray((num_pages,), "<i4"),
                kv_last_page_len=FakeCudaArray((batch,), "<i4"),
                out=FakeCudaArray((batch, hq, head_dim), "<u2"),
                kv_indptr_host=np.array([0, 3, 5], np.int32),
                kv_last_page_len_host=np.array([16, 2], np.int32))


def test_decode_paged_bf16_errors_name_the_bad_value():
    a = decode_paged_arrays()
    with pytest.raises(hone.InvalidArgument, match="q has dtype f32, expected bf16"):
        hone.ops.decode_paged_bf16(**dict(a, q=FakeCudaArray((2, 8, 64), "<f4")))
    with pytest.raises(hone.InvalidArgument, match=r"v_cache has shape \(8, 16, 2, 32\)"):
        hone.ops.decode_paged_bf16(**dict(a, v_cache=FakeCudaArray((8, 16, 2, 32), "<u2")))
    with pytest.raises(hone.InvalidArgument, match=r"kv_indptr has shape \(2,\), expected \(3,\)"):
        hone.ops.decode_paged_bf16(**dict(a, kv_indptr=FakeCudaArray((2,), "<i4")))
    with pytest.raises(hone.InvalidArgument, match="kv_indptr_host is needed"):
        hone.ops.decode_paged_bf16(**dict(a, kv_indptr_host=None))
    with pytest.raises(hone.InvalidArgument, match=r"out has shape \(2, 8\)"):
        hone.ops.decode_paged_bf16(**dict(a, out=FakeCudaArray((2, 8), "<u2")))
    with pytest.raises(hone.InvalidArgument, match="lse has dtype bf16, expected f32"):
        hone.ops.decode_paged_bf16(**dict(a, lse=FakeCudaArray((2, 8), "<u2")))
    # The C API's own checks, on raw pointers: all before the device.
    p = 4096
    host = np.array([0, 3, 5], np.int32)
    last = np.array([16, 2], np.int32)
    ih, lh = host.ctypes.data, last.ctypes.data
    with pytest.raises(hone.InvalidArgument, match="q is NULL"):
        hone.ops.decode_paged_bf16_raw(0, p, p, p, p, p, ih, lh, p, 0, 2, 8, 8, 2, 64, 16, 0.125)
    with pytest.raises(hone.InvalidArgument, match="o=.* is not 16-byte aligned"):
        hone.ops.decode_paged_bf16_raw(p, p, p, p, p, p, ih, lh, p + 2, 0, 2, 8, 8, 2, 64, 16,
                                       0.125)
    if hone.op_names().get("decode.paged") != "cuda":
        return  # built without the CUDA backend: the head and table checks live there
    with pytest.raises(hone.InvalidArgument, match="hq=6 is not a multiple of hkv=4"):
        hone.ops.decode_paged_bf16_raw(p, p, p, p, p, p, ih, lh, p, 0, 2, 8, 6, 4, 64, 16, 0.125)
    with pytest.raises(hone.InvalidArgument, match="head_dim=96"):
        hone.ops.decode_paged_bf16_raw(p, p, p, p, p, p, ih, lh, p, 0, 2, 8, 8, 2, 96, 16, 0.125)
    with pytest.raises(hone.InvalidArgument, match="kv_last_page_len\\[1\\]=0"):
        hone.ops.decode_paged_bf16_raw(p, p, p, p, p, p, ih, np.array([16, 0], np.int32).ctypes.data,
                                       p, 0, 2, 8, 8, 2, 64, 16, 0.125)
    with pytest.raises(hone.InvalidArgument, match="request 1 has length 0"):
        hone.ops.decode_paged_bf16_raw(p, p, p, p, p, p, np.array([0, 3, 3], np.int32).ctypes.data,
                                       lh, p, 0, 2, 8, 8, 2, 64, 16, 0.125)


def test_decode_paged_bf16_without_a_device_raises_clearly():
    if "cuda" in hone.backends():
        pytest.skip("a CUDA device is present")
    with pytest.raises(hone.NoDevice, match="CUDA"):
        hone.ops.decode_paged_bf16(**decode_paged_arrays())
