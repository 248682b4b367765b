#!/usr/bin/env python3
"""hone's qmm.affine (or quantized_linear, through the Python package) against PyTorch's int4
kernel, torch._weight_int4pack_mm, at prefill row counts, in one process.

The same quantized weights on both sides, built by bench/peers/qmv_affine_torch.py's Weights
(imported, not copied): hone's q as uint32 words along K with bf16 scales and biases
[n, k / group] (w = q * scale + bias), torch's the same q re-packed by
torch._convert_weight_to_int4pack with zero = bias + 8 * scale (w = (q - 8) * scale + zero).
Before anything is timed, both outputs are checked against float64 references on their own
dequantised weights and against each other (relative L2 <= 8e-3); a mismatch stops the run.
Only int4 (torch has no grouped int8 kernel).

Timing as qmv_affine_torch.py (peer_timing.py): interleaved sample by sample, cold L2 on both
sides (R = ceil(8 x L2 / bytes per launch) + 1 copies of the weights and X), one sample a
CUDA-graph replay of B launches (>= 2 ms), median of >= 7 samples. hone runs whatever its
dispatcher picks (HONE_TACTIC_*, HONE_QMM_TILE_*, HONE_QMV_MAX_ROWS, the tuning cache, else the
default). TFLOP/s = 2 m n k / t.

    HONE_LIBRARY=build/lib/libhone.so PYTHONPATH=python \\
        python3 bench/peers/qmm_affine_torch.py --out results/
    # [--matrices 6144x4096,4096x4096,28672x4096,4096x14336] [--rows 512,2048,8192]
    # [--groups 64,128] [--op qmm|quantized_linear] [--samples 9]

Writes qmm_affine_torch.json and qmm_affine_torch.md to --out and prints the Markdown.
speedup = t_torch / t_hone (above 1: hone is faster).
"""
import argparse
import math
import os
import statistics
import sys

import torch  # first: its CUDA libraries are then loaded for libhone.so too

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hone  # noqa: E402
from peer_timing import relative_l2, require_cuda, spread  # noqa: E402
from peer_timing import rotation_copies, time_interleaved, write_results  # noqa: E402
from peer_timing import doc_header  # noqa: E402
from qmv_affine_torch import INT4_PEER, Weights, inner_k_tiles_for  # noqa: E402

MATRICES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]
ROWS = [512, 2048, 8192]
GROUPS = [64, 128]
ERROR_BOUND = 8e-3  # relative L2 of a bf16 output against its float64 reference
HONE_ENV = ("HONE_TACTIC_QMM_AFFINE", "HONE_TACTIC_QUANTIZED_LINEAR", "HONE_QMM_TILE_M",
            "HONE_QMM_TILE_N", "HONE_QMM_TILE_K", "HONE_QMV_MAX_ROWS", "HONE_CACHE",
            "HONE_CACHE_DIR", "HONE_AUTOTUNE")
OPS = {"qmm": "qmm_affine_bf16", "quantized_linear": "quantized_linear_bf16"}


def check_outputs(wts, x0, y_hone, y_torch, rows):
    """Relative L2 errors of copy 0; raises RuntimeError naming the cell when one is over
    ERROR_BOUND. The float64 references run on the GPU (rows x n x k multiply-adds)."""
    ref_hone = x0.double() @ wts.w_hone.t()
    ref_torch = x0.double() @ wts.w_torch.t()
    errors = {"hone_vs_reference": relative_l2(y_hone, ref_hone),
              "torch_vs_own_reference": relative_l2(y_torch, ref_torch),
              "torch_vs_hone_reference": relative_l2(y_torch, ref_hone),
              "hone_vs_torch": relative_l2(y_hone, y_torch)}
    bad = {name: e for name, e in errors.items() if not e <= ERROR_BOUND}
    if bad:
        raise RuntimeError("rows=%d n=%d k=%d group=%d: relative L2 errors over %.0e: %s" % (
            rows, wts.n, wts.k, wts.group, ERROR_BOUND,
            ", ".join("%s %.3g" % kv for kv in sorted(bad.items()))))
    return errors


def bench_cell(wts, rows, samples, copies, op):
    dev = torch.device("cuda")
    n, k, group = wts.n, wts.k, wts.group
    xs = [torch.randn(rows, k, device=dev).to(torch.bfloat16) for _ in range(copies)]
    y_hone = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)
    run = getattr(hone.ops, OPS[op])

    def run_hone(c):
        q, s, b = wts.hone[c]
        run(xs[c], q, s, b, 4, group, out=y_hone)  # current stream

    def run_torch(c):
        packed, sz = wts.torch[c]
        return torch._weight_int4pack_mm(xs[c], packed, group, sz)

    run_hone(0)
    y_torch = run_torch(0)
    torch.cuda.synchronize()
    errors = check_outputs(wts, xs[0], y_hone, y_torch, rows)
    batch, times = time_interleaved({"hone": run_hone, "torch": run_torch}, copies, samples)
    t_hone, t_torch = statistics.median(times["hone"]), statistics.median(times["torch"])
    flops = 2.0 * rows * n * k
    return {"op": op, "rows": rows, "n": n, "k": k, "bits": 4, "group": group,
            "rotation_copies": copies, "batch": batch, "samples": samples,
            "hone_s": t_hone, "hone_spread": spread(times["hone"]),
            "torch_s": t_torch, "torch_spread": spread(times["torch"]),
            "hone_tflops": flops / t_hone / 1e12, "torch_tflops": flops / t_torch / 1e12,
            "speedup": t_torch / t_hone, "errors": errors}


