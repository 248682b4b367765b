#!/usr/bin/env python3
"""hone's decode.paged (through the Python package) against PyTorch's
scaled_dot_product_attention in one process, at the decode.paged acceptance configs.

Same q, K and V values on both sides. hone reads them from a paged cache [num_pages, 16, hkv,
head_dim] with shuffled page indices; SDPA reads them contiguous [batch, hkv, len, head_dim]
with enable_gqa=True, whichever backend torch picks (flash, cuDNN, efficient, math): a
CONTIGUOUS, NON-PAGED peer, which reads the same bytes without a page table. The ragged batch
(16 lengths from 100 to 32768) has no contiguous layout without varlen support: SDPA gets it
PADDED to the longest length with a boolean key mask, as a runtime without varlen pays, and
reads the padded bytes. Before anything is timed each side is checked against a float64
reference (relative L2 <= 8e-3); a mismatch stops the run.

Timing as the other peers (bench/peers/peer_timing.py): interleaved sample by sample
(alternating order), cold L2 on both sides (each cycles through R = ceil(8 x L2 / KV bytes) + 1
copies of its K and V), one sample is one CUDA-graph replay of B launches (B sized so that a
sample lasts >= 2 ms) timed with events, the per-launch time is the median of >= 7 samples.
hone runs whatever its dispatcher picks: with --tune, every config's bucket is tuned first
(hone.tune, recorded in $HONE_CACHE_DIR, which the run then serves); without, HONE_* as set
(the tuning cache, else the default heuristic).

    HONE_LIBRARY=build/lib/libhone.so PYTHONPATH=python HONE_CACHE_DIR=/tmp/hone-cache \\
        python3 bench/peers/decode_paged_torch.py --out results/ --tune
    # [--configs 1x4k,ragged16] [--samples 9] [--read-bandwidth 4455] (GB/s; default: measured)

Writes decode_paged_torch.json and decode_paged_torch.md to --out and prints the Markdown.
speedup = t_sdpa / t_hone (above 1: hone is faster); read fraction = KV bytes the side reads /
t / read bandwidth.
"""
import argparse
import os
import statistics
import sys

import numpy as np
import torch  # first: its CUDA libraries are then loaded for libhone.so too
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hone  # noqa: E402
from peer_timing import geomean, relative_l2, require_cuda, spread  # noqa: E402
from peer_timing import rotation_copies, time_interleaved, write_results  # noqa: E402
from peer_timing import doc_header, measure_read_bandwidth  # noqa: E402
from peer_timing import sdpa_backends_accepting  # noqa: E402

PAGE_SIZE = 16
ERROR_BOUND = 8e-3  # relative L2 of a bf16 output against its float64 reference
# The ragged acceptance batch (as bench/decode_paged_bench.cpp): 16 lengths, total 165347.
RAGGED16 = [100, 32768, 517, 20000, 3000, 9000, 1024, 27000, 640, 15000, 5000, 12000, 250, 30000,
            7000, 2048]
HONE_ENV = ("HONE_TACTIC_DECODE_PAGED", "HONE_DECODE_KV_CHUNK", "HONE_CACHE", "HONE_CACHE_DIR",
            "HONE_AUTOTUNE")


def acceptance_configs():
    """(name, hq, hkv, head_dim, lengths) of the acceptance configs: Hq 32, Hkv 8, D 128 at
    every size, and Hq 28 / Hkv 4 and D 64 on a subset."""
    sizes = [("1x1k", [1024]), ("1x4k", [4096]), ("1x32k", [32768]), ("1x128k", [131072]),
             ("8x4k", [4096] * 8), ("8x32k", [32768] * 8), ("32x4k", [4096] * 32),
             ("64x2k", [2048] * 64), ("ragged16", RAGGED16)]
    subset = ("1x4k", "1x32k", "8x4k", "ragged16")
    out = [(name, 32, 8, 128, lengths) for name, lengths in sizes]
    out += [(name + "-hq28-hkv4", 28, 4, 128, lengths) for name, lengths in sizes if name in subset]
    out += [(name + "-d64", 32, 8, 64, lengths) for name, lengths in sizes if name in subset]
    return out


