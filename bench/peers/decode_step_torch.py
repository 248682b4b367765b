#!/usr/bin/env python3
"""PyTorch peer of hone's model decode step (`hone step`): the same chain, written as a PyTorch
user writes it, timed as hone step times its own.

Per layer: F.rms_norm (a separate residual add from the second layer on) -> fused q/k/v
F.linear (+ bias for Qwen2, or Llama with attention_bias) -> rope at position `context`
(rotate_half, cos and sin precomputed outside the graph, llama3 scaling when the config has
it) -> the new token's K and V written at position `context` of a contiguous per-layer cache
[batch, hkv, context + 1, head_dim] -> F.scaled_dot_product_attention(q [batch, hq, 1, D], K,
V, enable_gqa=True) over context + 1 tokens (K and V repeat_interleave'd to hq heads where
enable_gqa is unsupported; the output says which) -> o F.linear -> residual add ->
F.rms_norm -> fused gate/up F.linear -> F.silu(gate) * up -> down F.linear -> residual add;
then the final F.rms_norm and the lm_head (torch.matmul). The linears are cuBLAS. As in hone,
the step starts from the embedded tokens (no embedding lookup) and the lm_head is its own
[vocab, hidden] weight whether or not the config ties it to the embedding.

Weights random and seeded (bf16, uniform in +-sqrt(3 / fan-in) as hone's; norm weights in
[0.9, 1.1], biases in +-0.1, K, V and the input in +-1). The config fields read are those of
src/model/model_spec.cpp: model_type (llama, qwen2), hidden_size, intermediate_size,
num_attention_heads, num_key_value_heads, head_dim (else hidden / heads), vocab_size,
num_hidden_layers, rms_norm_eps, rope_theta, attention_bias, tie_word_embeddings,
rope_scaling (llama3 or none).

Timing (CUDA): the whole step is captured in one torch.cuda.CUDAGraph (three eager warm-up
steps first, on the capture's side stream); a sample is N back-to-back replays timed with CUDA
events, N sized so that a sample lasts >= 20 ms; the step time is the median over --samples of
sample time / N; spread = IQR / median of the samples. Warm mode, as hone step: every model
here reads weights far larger than the L2, so they come from memory on every step.
Bytes read per step = every weight (hone's DecodeStep::weight_bytes: linears, norms, bias,
lm_head) + K and V of context + 1 tokens per request, every layer (DecodeStep::kv_bytes).

    python3 bench/peers/decode_step_torch.py --model models/llama-3.1-8b.json \\
        --model models/qwen2.5-1.5b.json --batch 1,4,16 --context 4k \\
        --json out/decode_step_torch.json --md out/decode_step_torch.md
    # [--samples 9] [--read-bandwidth 4455] (GB/s; default: measured with torch.sum)
    # [--seed 1] [--device cpu] (a smoke test: eager, time.perf_counter, no graph)

With --from DIR (what `hone step --export DIR` wrote: config.json, model.safetensors,
step.safetensors, step.json and hone's outputs as .npy) it times nothing: it runs hone's exact
step once (the same weights, input and cached K and V), compares the final hidden state, the
logits and every layer's appended K and V with hone's (relative L2 and max |error|, printed and
written as JSON), and exits 1 where one lies beyond the bf16 bound (compare_bound; derived in
docs/notes/decode_step.md):

    ./build/tools/hone/hone step --model models/qwen2.5-0.5b.json --batch 2 --context 100 \
        --export out/step-qwen
    python3 bench/peers/decode_step_torch.py --from out/step-qwen [--json out/compare.json]

Prints the Markdown table; writes the JSON (a header and a list of records) and the Markdown
where asked. A config that does not fit in the free device memory is skipped with a note.
Checks on every config: the logits are finite, and (CUDA) a graph replay's logits match an
eager step's (relative L2 <= 5e-2: cuBLAS and cuDNN may pick other algorithms in a capture);
a failed check is printed and the script exits non-zero after writing the outputs.
"""
import argparse
import gc
import json
import math
import os
import re
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from peer_timing import capture, measure_read_bandwidth, relative_l2, repeats_to_fill, spread
from peer_timing import sdpa_backends_accepting, time_graph, torch_header, write_json, write_text

STEM = "decode_step_torch"
PEER_CUDA = "torch.matmul (cuBLAS) + SDPA on contiguous KV + F.rms_norm, CUDA graph"
PEER_CPU = "torch.matmul + SDPA on contiguous KV + F.rms_norm, eager (CPU smoke test)"
MODE = ("warm: back-to-back replays of the whole step; the weights exceed the L2 many times "
        "over, so they stream from memory every step (as hone step)")
SAMPLE_SECONDS = 0.02  # a sample lasts at least this long
# Relative L2 between the logits of a graph replay and of an eager step: cuBLAS and cuDNN may
# pick other algorithms inside a capture (bf16 rounding differences, ~1e-2 at most); a replay
# that read stale or wrong memory would differ by O(1).
GRAPH_BOUND = 5e-2
BF16 = 2  # bytes


# ---------------------------------------------------------------------------------------------
# The model config (as src/model/model_spec.cpp reads it)

