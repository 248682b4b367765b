#!/usr/bin/env python3
"""hone's gemv.bf16 (through the Python package) against torch.matmul (cuBLAS) in one process.

Same weights, same format (bf16), interleaved sample by sample, cold L2 on both sides: each
side cycles through R = ceil(8 x L2 / bytes per launch) + 1 copies of W and X. One sample is
one CUDA-graph replay of B launches (B sized so a sample lasts >= 2 ms), timed with events;
the per-launch time is the median of >= 7 samples. Outputs are compared (relative L2 <= 8e-3)
before anything is timed.

    HONE_LIBRARY=build-cuda/lib/libhone.so PYTHONPATH=python \\
        python3 bench/peers/gemv_bf16_torch.py --out results/   # [--full] [--samples 9]

Writes gemv_bf16_torch.json and gemv_bf16_torch.md to --out. ratio = t_hone / t_torch
(below 1: hone is faster).
"""
import argparse
import os
import statistics
import sys

import torch  # first: its CUDA libraries are then loaded for libhone.so too

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hone  # noqa: E402
from peer_timing import geomean, relative_l2, require_cuda, spread  # noqa: E402
from peer_timing import rotation_copies, time_interleaved, write_results  # noqa: E402
from peer_timing import doc_header  # noqa: E402

MATRICES = [(4096, 4096), (14336, 4096), (4096, 14336), (2048, 2048)]
ROWS = [1, 4, 8, 16]
FULL_ROWS = list(range(1, 9)) + [16, 32]
FULL_MATRICES = MATRICES + [(1024, 1024), (8192, 8192), (28672, 4096), (4096, 28672)]


def bench_shape(rows, n, k, samples, l2_bytes):
    dev = torch.device("cuda")
    bytes_per_launch = (n * k + rows * k + rows * n) * 2
    copies = rotation_copies(l2_bytes, bytes_per_launch)
    ws = [torch.randn(n, k, device=dev).to(torch.bfloat16) for _ in range(copies)]
    xs = [torch.randn(rows, k, device=dev).to(torch.bfloat16) for _ in range(copies)]
    y_hone = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)
    y_torch = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)

    def run_hone(c):
        hone.ops.gemv_bf16(xs[c], ws[c], out=y_hone)  # torch's current stream

    def run_torch(c):
        torch.matmul(xs[c], ws[c].t(), out=y_torch)

    run_hone(0)
    run_torch(0)
    torch.cuda.synchronize()
    error = relative_l2(y_hone, y_torch)
    if not error <= 8e-3:
        raise RuntimeError("rows=%d n=%d k=%d: hone vs torch relative L2 error %.3g > 8e-3" %
                           (rows, n, k, error))

    batch, times = time_interleaved({"hone": run_hone, "torch": run_torch}, copies, samples)
    t_hone, t_torch = statistics.median(times["hone"]), statistics.median(times["torch"])
    return {
        "rows": rows, "n": n, "k": k, "bytes_per_launch": bytes_per_launch,
        "rotation_copies": copies, "batch": batch, "samples": samples,
        "hone_s": t_hone, "torch_s": t_torch, "ratio": t_hone / t_torch,
        "hone_gbps": bytes_per_launch / t_hone / 1e9, "torch_gbps": bytes_per_launch / t_torch / 1e9,
        "hone_spread": spread(times["hone"]), "torch_spread": spread(times["torch"]),
        "relative_l2": error,
    }


def markdown(doc):
    lines = ["# gemv.bf16: hone vs torch.matmul (cuBLAS), %s" % doc["device"], "",
             "Cold L2 (rotation), CUDA-graph samples, median of %d; ratio = t_hone / t_torch "
             "(below 1: hone faster)." % doc["samples"], "",
             "| rows | n | k | hone µs | torch µs | ratio | hone GB/s | torch GB/s "
             "| hone read frac |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in doc["results"]:
        frac = "%.2f" % r["hone_read_frac"] if "hone_read_frac" in r else "-"
        lines.append("| %d | %d | %d | %.2f | %.2f | %.3f | %.0f | %.0f | %s |" %
                     (r["rows"], r["n"], r["k"], r["hone_s"] * 1e6, r["torch_s"] * 1e6,
                      r["ratio"], r["hone_gbps"], r["torch_gbps"], frac))
    ratios = [r["ratio"] for r in doc["results"]]
    lines += ["", "geometric mean ratio: %.3f over %d shapes" % (geomean(ratios), len(ratios))]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the JSON and Markdown")
    parser.add_argument("--full", action="store_true", help="more matrices and rows 1-8,16,32")
    parser.add_argument("--samples", type=int, default=7, help="samples per median (>= 7)")
    parser.add_argument("--read-bandwidth", type=float,
                        help="device read bandwidth in GB/s: adds each side's fraction of it")
    args = parser.parse_args()
    if args.read_bandwidth is not None and not args.read_bandwidth > 0:
        parser.error("--read-bandwidth must be positive, got %s" % args.read_bandwidth)
    if args.samples < 7:
        parser.error("--samples must be at least 7")
    require_cuda("gemv_bf16_torch", hone)
    props = torch.cuda.get_device_properties(0)
    l2_bytes = props.L2_cache_size
    matrices = FULL_MATRICES if args.full else MATRICES
    rows_list = FULL_ROWS if args.full else ROWS
    results = []
    for n, k in matrices:
        for rows in rows_list:
            r = bench_shape(rows, n, k, args.samples, l2_bytes)
            if args.read_bandwidth:
                r["hone_read_frac"] = r["hone_gbps"] / args.read_bandwidth
                r["torch_read_frac"] = r["torch_gbps"] / args.read_bandwidth
            results.append(r)
            print("rows=%-2d n=%-5d k=%-5d hone %8.2f us  torch %8.2f us  ratio %.3f" %
                  (rows, n, k, r["hone_s"] * 1e6, r["torch_s"] * 1e6, r["ratio"]), flush=True)
    doc = {
        **doc_header("gemv_bf16_torch", hone),
        "method": "cuda-graph replay of B launches per sample, events; interleaved hone/torch "
                  "alternating order; cold L2 by rotation of ceil(2*L2/bytes)+1 copies",
        "samples": args.samples, "read_bandwidth_gbps": args.read_bandwidth,
        "results": results,
    }
    table = markdown(doc)
    write_results(args.out, "gemv_bf16_torch", doc, table)
    print(table)


if __name__ == "__main__":
    main()
