"""bench/peers/decode_step_torch.py on the host: the .npy reader of --from, and the fields and
table of its document."""
import json
import pathlib
import re
import types

import numpy as np
import pytest


def save(path, array, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, array, version=version)
    return str(path)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("shape", [(2, 3), (5,), (), (0, 4), (2, 3, 4)])
def test_read_npy_round_trips_float32(peers, tmp_path, version, shape):
    a = np.random.default_rng(7).standard_normal(shape).astype("<f4")
    got = peers.step.read_npy(save(tmp_path / "a.npy", a, version))
    assert got.dtype == np.dtype("<f4") and got.shape == a.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, a)


def test_read_npy_reads_fortran_order_into_c_order(peers, tmp_path):
    a = np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4))
    got = peers.step.read_npy(save(tmp_path / "f.npy", a))
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.arange(12, dtype="<f4").reshape(3, 4))


def test_read_npy_rejects_what_hone_does_not_write(peers, tmp_path):
    read = peers.step.read_npy
    with pytest.raises(ValueError, match=r"f64\.npy: dtype <f8, expected little-endian float32"):
        read(save(tmp_path / "f64.npy", np.zeros(3)))
    with pytest.raises(ValueError, match=r"dtype >f4"):
        read(save(tmp_path / "be.npy", np.zeros(3, dtype=">f4")))
    text = tmp_path / "text.npy"
    text.write_text("not an array")
    with pytest.raises(ValueError, match=r"text\.npy: "):
        read(str(text))
    cut = tmp_path / "cut.npy"
    cut.write_bytes(open(save(tmp_path / "whole.npy", np.ones(10, "<f4")), "rb").read()[:-8])
    with pytest.raises(ValueError, match=r"cut\.npy: "):
        read(str(cut))
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"objects\.npy: "):
        read(str(objects))


def test_header_fields_on_the_cpu(peers):
    args = types.SimpleNamespace(samples=9, seed=1)
    doc = peers.step.header(types.SimpleNamespace(type="cpu"), peers.step.PEER_CPU, None, None,
                            args)
    assert sorted(doc) == sorted([
        "format", "format_version", "date", "device", "l2_bytes", "torch", "cuda", "peer",
        "mode", "method", "bytes", "read_bandwidth", "read_bandwidth_source", "samples",
        "sample_seconds", "seed"])
    assert doc["format"] == "hone.peer.decode_step_torch" and doc["peer"] == peers.step.PEER_CPU
    assert doc["l2_bytes"] is None and doc["samples"] == 9 and doc["seed"] == 1


def test_markdown_table(peers):
    doc = {"device": "cpu (x, 1 threads)", "peer": "P", "torch": "t", "date": "d", "mode": "m",
           "samples": 3, "bytes": "b", "read_bandwidth": 4e12, "read_bandwidth_source": "s",
           "results": [{"model": "tiny", "batch": 2, "context": 8, "step_us": 12.34,
                        "tokens_per_s": 162074.6, "bytes_per_step": 1.5e9, "gbps": 1200.4,
                        "read_frac": 0.3, "spread": 0.0123, "replays_per_sample": 40,
                        "sdpa": {"picked": "math", "gqa": "enable_gqa=True"}}],
           "skipped": [{"model": "big", "batch": 64, "context": 32768, "reason": "needs 1 GB"}]}
    lines = peers.step.markdown(doc).splitlines()
    assert lines[0] == "# decode step: PyTorch peer, cpu (x, 1 threads)"
    assert re.search(r"Median of 3 samples; .* of read bw = GB/s / 4000 GB/s \(s\)\.$", lines[2])
    assert lines[4] == ("| model | batch | context | step µs | tokens/s | GB read | GB/s | of read "
                        "bw | spread | replays/sample | SDPA |")
    assert lines[6] == ("| tiny | 2 | 8 | 12.3 | 162075 | 1.500 | 1200 | 0.300 | 0.012 | 40 | "
                        "math, gqa |")
    assert lines[7] == "| big | 64 | 32768 | skipped: needs 1 GB | | | | | | | |"


def test_spec_reads_a_null_field_as_absent(peers):
    """As hone's parser does: a null num_key_value_heads means as many KV heads as heads, a null
    head_dim means hidden / heads."""
    root = pathlib.Path(__file__).resolve().parents[2]
    config = json.loads((root / "models" / "llama-3.1-8b.json").read_text())
    spec = peers.step.Spec(dict(config), "llama.json", "llama")
    assert (spec.hq, spec.hkv, spec.head_dim) == (32, 8, 128)
    config.update(num_key_value_heads=None, head_dim=None)
    spec = peers.step.Spec(config, "llama.json", "llama")
    assert (spec.hq, spec.hkv, spec.head_dim) == (32, 32, 128)
    config["num_key_value_heads"] = 0
    with pytest.raises(ValueError, match="num_key_value_heads"):
        peers.step.Spec(config, "llama.json", "llama")