class Spec:
    """What a decode step needs of a Hugging Face config.json (Llama, Qwen2)."""

    def __init__(self, config, source, name):
        def positive(field, where=config):
            if field not in where:
                raise ValueError("%s: missing field '%s'" % (source, field))
            v = where[field]
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError("%s: field '%s' must be a positive integer, not %s" %
                                 (source, field, json.dumps(v)))
            return v

        def number_or(field, fallback, where=config, place=source):
            v = where.get(field)
            if v is None:
                return fallback
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ValueError("%s: field '%s' must be a positive number, not %s" %
                                 (place, field, json.dumps(v)))
            return float(v)

        if not isinstance(config, dict):
            raise ValueError("%s: not a JSON object" % source)
        self.name, self.source = name, source
        self.family = config.get("model_type", "")
        if self.family not in ("llama", "qwen2"):
            raise ValueError("%s: model_type '%s' is not supported (expected llama or qwen2)" %
                             (source, self.family))
        self.hidden = positive("hidden_size")
        self.inter = positive("intermediate_size")
        self.hq = positive("num_attention_heads")
        # An absent and a null field are the same, as in hone's parser (src/model/model_spec.cpp).
        self.hkv = (positive("num_key_value_heads")
                    if config.get("num_key_value_heads") is not None else self.hq)
        self.head_dim = (positive("head_dim") if config.get("head_dim") is not None
                         else self.hidden // self.hq)
        self.vocab = positive("vocab_size")
        self.layers = positive("num_hidden_layers")
        if self.hq % self.hkv:
            raise ValueError("%s: num_attention_heads %d is not a multiple of "
                             "num_key_value_heads %d" % (source, self.hq, self.hkv))
        if self.head_dim % 2:
            raise ValueError("%s: head_dim %d is odd (rope rotates halves)" %
                             (source, self.head_dim))
        self.rms_eps = number_or("rms_norm_eps", 1e-6)
        self.rope_theta = number_or("rope_theta", 10000.0)
        self.qkv_bias = self.family == "qwen2" or bool(config.get("attention_bias", False))
        self.tie_embeddings = bool(config.get("tie_word_embeddings", False))
        self.llama3 = None  # {factor, low_freq_factor, high_freq_factor, original_max_...}
        scaling = config.get("rope_scaling")
        if scaling is not None:
            kind = scaling.get("rope_type", scaling.get("type", ""))
            if kind != "llama3":
                raise ValueError("%s: rope_scaling type '%s' is not supported (expected llama3 "
                                 "or none)" % (source, kind))
            where = source + " rope_scaling"
            factor = number_or("factor", 0.0, scaling, where)
            if factor:
                self.llama3 = {
                    "factor": factor,
                    "low_freq_factor": number_or("low_freq_factor", 1.0, scaling, where),
                    "high_freq_factor": number_or("high_freq_factor", 4.0, scaling, where),
                    "original_max_position_embeddings":
                        number_or("original_max_position_embeddings", 8192.0, scaling, where)}
                s = self.llama3
                if not (s["factor"] >= 1 and 0 < s["low_freq_factor"] < s["high_freq_factor"]):
                    raise ValueError("%s: llama3 scaling needs factor >= 1 and 0 < "
                                     "low_freq_factor < high_freq_factor" % where)
        if not self.rope_theta > 1:
            raise ValueError("%s: rope_theta %g is not above 1" % (source, self.rope_theta))

    @property
    def attn_width(self):
        return self.hq * self.head_dim

    @property
    def kv_width(self):
        return self.hkv * self.head_dim

    @property
    def qkv_width(self):
        return self.attn_width + 2 * self.kv_width

    def weight_bytes(self):
        """[bytes] every weight a step reads (DecodeStep::weight_bytes, bf16)."""
        per_layer = (self.qkv_width * self.hidden + self.hidden * self.attn_width +
                     2 * self.inter * self.hidden + self.hidden * self.inter + 2 * self.hidden +
                     (self.qkv_width if self.qkv_bias else 0))
        return BF16 * (self.layers * per_layer + self.vocab * self.hidden + self.hidden)

    def kv_bytes(self, batch, context):
        """[bytes] K and V of context + 1 tokens per request, every layer (DecodeStep::kv_bytes)."""
        return self.layers * batch * (context + 1) * 2 * self.kv_width * BF16

    def describe(self):
        return {"model": self.name, "config": self.source, "family": self.family,
                "layers": self.layers, "hidden": self.hidden, "inter": self.inter,
                "hq": self.hq, "hkv": self.hkv, "head_dim": self.head_dim, "vocab": self.vocab,
                "rms_eps": self.rms_eps, "rope_theta": self.rope_theta,
                "rope_llama3": self.llama3, "qkv_bias": self.qkv_bias,
                "tie_embeddings": self.tie_embeddings}


def load_spec(path):
    if os.path.isdir(path):
        raise ValueError("model config '%s' is a directory (expected a config.json file)" % path)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ValueError("cannot read model config '%s' (%s)" % (path, e.strerror)) from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError("%s: not valid JSON (%s)" % (path, e)) from None
    return Spec(config, path, os.path.splitext(os.path.basename(path))[0])


def rope_inv_freq(spec):
    """inv_freq[i], i < head_dim / 2, in float64 (transformers' formulas, as hone's
    rope_inv_freq: theta^(-2i/D), remapped by llama3 scaling)."""
    d = spec.head_dim
    out = []
    for i in range(d // 2):
        x = spec.rope_theta ** (-2.0 * i / d)
        s = spec.llama3
        if s:
            orig = s["original_max_position_embeddings"]
            low_wavelen = orig / s["low_freq_factor"]
            high_wavelen = orig / s["high_freq_factor"]
            wavelen = 2 * math.pi / x
            if wavelen > low_wavelen:
                x /= s["factor"]
            elif wavelen >= high_wavelen:
                smooth = ((orig / wavelen - s["low_freq_factor"]) /
                          (s["high_freq_factor"] - s["low_freq_factor"]))
                x = (1 - smooth) * x / s["factor"] + smooth * x
        out.append(x)
    return out


def rope_cos_sin(spec, position, device):
    """cos and sin [head_dim] (each half repeated, for rotate_half) at `position`, angles in
    float64, cast to bf16 as a Hugging Face model casts them to its dtype."""
    angles = [position * f for f in rope_inv_freq(spec)] * 2
    cos = torch.tensor([math.cos(a) for a in angles], dtype=torch.float64)
    sin = torch.tensor([math.sin(a) for a in angles], dtype=torch.float64)
    return cos.to(device=device, dtype=torch.bfloat16), sin.to(device=device, dtype=torch.bfloat16)


# ---------------------------------------------------------------------------------------------
# SDPA's grouped-query support and backend

def gqa_supported(device):
    """True when F.scaled_dot_product_attention takes enable_gqa (torch >= 2.5) here."""
    q = torch.zeros(1, 2, 1, 8, device=device, dtype=torch.bfloat16)
    kv = torch.zeros(1, 1, 4, 8, device=device, dtype=torch.bfloat16)
    try:
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
        return True
    except (TypeError, RuntimeError):
        return False


def sdpa_info(q, k, v, gqa):
    """The backend SDPA picks for this call (torch._fused_sdp_choice, where present), the
    backends that accept it, and (CUDA) the kernels one call launches (torch.profiler)."""
    from torch.nn.attention import SDPBackend
    kwargs = {"enable_gqa": True} if gqa else {}
    names = {int(b.value): n.lower() for n, b in SDPBackend.__members__.items()}
    info = {"gqa": "enable_gqa=True" if gqa else
            "repeat_interleave of K and V to hq heads (enable_gqa unsupported)"}
    try:
        info["picked"] = names.get(int(torch._fused_sdp_choice(q, k, v, **kwargs)), "?")
    except Exception as e:  # private API: record why not
        info["picked"] = None
        info["picked_error"] = "%s: %s" % (type(e).__name__, e)
    info["accepting"] = sdpa_backends_accepting(
        lambda: F.scaled_dot_product_attention(q, k, v, **kwargs))
    if q.is_cuda:
        kernels = device_ops(lambda: F.scaled_dot_product_attention(q, k, v, **kwargs))
        info["kernels"] = sorted(set(kernels)) if isinstance(kernels, list) else kernels
    return info


def device_ops(fn):
    """Names of the device operations (kernels, copies) one eager call of fn launches, from
    torch.profiler; a string saying why where the profiler fails."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            return [e.name for e in prof.events() if str(e.device_type).endswith("CUDA")]
    except Exception as e:
        return "profiler failed: %s: %s" % (type(e).__name__, e)


def sdpa_note(info):
    picked = info.get("picked") or "?"
    return "%s, %s" % (picked, "gqa" if info["gqa"].startswith("enable_gqa") else
                       "repeat_interleave")


# ---------------------------------------------------------------------------------------------
# The step

def need_bytes(spec, batch, context, gqa):
    """[bytes] a Step allocates (weights, caches, activations) plus what the graph's pool and
    cuBLAS take: a margin of 256 MiB and 2%."""
    acts = batch * BF16 * (8 * spec.hidden + 2 * spec.qkv_width + 2 * spec.attn_width +
                           4 * spec.inter + 2 * spec.vocab)
    repeat = 0 if gqa else 2 * batch * spec.hq * (context + 1) * spec.head_dim * BF16
    total = spec.weight_bytes() + spec.kv_bytes(batch, context) + acts + repeat
    return int(total * 1.02) + (256 << 20)


def random_tensors(spec, batch, context, device, seed):
    """Random seeded weights, caches and input of one (model, batch, context): the tensors a
    Step runs on (layers: a list of dicts; final_norm, lm_head, input)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)

    def uniform(shape, scale, offset=0.0):
        t = torch.empty(shape, device=device, dtype=torch.bfloat16)
        return t.uniform_(offset - scale, offset + scale, generator=g)

    def linear(n, k):
        return uniform((n, k), math.sqrt(3.0 / k))

    m = spec
    layers = []
    for _ in range(m.layers):
        layers.append({
            "norm1": uniform((m.hidden,), 0.1, 1.0),
            "qkv": linear(m.qkv_width, m.hidden),
            "qkv_bias": uniform((m.qkv_width,), 0.1) if m.qkv_bias else None,
            "o": linear(m.hidden, m.attn_width),
            "norm2": uniform((m.hidden,), 0.1, 1.0),
            "gate_up": linear(2 * m.inter, m.hidden),
            "down": linear(m.hidden, m.inter),
            "k_cache": uniform((batch, m.hkv, context + 1, m.head_dim), 1.0),
            "v_cache": uniform((batch, m.hkv, context + 1, m.head_dim), 1.0),
        })
    return {"layers": layers, "final_norm": uniform((m.hidden,), 0.1, 1.0),
            "lm_head": linear(m.vocab, m.hidden), "input": uniform((batch, m.hidden), 1.0)}


class Step:
    """The weights, caches and input of one (model, batch, context): random and seeded, or
    `tensors` (random_tensors' form, e.g. load_export's); calling it runs one decode step and
    leaves the logits in self.logits [batch, vocab], the final norm's output in self.hidden
    [batch, hidden] and the new token's K and V at position `context` of every layer's cache."""

    def __init__(self, spec, batch, context, device, seed, gqa, tensors=None):
        self.spec, self.batch, self.context, self.gqa = spec, batch, context, gqa
        if tensors is None:
            tensors = random_tensors(spec, batch, context, device, seed)
        self.layers = tensors["layers"]
        self.final_norm, self.lm_head = tensors["final_norm"], tensors["lm_head"]
        self.input = tensors["input"]
        self.logits = torch.empty(batch, spec.vocab, device=device, dtype=torch.bfloat16)
        self.hidden = None
        self.cos, self.sin = rope_cos_sin(spec, context, device)

    def rope(self, x):  # x [batch, heads, D]
        half = self.spec.head_dim // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * self.cos + rotated * self.sin

    def __call__(self):
        m, b, pos = self.spec, self.batch, self.context
        group = m.hq // m.hkv
        shape = (m.hidden,)
        resid = self.input
        mlp_out = None
        for layer in self.layers:
            if mlp_out is not None:
                resid = resid + mlp_out
            h = F.rms_norm(resid, shape, layer["norm1"], m.rms_eps)
            qkv = F.linear(h, layer["qkv"], layer["qkv_bias"])
            q, k, v = qkv.split((m.attn_width, m.kv_width, m.kv_width), dim=-1)
            q = self.rope(q.view(b, m.hq, m.head_dim))
            k = self.rope(k.view(b, m.hkv, m.head_dim))
            k_cache, v_cache = layer["k_cache"], layer["v_cache"]
            k_cache[:, :, pos] = k
            v_cache[:, :, pos] = v.view(b, m.hkv, m.head_dim)
            if self.gqa:
                attn = F.scaled_dot_product_attention(q.unsqueeze(2), k_cache, v_cache,
                                                      enable_gqa=True)
            else:
                attn = F.scaled_dot_product_attention(
                    q.unsqueeze(2), k_cache.repeat_interleave(group, dim=1),
                    v_cache.repeat_interleave(group, dim=1))
            o = F.linear(attn.reshape(b, m.attn_width), layer["o"])
            resid = resid + o
            h = F.rms_norm(resid, shape, layer["norm2"], m.rms_eps)
            gate, up = F.linear(h, layer["gate_up"]).chunk(2, dim=-1)
            mlp_out = F.linear(F.silu(gate) * up, layer["down"])
        resid = resid + mlp_out
        self.hidden = F.rms_norm(resid, shape, self.final_norm, m.rms_eps)
        torch.matmul(self.hidden, self.lm_head.t(), out=self.logits)
        return self.logits

    def sdpa_inputs(self):
        """q, K, V of the first layer's attention call (for sdpa_info)."""
        m = self.spec
        q = torch.zeros(self.batch, m.hq, 1, m.head_dim, device=self.input.device,
                        dtype=torch.bfloat16)
        k, v = self.layers[0]["k_cache"], self.layers[0]["v_cache"]
        if not self.gqa:
            group = m.hq // m.hkv
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return q, k, v


# ---------------------------------------------------------------------------------------------
# Timing

def time_cuda(step, samples):
    """(seconds per step, one per sample; replays per sample; graph-vs-eager relative L2)."""
    graph = capture(lambda c: step(), 1, 3, torch.cuda.Stream())  # 3 eager warm-ups first
    time_graph(graph, 2)
    n = repeats_to_fill(SAMPLE_SECONDS, time_graph(graph, 3) / 3, 3)
    times = [time_graph(graph, n) / n for _ in range(samples)]
    # The graph computes what the eager step computes (the K/V write is idempotent).
    graph.replay()
    from_graph = step.logits.clone()
    step()
    torch.cuda.synchronize()
    check = relative_l2(from_graph, step.logits)
    graph.replay()
    torch.cuda.synchronize()
    return times, n, check


def time_cpu(step, samples):
    def calls(n):
        start = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - start

    calls(2)
    n = repeats_to_fill(SAMPLE_SECONDS, calls(1), 3)
    return [calls(n) / n for _ in range(samples)], n, None


def bench(spec, batch, context, device, samples, seed, gqa, read_bandwidth):
    step = Step(spec, batch, context, device, seed, gqa)
    info = sdpa_info(*step.sdpa_inputs(), gqa)
    ops = None
    if device.type == "cuda":
        times, n, check = time_cuda(step, samples)
        ops = device_ops(step)
        ops = len(ops) if isinstance(ops, list) else ops
    else:
        times, n, check = time_cpu(step, samples)
    logits = step.logits.float()
    finite = bool(torch.isfinite(logits).all())
    logits_rms = float(logits.pow(2).mean().sqrt())
    t = statistics.median(times)
    weights, kv = spec.weight_bytes(), spec.kv_bytes(batch, context)
    r = {
        **spec.describe(), "batch": batch, "context": context,
        "weight_bytes": weights, "kv_bytes": kv, "bytes_per_step": weights + kv,
        "replays_per_sample": n, "samples": samples, "sample_s": times,
        "seconds": t, "step_us": t * 1e6, "tokens_per_s": batch / t,
        "gbps": (weights + kv) / t / 1e9,
        "read_frac": (weights + kv) / t / read_bandwidth if read_bandwidth else None,
        "spread": spread(times), "range": (max(times) - min(times)) / t,
        "sdpa": info, "logits_finite": finite, "logits_rms": logits_rms,
        "graph_vs_eager_rel_l2": check, "device_ops_per_step": ops,
    }
    del step, logits
    return r


# ---------------------------------------------------------------------------------------------
# The same step as hone's: --from DIR (written by `hone step --export DIR`)

# The bound on relative L2 error between hone's step and this one, per output. Both round to
# bf16 after every op: a rounding leaves a relative error of at most U = 2^-8 (bf16 keeps 8
# significant bits, round to nearest), about U / 3 RMS over a vector of random significands.
# Between roundings both compute in fp32 or better, so the two outputs differ by their rounding
# errors alone; those of independent roundings add in quadrature, and a layer (linear maps,
# rmsnorm, a softmax over near-uniform scores) passes on the relative error of its input at
# most about unchanged. hone rounds 12 times per layer (rmsnorm, qkv, bias, rope, attention,
# o, residual add, rmsnorm, gate/up, silu x up, down, residual add) and 3 times after the last
# (residual add, rmsnorm, lm_head); this step about 18 per layer (F.rms_norm twice, rope's cos
# and sin, x cos, x sin and their sum, SDPA's probabilities and output, ...) and 4 after. Over
# n layers that is R = 30 n + 7 roundings, an expected error of about U / 3 x sqrt(R) and a
# bound of U x sqrt(R), 3 times that: 3.2e-2 for the logits of a 2-layer model, 5.1e-2 for 8
# layers. An appended K or V of layer l has passed l + 1 layers (counted as whole layers:
# looser than needed). For the int4 / int8 step the export holds the dequantised weights rounded
# to bf16 (one more rounding of every weight, about U / 3 relative, whose effect on a dot
# product is below that of an activation's rounding): inside the same bound. What the bound
# catches (docs/notes/decode_step.md, measured on 2-layer random models): a rope off by one
# position moves the appended K by ~0.2 (and the logits by ~2.5e-2, inside the bound, so the K
# is what catches it), rope at position 0 the logits by ~8e-2, swapped K and V caches ~0.25,
# swapped k and v projections ~0.1, a doubled attention scale ~0.07, a negated o projection
# ~0.35, a negated V cache ~0.2; a missing residual replaces an O(1) part of every output.
BF16_UNIT_ROUNDOFF = 2.0 ** -8
ROUNDINGS_PER_LAYER = 12 + 18  # hone + this step
ROUNDINGS_AFTER = 3 + 4


def compare_bound(layers):
    """Relative L2 bound between hone's output and this one after `layers` layers."""
    return BF16_UNIT_ROUNDOFF * math.sqrt(ROUNDINGS_PER_LAYER * layers + ROUNDINGS_AFTER)


SAFETENSORS_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32,
                      "I32": torch.int32, "I64": torch.int64}