def markdown(doc):
    lines = ["# %s: hone vs %s, %s" % (doc["op"], INT4_PEER, doc["device"]), "",
             "int4, same weights; cold L2 (rotation), CUDA-graph samples, interleaved, median of "
             "%d. speedup = t_torch / t_hone (above 1: hone faster)." % doc["samples"], "",
             "| group | rows | n | k | hone µs | torch µs | hone TFLOP/s | torch TFLOP/s | "
             "speedup |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in doc["results"]:
        lines.append("| %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.2f |" % (
            r["group"], r["rows"], r["n"], r["k"], r["hone_s"] * 1e6, r["torch_s"] * 1e6,
            r["hone_tflops"], r["torch_tflops"], r["speedup"]))
    speedups = [r["speedup"] for r in doc["results"]]
    if speedups:
        lines += ["", "geometric mean speedup: %.2f, min %.2f over %d cells" % (
            math.exp(sum(map(math.log, speedups)) / len(speedups)), min(speedups),
            len(speedups))]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the JSON and Markdown")
    parser.add_argument("--op", choices=sorted(OPS), default="qmm",
                        help="hone entry point: qmm (qmm.affine) or quantized_linear")
    parser.add_argument("--matrices", help="N x K list (default: %s)" %
                        ",".join("%dx%d" % m for m in MATRICES))
    parser.add_argument("--rows", help="row counts (default: %s)" % ",".join(map(str, ROWS)))
    parser.add_argument("--groups", help="groups (default: %s)" % ",".join(map(str, GROUPS)))
    parser.add_argument("--samples", type=int, default=7, help="samples per median (>= 7)")
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    if args.samples < 7:
        parser.error("--samples must be at least 7")
    try:
        matrices = ([tuple(int(v) for v in m.split("x")) for m in args.matrices.split(",")]
                    if args.matrices else MATRICES)
        rows_list = [int(r) for r in args.rows.split(",")] if args.rows else ROWS
        groups = [int(g) for g in args.groups.split(",")] if args.groups else GROUPS
    except ValueError:
        parser.error("--matrices, --rows, --groups: comma-separated integers (NxK for matrices)")
    for rows in rows_list:
        if not 1 <= rows <= 16384:
            parser.error("--rows: %d outside 1..16384" % rows)
    for n, k in matrices:
        for group in groups:
            if group not in (32, 64, 128) or k % group or n % 8:
                parser.error("--matrices %dx%d, group %d: need n %% 8 == 0, k %% group == 0, "
                             "group in 32/64/128" % (n, k, group))
    require_cuda("qmm_affine_torch", hone)
    props = torch.cuda.get_device_properties(0)
    l2_bytes = props.L2_cache_size

    results = []
    for group in groups:
        for n, k in matrices:
            tiles, why = inner_k_tiles_for(n, k)
            if not tiles:
                raise SystemExit("qmm_affine_torch: %dx%d: %s" % (n, k, why))
            # One rotation count per matrix, for its largest row count.
            launch_bytes = n * k // 2 + 4 * n * (k // group) + 2 * max(rows_list) * (n + k)
            copies = rotation_copies(l2_bytes, launch_bytes)
            wts = Weights(n, k, 4, group, copies, INT4_PEER, tiles, args.seed)
            for rows in rows_list:
                r = bench_cell(wts, rows, args.samples, copies, args.op)
                results.append(r)
                print("group=%-3d rows=%-5d n=%-5d k=%-5d hone %9.1f us %6.1f TFLOP/s  torch "
                      "%9.1f us  speedup %.2f" % (group, rows, n, k, r["hone_s"] * 1e6,
                                                  r["hone_tflops"], r["torch_s"] * 1e6,
                                                  r["speedup"]), flush=True)
            del wts
            torch.cuda.empty_cache()

    doc = {
        **doc_header("qmm_affine_torch", hone, HONE_ENV),
        "op": args.op,
        "peer": INT4_PEER + " (same representation: int4, grouped scale and zero)",
        "method": "cuda-graph replay of B launches per sample, events; interleaved hone/torch "
                  "alternating order; cold L2 by rotation of ceil(2*L2/bytes)+1 copies; outputs "
                  "checked against float64 references before timing",
        "error_bound": ERROR_BOUND, "samples": args.samples, "results": results,
    }
    table = markdown(doc)
    write_results(args.out, "qmm_affine_torch", doc, table)
    print(table)


if __name__ == "__main__":
    main()