class Problem:
    """One config's page table (shared by the copies) and `copies` input sets, each held twice:
    contiguous K, V [batch, hkv, max_len, head_dim] (zero past each length) and the same values
    in a paged cache [num_pages, 16, hkv, head_dim] (NaN in every slot no token owns)."""

    def __init__(self, hq, hkv, head_dim, lengths, copies, seed):
        dev = torch.device("cuda")
        self.hq, self.hkv, self.head_dim, self.lengths = hq, hkv, head_dim, list(lengths)
        self.batch, self.max_len = len(lengths), max(lengths)
        pages = [(n + PAGE_SIZE - 1) // PAGE_SIZE for n in lengths]
        indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
        self.num_pages = int(indptr[-1])
        rng = np.random.default_rng(seed)
        indices = rng.permutation(self.num_pages).astype(np.int32)
        last = np.array([n - (p - 1) * PAGE_SIZE for n, p in zip(lengths, pages)], np.int32)
        self.indptr_host, self.last_host = indptr, last
        self.indptr = torch.from_numpy(indptr).to(dev)
        self.indices = torch.from_numpy(indices).to(dev)
        self.last = torch.from_numpy(last).to(dev)
        self.scale = head_dim ** -0.5
        # Token t of request b: page indices[indptr[b] + t // 16], slot t % 16.
        self.token_page = [torch.from_numpy(indices[indptr[b]:indptr[b + 1]]).to(dev).long()
                           for b in range(self.batch)]
        self.copies = []
        g = torch.Generator(device=dev)
        for c in range(copies):
            g.manual_seed(seed * 1000 + c)
            shape = (self.batch, hkv, self.max_len, head_dim)
            q = (torch.rand(self.batch, hq, head_dim, device=dev, generator=g) * 2 - 1)
            k = (torch.rand(shape, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)
            v = (torch.rand(shape, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)
            for b, n in enumerate(lengths):  # padding never reaches a result: zero it
                k[b, :, n:] = 0
                v[b, :, n:] = 0
            k_cache = torch.full((self.num_pages, PAGE_SIZE, hkv, head_dim), float("nan"),
                                 device=dev, dtype=torch.bfloat16)
            v_cache = torch.full_like(k_cache, float("nan"))
            for b, n in enumerate(lengths):
                padded = pages[b] * PAGE_SIZE
                for src, dst in ((k, k_cache), (v, v_cache)):
                    rows = src[b, :, :n].transpose(0, 1)  # [n, hkv, head_dim]
                    view = dst.new_full((padded, hkv, head_dim), float("nan"))
                    view[:n] = rows
                    dst[self.token_page[b]] = view.view(pages[b], PAGE_SIZE, hkv, head_dim)
            self.copies.append((q.to(torch.bfloat16), k, v, k_cache, v_cache))
        self.mask = None
        if min(lengths) != self.max_len:
            t = torch.arange(self.max_len, device=dev)
            lens = torch.tensor(lengths, device=dev)
            self.mask = (t[None, :] < lens[:, None])[:, None, None, :]  # [batch, 1, 1, max_len]

    def kv_bytes(self):
        """[bytes] of K and V of every token, once: what hone reads."""
        return 2 * 2 * sum(self.lengths) * self.hkv * self.head_dim

    def sdpa_bytes(self):
        """[bytes] SDPA reads: the same when contiguous, batch x max_len when padded."""
        return 2 * 2 * self.batch * self.max_len * self.hkv * self.head_dim

    def reference(self, c=0):
        """float64 o [batch, hq, head_dim] of copy c."""
        q, k, v = self.copies[c][:3]
        group = self.hq // self.hkv
        out = torch.empty(self.batch, self.hq, self.head_dim, device=q.device, dtype=torch.float64)
        for b, n in enumerate(self.lengths):
            qb = q[b].double().view(self.hkv, group, self.head_dim)
            kb, vb = k[b, :, :n].double(), v[b, :, :n].double()
            s = torch.einsum("hgd,htd->hgt", qb, kb) * self.scale
            out[b] = torch.einsum("hgt,htd->hgd", torch.softmax(s, dim=-1), vb).reshape(
                self.hq, self.head_dim)
        return out


def bench_config(name, hq, hkv, head_dim, lengths, samples, l2_bytes, seed, tuned):
    kv_bytes = 2 * 2 * sum(lengths) * hkv * head_dim
    copies = rotation_copies(l2_bytes, kv_bytes)
    p = Problem(hq, hkv, head_dim, lengths, copies, seed)
    dev = torch.device("cuda")
    o_hone = torch.empty(p.batch, hq, head_dim, device=dev, dtype=torch.bfloat16)

    def run_hone(c):
        q, _, _, k_cache, v_cache = p.copies[c]
        hone.ops.decode_paged_bf16(q, k_cache, v_cache, p.indptr, p.indices, p.last,
                                   scale=p.scale, out=o_hone, kv_indptr_host=p.indptr_host,
                                   kv_last_page_len_host=p.last_host)

    def run_sdpa(c):  # the output stays torch's own allocation: no extra copy kernel timed
        q, k, v = p.copies[c][:3]
        return F.scaled_dot_product_attention(q[:, :, None], k, v, attn_mask=p.mask,
                                              scale=p.scale, enable_gqa=True)

    run_hone(0)
    o_sdpa = run_sdpa(0)
    torch.cuda.synchronize()
    ref = p.reference(0)
    errors = {"hone_vs_reference": relative_l2(o_hone, ref),
              "sdpa_vs_reference": relative_l2(o_sdpa[:, :, 0], ref)}
    bad = {k: e for k, e in errors.items() if not e <= ERROR_BOUND}
    if bad:
        raise RuntimeError("%s: relative L2 errors over %.0e: %s" % (
            name, ERROR_BOUND, ", ".join("%s %.3g" % kv for kv in sorted(bad.items()))))
    backends = sdpa_backends_accepting(lambda: run_sdpa(0))
    batch, times = time_interleaved({"hone": run_hone, "sdpa": run_sdpa}, copies, samples)
    t_hone, t_sdpa = statistics.median(times["hone"]), statistics.median(times["sdpa"])
    return {"config": name, "hq": hq, "hkv": hkv, "head_dim": head_dim, "page_size": PAGE_SIZE,
            "batch": p.batch, "lengths": lengths, "total_len": sum(lengths),
            "peer": "sdpa.padded" if p.mask is not None else "sdpa.contiguous",
            "sdpa_backends_accepting": backends, "hone_tactic": tuned.get(name),
            "kv_bytes": p.kv_bytes(), "sdpa_bytes": p.sdpa_bytes(), "rotation_copies": copies,
            "batch_per_sample": batch, "samples": samples, "hone_s": t_hone, "sdpa_s": t_sdpa,
            "hone_spread": spread(times["hone"]), "sdpa_spread": spread(times["sdpa"]),
            "speedup": t_sdpa / t_hone, "errors": errors}


def markdown(doc):
    bw = doc["read_bandwidth"]
    lines = ["# decode.paged: hone vs PyTorch SDPA, %s" % doc["device"], "",
             "Cold L2 (rotation), CUDA-graph samples, interleaved, median of %d. speedup = "
             "t_sdpa / t_hone (above 1: hone faster). hone: %s. read frac = KV bytes read / t / "
             "%.0f GB/s (%s). sdpa.contiguous: a contiguous, non-paged peer reading the same "
             "bytes; sdpa.padded: the ragged batch padded to its longest length (a runtime "
             "without varlen)." % (doc["samples"], doc["hone_mode"], bw / 1e9,
                                   doc["read_bandwidth_source"]), "",
             "| config | peer | KV MB | hone µs | sdpa µs | speedup | hone read frac "
             "| sdpa read frac | hone tactic |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in doc["results"]:
        lines.append("| %s | %s | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |" % (
            r["config"], r["peer"], r["kv_bytes"] / 1e6, r["hone_s"] * 1e6, r["sdpa_s"] * 1e6,
            r["speedup"], r["kv_bytes"] / r["hone_s"] / bw, r["sdpa_bytes"] / r["sdpa_s"] / bw,
            r["hone_tactic"] or "-"))
    speedups = [r["speedup"] for r in doc["results"]]
    if speedups:
        lines += ["", "geometric mean speedup: %.2f over %d configs; lowest %.2f" %
                  (geomean(speedups), len(speedups), min(speedups))]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the JSON and Markdown")
    names = [c[0] for c in acceptance_configs()]
    parser.add_argument("--configs", help="comma-separated subset of: %s" % ",".join(names))
    parser.add_argument("--samples", type=int, default=7, help="samples per median (>= 7)")
    parser.add_argument("--tune", action="store_true",
                        help="tune every config's bucket first (hone.tune) and time hone's pick")
    parser.add_argument("--read-bandwidth", type=float,
                        help="device read bandwidth in GB/s (default: measured with torch.sum)")
    parser.add_argument("--seed", type=int, default=20261212)
    args = parser.parse_args()
    if args.samples < 7:
        parser.error("--samples must be at least 7")
    configs = acceptance_configs()
    if args.configs:
        wanted = args.configs.split(",")
        unknown = [w for w in wanted if w not in names]
        if unknown:
            parser.error("--configs: unknown %s (known: %s)" % (",".join(unknown), ",".join(names)))
        configs = [c for c in configs if c[0] in wanted]
    require_cuda("decode_paged_torch", hone)
    if os.environ.get("HONE_CHECK_PAGES"):
        parser.error("HONE_CHECK_PAGES synchronises every call; unset it for timing")
    props = torch.cuda.get_device_properties(0)
    if args.read_bandwidth:
        read_bandwidth, source = args.read_bandwidth * 1e9, "--read-bandwidth"
    else:
        read_bandwidth, source = measure_read_bandwidth(), "measured: torch.sum over 2 GiB"
    print("read bandwidth %.0f GB/s (%s)" % (read_bandwidth / 1e9, source), flush=True)

    tuned = {}
    if args.tune:  # before the first decode call: the dispatcher loads the cache then
        for name, hq, hkv, head_dim, lengths in configs:
            shape = {"batch": len(lengths), "max_len": max(lengths), "total_len": sum(lengths),
                     "hq": hq, "hkv": hkv, "head_dim": head_dim, "page_size": PAGE_SIZE}
            tuned[name] = hone.tune("decode.paged", shape)
            print("tuned %-18s %s" % (name, tuned[name]), flush=True)

    results = []
    for i, (name, hq, hkv, head_dim, lengths) in enumerate(configs):
        r = bench_config(name, hq, hkv, head_dim, lengths, args.samples, props.L2_cache_size,
                         args.seed + i, tuned)
        results.append(r)
        print("%-18s %-15s hone %9.2f us  sdpa %9.2f us  speedup %.2f" % (
            name, r["peer"], r["hone_s"] * 1e6, r["sdpa_s"] * 1e6, r["speedup"]), flush=True)
        torch.cuda.empty_cache()

    doc = {
        **doc_header("decode_paged_torch", hone, HONE_ENV),
        "hone_mode": "tuned pick per bucket (hone.tune)" if args.tune
                     else "the dispatcher's answer (cache or default heuristic)",
        "read_bandwidth": read_bandwidth, "read_bandwidth_source": source,
        "method": "cuda-graph replay of B launches per sample, events; interleaved hone/sdpa "
                  "alternating order; cold L2 by rotation of ceil(2*L2/KV bytes)+1 copies; "
                  "outputs checked against float64 references before timing",
        "error_bound": ERROR_BOUND, "samples": args.samples, "results": results,
    }
    table = markdown(doc)
    write_results(args.out, "decode_paged_torch", doc, table)
    print(table)


if __name__ == "__main__":
    main()