def read_safetensors(path):
    """{name: CPU tensor} of a safetensors file (8-byte little-endian header length, the JSON
    header, the data); no dependency beyond torch."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if len(data) < 8:
        raise ValueError("%s: shorter than its 8-byte header length" % path)
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError("%s: tensor '%s' has dtype %s, not one of %s" % (
                path, name, entry["dtype"], ", ".join(SAFETENSORS_DTYPES)))
        begin, end = entry["data_offsets"]
        count = math.prod(entry["shape"])
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=8 + n + begin) if count else \
            torch.empty(0, dtype=dtype)
        if t.numel() * t.element_size() != end - begin:
            raise ValueError("%s: tensor '%s' holds %d bytes, its dtype and shape give %d" % (
                path, name, end - begin, t.numel() * t.element_size()))
        out[name] = t.reshape(entry["shape"])
    return out


def read_npy(path):
    """A little-endian float32 .npy (as hone writes it) as a C-order numpy array."""
    try:
        a = np.load(path, allow_pickle=False)
    except ValueError as e:  # not a .npy, truncated, or pickled objects
        raise ValueError("%s: %s" % (path, e)) from None
    if a.dtype != np.dtype("<f4"):
        raise ValueError("%s: dtype %s, expected little-endian float32" % (path, a.dtype.str))
    return np.asarray(a, order="C")  # ascontiguousarray would make a 0-d array 1-d


def load_export(directory, device):
    """(spec, info, tensors for Step, hone's outputs) of an export directory."""
    spec = load_spec(os.path.join(directory, "config.json"))
    with open(os.path.join(directory, "step.json")) as f:
        info = json.load(f)
    if info.get("format") != "hone.step_export" or info.get("format_version") != 1:
        raise ValueError("%s: not a hone.step_export version 1" % directory)
    batch, context = info["batch"], info["context"]
    weights = read_safetensors(os.path.join(directory, "model.safetensors"))
    state = read_safetensors(os.path.join(directory, "step.safetensors"))
    m = spec

    def tensor(source, name, shape):
        if name not in source:
            raise ValueError("%s: no tensor '%s'" % (directory, name))
        t = source[name]
        if list(t.shape) != list(shape):
            raise ValueError("%s: tensor '%s' has shape %s, the model's is %s" % (
                directory, name, list(t.shape), list(shape)))
        return t.to(device)

    def cache(name):  # [batch, context, hkv, D] -> [batch, hkv, context + 1, D]
        t = tensor(state, name, (batch, context, m.hkv, m.head_dim)).permute(0, 2, 1, 3)
        return torch.cat((t, torch.zeros_like(t[:, :, :1])), dim=2).contiguous()

    layers = []
    for i in range(m.layers):
        p = "model.layers.%d." % i
        w = lambda name, shape: tensor(weights, p + name, shape)  # noqa: E731
        layer = {
            "norm1": w("input_layernorm.weight", (m.hidden,)),
            "qkv": torch.cat((w("self_attn.q_proj.weight", (m.attn_width, m.hidden)),
                              w("self_attn.k_proj.weight", (m.kv_width, m.hidden)),
                              w("self_attn.v_proj.weight", (m.kv_width, m.hidden)))),
            "qkv_bias": torch.cat((w("self_attn.q_proj.bias", (m.attn_width,)),
                                   w("self_attn.k_proj.bias", (m.kv_width,)),
                                   w("self_attn.v_proj.bias", (m.kv_width,))))
            if m.qkv_bias else None,
            "o": w("self_attn.o_proj.weight", (m.hidden, m.attn_width)),
            "norm2": w("post_attention_layernorm.weight", (m.hidden,)),
            "gate_up": torch.cat((w("mlp.gate_proj.weight", (m.inter, m.hidden)),
                                  w("mlp.up_proj.weight", (m.inter, m.hidden)))),
            "down": w("mlp.down_proj.weight", (m.hidden, m.inter)),
            "k_cache": cache(p + "k_cache"),
            "v_cache": cache(p + "v_cache"),
        }
        layers.append(layer)
    head = "model.embed_tokens.weight" if m.tie_embeddings else "lm_head.weight"
    positions = tensor(state, "positions", (batch,)).tolist()
    if any(p != context for p in positions):
        raise ValueError("%s: positions %s; this step runs every request at position context "
                         "(%d)" % (directory, positions, context))
    tensors = {"layers": layers, "final_norm": tensor(weights, "model.norm.weight", (m.hidden,)),
               "lm_head": tensor(weights, head, (m.vocab, m.hidden)),
               "input": tensor(state, "input", (batch, m.hidden))}
    want = {}
    for name, shape in (("hidden", (batch, m.hidden)), ("logits", (batch, m.vocab)),
                        ("appended_k", (m.layers, batch, m.hkv, m.head_dim)),
                        ("appended_v", (m.layers, batch, m.hkv, m.head_dim))):
        t = torch.from_numpy(read_npy(os.path.join(directory, name + ".npy")))
        if list(t.shape) != list(shape):
            raise ValueError("%s: %s.npy has shape %s, expected %s" % (
                directory, name, list(t.shape), list(shape)))
        want[name] = t
    return spec, info, tensors, want


def output_error(got, want):
    """Relative L2, max |error| and where, of got against want (tensors of one shape)."""
    got, want = got.double().cpu().flatten(), want.double().cpu().flatten()
    diff = (got - want).abs()
    worst = int(torch.nan_to_num(diff, nan=math.inf).argmax())
    return {"rel_l2": relative_l2(got, want), "max_abs": float(diff[worst]), "worst": worst,
            "worst_got": float(got[worst]), "worst_want": float(want[worst]),
            "want_max_abs": float(want.abs().max())}


def compare_export(directory, device, gqa, json_path):
    """Runs the exported step once (eager) and compares it with hone's outputs; True when
    every output lies within compare_bound."""
    spec, info, tensors, want = load_export(directory, device)
    step = Step(spec, info["batch"], info["context"], device, 0, gqa, tensors)
    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    got = {"hidden": step.hidden, "logits": step.logits,
           "appended_k": torch.stack([l["k_cache"][:, :, step.context] for l in step.layers]),
           "appended_v": torch.stack([l["v_cache"][:, :, step.context] for l in step.layers])}
    report = {"format": "hone.peer.%s.compare" % STEM, "format_version": 1, "from": directory,
              "model": info.get("model"), "weights": info.get("weights"),
              "batch": info["batch"], "context": info["context"], "layers": spec.layers,
              "torch": torch.__version__, "device": str(device), "peer": PEER_CUDA
              if device.type == "cuda" else PEER_CPU, "sdpa_gqa": gqa,
              "bound": "relative L2 <= 2^-8 x sqrt(30 n + 7), n = layers passed (see the "
                       "comment on compare_bound)",
              "outputs": []}
    failed = False
    print("%s: %s, %s weights, batch %d, context %d, %d layers; %s vs hone step" % (
        STEM, info.get("model"), info.get("weights"), info["batch"], info["context"],
        spec.layers, report["peer"]))
    rows = [("hidden", got["hidden"], want["hidden"], spec.layers),
            ("logits", got["logits"], want["logits"], spec.layers)]
    for i in range(spec.layers):
        rows.append(("layer %d appended K" % i, got["appended_k"][i], want["appended_k"][i], i + 1))
        rows.append(("layer %d appended V" % i, got["appended_v"][i], want["appended_v"][i], i + 1))
    for name, g, w, layers in rows:
        e = output_error(g, w)
        bound = compare_bound(layers)
        e.update({"output": name, "bound_rel_l2": bound,
                  "pass": bool(e["rel_l2"] <= bound)})
        report["outputs"].append(e)
        failed |= not e["pass"]
        print("  %-20s relative L2 %.3e (bound %.3e)  max |error| %.3e at %d (torch %.5g, "
              "hone %.5g; max |hone| %.4g)%s" % (
                  name, e["rel_l2"], bound, e["max_abs"], e["worst"], e["worst_got"],
                  e["worst_want"], e["want_max_abs"], "" if e["pass"] else "  FAIL"), flush=True)
    report["pass"] = not failed
    path = json_path or os.path.join(directory, STEM + "_compare.json")
    write_json(path, report)
    print("wrote %s" % path)
    return not failed


# ---------------------------------------------------------------------------------------------
# Output

def header(device, peer, read_bandwidth, source, args):
    doc = torch_header(STEM, device)
    doc["peer"] = peer
    if device.type == "cuda":
        doc["device_memory_bytes"] = torch.cuda.get_device_properties(device).total_memory
    doc.update({
        "mode": MODE if device.type == "cuda" else "eager calls on the CPU (a smoke test)",
        "method": ("one torch.cuda.CUDAGraph of the whole step (3 eager warm-ups on the capture "
                   "stream first); a sample = N back-to-back replays between CUDA events, N so "
                   "that a sample lasts >= %g ms; step time = median over samples of sample / "
                   "N; spread = IQR / median, range = (max - min) / median" %
                   (SAMPLE_SECONDS * 1e3)) if device.type == "cuda" else
                  ("a sample = N eager steps timed with time.perf_counter, N so that a sample "
                   "lasts >= %g ms; median over samples" % (SAMPLE_SECONDS * 1e3)),
        "bytes": "every weight (linears, norms, bias, lm_head) + K and V of context + 1 tokens "
                 "per request, every layer",
        "read_bandwidth": read_bandwidth, "read_bandwidth_source": source,
        "samples": args.samples, "sample_seconds": SAMPLE_SECONDS, "seed": args.seed})
    return doc


def markdown(doc):
    bw = doc["read_bandwidth"]
    lines = ["# decode step: PyTorch peer, %s" % doc["device"], "",
             "%s. torch %s, %s. %s. Median of %d samples; spread = IQR / median. Bytes per step "
             "= %s. %s" % (
                 doc["peer"], doc["torch"], doc["date"], doc["mode"], doc["samples"],
                 doc["bytes"], "of read bw = GB/s / %.0f GB/s (%s)." % (
                     bw / 1e9, doc["read_bandwidth_source"]) if bw else
                 "No read bandwidth given: no fraction."), "",
             "| model | batch | context | step µs | tokens/s | GB read | GB/s | of read bw "
             "| spread | replays/sample | SDPA |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in doc["results"]:
        lines.append("| %s | %d | %d | %.1f | %.0f | %.3f | %.0f | %s | %.3f | %d | %s |" % (
            r["model"], r["batch"], r["context"], r["step_us"], r["tokens_per_s"],
            r["bytes_per_step"] / 1e9, r["gbps"],
            "%.3f" % r["read_frac"] if r["read_frac"] is not None else "-", r["spread"],
            r["replays_per_sample"], sdpa_note(r["sdpa"])))
    for s in doc["skipped"]:
        lines.append("| %s | %d | %d | skipped: %s | | | | | | | |" % (
            s["model"], s["batch"], s["context"], s["reason"]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------

def parse_tokens(text):
    """4096, 4k (x 1024), as hone step's --context."""
    m = re.fullmatch(r"([0-9]{1,9})([kK]?)", text.strip())
    if not m or int(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError("'%s' is not a positive token count (e.g. 4096, 4k)" %
                                         text)
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def token_list(text):
    return [parse_tokens(t) for t in text.split(",") if t.strip()]


def int_list(text):
    out = []
    for t in text.split(","):
        if not t.strip():
            continue
        if not t.strip().isdigit() or int(t) <= 0:
            raise argparse.ArgumentTypeError("'%s' is not a positive integer" % t)
        out.append(int(t))
    return out


def available_bytes(device):
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)  # (free, total)
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        kib = lambda key: int(info[key].split()[0]) * 1024  # noqa: E731
        return kib("MemAvailable"), kib("MemTotal")
    except (OSError, KeyError, ValueError):
        return None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", metavar="CONFIG.json",
                        help="Hugging Face config.json (Llama, Qwen2); repeatable")
    parser.add_argument("--from", dest="from_dir", metavar="DIR",
                        help="instead of timing: run the step `hone step --export DIR` wrote "
                             "(its weights, input and cache) once and compare the final hidden "
                             "state, the logits and every layer's appended K and V with hone's; "
                             "exits 1 beyond the bf16 bound (JSON report: --json, else "
                             "DIR/%s_compare.json)" % STEM)
    parser.add_argument("--batch", type=int_list, default=[1, 4, 16],
                        help="requests, one new token each: a list (default 1,4,16)")
    parser.add_argument("--context", type=token_list, default=[4096],
                        help="tokens cached per request: a list, e.g. 4096 or 1k,4k,32k "
                             "(default 4096)")
    parser.add_argument("--samples", type=int, default=9, help="samples per median (>= 3)")
    parser.add_argument("--json", metavar="OUT.json", help="write the results as JSON")
    parser.add_argument("--md", metavar="OUT.md", help="write the Markdown table")
    parser.add_argument("--read-bandwidth", type=float, metavar="GBPS",
                        help="device read bandwidth in GB/s (default on CUDA: measured with "
                             "torch.sum over 2 GiB)")
    parser.add_argument("--seed", type=int, default=1, help="weights, caches and inputs")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cuda (default), or cpu for a smoke test without CUDA graphs")
    args = parser.parse_args()
    if args.from_dir:
        if args.model:
            parser.error("--from takes the model from DIR/config.json; drop --model")
        if args.device == "cuda" and not torch.cuda.is_available():
            sys.exit("%s: no CUDA device (use --device cpu)" % STEM)
        device = torch.device(args.device)
        try:
            with torch.inference_mode():
                ok = compare_export(args.from_dir, device, gqa_supported(device), args.json)
        except (OSError, ValueError, KeyError) as e:
            sys.exit("%s: --from %s: %s" % (STEM, args.from_dir, e))
        sys.exit(0 if ok else "%s: hone's step and this one differ beyond the bf16 bound "
                 "(see above)" % STEM)
    if not args.model:
        parser.error("--model is required (or --from DIR)")
    if args.samples < 3:
        parser.error("--samples must be at least 3")
    if args.read_bandwidth is not None and not args.read_bandwidth > 0:
        parser.error("--read-bandwidth must be positive, got %s" % args.read_bandwidth)
    if not args.batch or not args.context:
        parser.error("--batch and --context need at least one value each")
    for path in (args.json, args.md):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        specs = [load_spec(p) for p in args.model]
    except ValueError as e:
        parser.error(str(e))
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("%s: no CUDA device (use --device cpu for a smoke test)" % STEM)
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    peer = PEER_CUDA if device.type == "cuda" else PEER_CPU

    if args.read_bandwidth:
        read_bandwidth, source = args.read_bandwidth * 1e9, "--read-bandwidth"
    elif device.type == "cuda":
        read_bandwidth, source = measure_read_bandwidth(), "measured: torch.sum over 2 GiB"
        gc.collect()
        torch.cuda.empty_cache()
    else:
        read_bandwidth, source = None, None
    if read_bandwidth:
        print("read bandwidth %.0f GB/s (%s)" % (read_bandwidth / 1e9, source), flush=True)
    gqa = gqa_supported(device)
    print("peer: %s; SDPA grouped-query heads: %s" % (
        peer, "enable_gqa=True" if gqa else "repeat_interleave (enable_gqa unsupported)"),
        flush=True)

    doc = header(device, peer, read_bandwidth, source, args)
    doc["sdpa_gqa"] = "enable_gqa" if gqa else "repeat_interleave"
    doc["results"], doc["skipped"] = [], []
    failed = False
    with torch.inference_mode():
        for spec in specs:
            for context in args.context:
                for batch in args.batch:
                    need = need_bytes(spec, batch, context, gqa)
                    free, total = available_bytes(device)
                    if free is not None and need > free:
                        reason = "needs %.2f GB, %.2f GB free of %.2f" % (
                            need / 1e9, free / 1e9, total / 1e9)
                        print("skip %s batch %d context %d: %s" % (
                            spec.name, batch, context, reason), flush=True)
                        doc["skipped"].append({"model": spec.name, "batch": batch,
                                               "context": context, "need_bytes": need,
                                               "free_bytes": free, "reason": reason})
                        continue
                    r = bench(spec, batch, context, device, args.samples, args.seed,
                              gqa, read_bandwidth)
                    doc["results"].append(r)
                    check = r["graph_vs_eager_rel_l2"]
                    bad = [] if r["logits_finite"] else ["NON-FINITE LOGITS"]
                    if check is not None and not check <= GRAPH_BOUND:
                        bad.append("GRAPH REPLAY DIFFERS FROM EAGER (relative L2 %.3g)" % check)
                    print("%-16s batch %-3d context %-6d %10.1f us  %9.0f tokens/s  %6.0f GB/s"
                          "  spread %.3f  sdpa %s%s" % (
                              spec.name, batch, context, r["step_us"], r["tokens_per_s"],
                              r["gbps"], r["spread"], sdpa_note(r["sdpa"]),
                              "".join("  " + b for b in bad)), flush=True)
                    failed |= bool(bad)
                    gc.collect()
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
    table = markdown(doc)
    if args.json:
        write_json(args.json, doc)
    if args.md:
        write_text(args.md, table)
    print()
    print(table, end="")
    if failed:
        sys.exit("%s: a check failed (non-finite logits or graph mismatch, see above)" % STEM)


if __name__ == "__main__":
    main()
