#!/usr/bin/env python3
"""hone's qmv.affine (through the Python package) against PyTorch's weight-only int4 kernel,
torch._weight_int4pack_mm, in one process.

Same quantized weights on both sides. hone holds q as uint32 words along K (32 / bits values a
word, lowest bits first), bf16 scales and biases [n, k / group]: w = q * scale + bias. torch
holds the same q re-packed by torch._convert_weight_to_int4pack and the same scales with
zero = bias + 8 * scale in its scale_and_zeros [k / group, n, 2]: w = (q - 8) * scale + zero.
q, scales and biases are drawn at random on the GPU (scales in [0.002, 0.02), biases near
-scale * q_max / 2, as real weights quantize). Before anything is timed, each side's output is
checked against a float64 reference on its own dequantised weights, torch's also against
hone's reference, and hone's against torch's (relative L2 <= 8e-3 each); a mismatch stops the
run.

bits 8: torch has no grouped int8 kernel. Those cells compare against
torch._weight_int8pack_mm, per-channel symmetric int8 without a bias (the same dequantised
weights re-quantized per row; n * k + 2 n bytes): a different representation, reported in its
own table and never as a speedup. Where that kernel is missing, the cells have no peer.

Timing as bench/peers/gemv_bf16_torch.py (both through peer_timing.py): interleaved sample by
sample (alternating order), cold L2 on both sides (each side cycles through R = ceil(8 x L2 /
bytes per launch) + 1 copies of its weights and X), one sample is one CUDA-graph replay of B
launches (B sized so a sample lasts >= 2 ms) timed with events, the per-launch time is the
median of >= 7 samples. hone runs whatever its dispatcher picks (HONE_TACTIC_QMV_AFFINE, the
tuning cache, else the default).

    HONE_LIBRARY=build/lib/libhone.so PYTHONPATH=python \\
        python3 bench/peers/qmv_affine_torch.py --out results/
    # [--matrices 4096x4096,14336x4096] [--rows 1,8] [--formats 4:64,8:64] [--samples 9]
    # [--read-bandwidth 4455]   (GB/s; default: measured here with torch.sum)

Writes qmv_affine_torch.json and qmv_affine_torch.md to --out and prints the Markdown.
ratio = t_hone / t_torch (below 1: hone is faster); read fraction = weight bytes (q + scales
+ biases) / t / read bandwidth.
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
from peer_timing import doc_header, measure_read_bandwidth  # noqa: E402

MATRICES = [(4096, 4096), (14336, 4096), (4096, 14336), (8960, 1536), (1536, 8960)]
ROWS = [1, 2, 4, 8, 12, 16, 24, 32]
FORMATS = [(4, 64), (4, 128), (8, 64)]
ERROR_BOUND = 8e-3  # relative L2 of a bf16 output against its float64 reference
INT4_PEER = "torch._weight_int4pack_mm"
INT8_PEER = "torch._weight_int8pack_mm"
HONE_ENV = ("HONE_TACTIC_QMV_AFFINE", "HONE_CACHE", "HONE_CACHE_DIR", "HONE_AUTOTUNE")


def pack_hone(q, bits):
    """q uint8 [n, k] -> hone's words int32 [n, k * bits / 32]: 32 / bits values a word along
    K, value j of a word in bits [j * bits, (j + 1) * bits)."""
    n, k = q.shape
    per_word = 32 // bits
    shifts = torch.arange(per_word, device=q.device, dtype=torch.int64) * bits
    words = (q.view(n, k // per_word, per_word).to(torch.int64) << shifts).sum(-1)
    return torch.where(words >= 2 ** 31, words - 2 ** 32, words).to(torch.int32)


def pack_torch_int4(q, inner_k_tiles):
    """q uint8 [n, k] in [0, 16) -> torch's int4 pack. On CUDA, _convert_weight_to_int4pack
    takes uint8 [n, k / 2] with value k = 2i in the high nibble and k = 2i + 1 in the low one
    (as torch's own tests pack it); checked against the reference before timing."""
    return torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).contiguous(),
                                             inner_k_tiles)


def inner_k_tiles_for(n, k):
    """torch's int4 layout tile (8, 4 or 2); None with a reason where torch cannot pack."""
    if n % 8 != 0:
        return None, "torch int4 needs n % 8 == 0"
    for tiles in (8, 4, 2):
        if k % (tiles * 16) == 0:
            return tiles, ""
    return None, "torch int4 needs k % 32 == 0"


def int8_peer_available():
    """(True, "") when torch._weight_int8pack_mm runs on CUDA here, else (False, why)."""
    try:
        x = torch.ones(1, 64, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(8, 64, device="cuda", dtype=torch.int8)
        s = torch.ones(8, device="cuda", dtype=torch.bfloat16)
        y = torch._weight_int8pack_mm(x, w, s)
        torch.cuda.synchronize()
        if y.shape != (1, 8) or not bool((y.float() == 64).all()):
            return False, "%s gave a wrong result on a constant problem" % INT8_PEER
        return True, ""
    except (RuntimeError, NotImplementedError, AttributeError) as e:
        return False, "%s is not usable on CUDA here: %s" % (INT8_PEER, str(e).splitlines()[0])


class Weights:
    """`copies` independent quantized weight sets of one (n, k, bits, group), held in both
    layouts, and the float64 dequantised weights of copy 0 for the checks."""

    def __init__(self, n, k, bits, group, copies, peer, inner_k_tiles, seed, device="cuda"):
        self.n, self.k, self.bits, self.group, self.peer = n, k, bits, group, peer
        dev = torch.device(device)
        q_max = 2 ** bits - 1
        self.hone, self.torch = [], []  # per copy: (q, scales, biases) / peer operands
        for c in range(copies):
            g = torch.Generator(device=dev)
            g.manual_seed(seed * 1000 + c)
            q = torch.randint(0, q_max + 1, (n, k), device=dev, dtype=torch.uint8, generator=g)
            scale = torch.rand(n, k // group, device=dev, generator=g) * 0.018 + 0.002
            spread_ = torch.rand(n, k // group, device=dev, generator=g) * 0.4 + 0.8
            scales = scale.to(torch.bfloat16)
            biases = (-scale * (q_max / 2) * spread_).to(torch.bfloat16)
            self.hone.append((pack_hone(q, bits), scales, biases))
            w = None
            if c == 0:
                # Exact in float64: q, and bf16 scale and bias.
                s64 = scales.double().repeat_interleave(group, dim=1)
                b64 = biases.double().repeat_interleave(group, dim=1)
                w = q.double() * s64 + b64
                self.w_hone = w
            if peer == INT4_PEER:
                # NOTE: zero is computed in float32 and rounded to bf16 once more, so torch's
                # weights differ from hone's by that rounding (|zero| is about one scale here,
                # so at most ~2^-9 of a scale); torch's own reference below uses the rounded zero.
                zeros = (biases.float() + 8 * scales.float()).to(torch.bfloat16)
                sz = torch.stack([scales, zeros], dim=2).transpose(0, 1).contiguous()
                self.torch.append((pack_torch_int4(q, inner_k_tiles), sz))
                if c == 0:
                    z64 = zeros.double().repeat_interleave(group, dim=1)
                    self.w_torch = (q.double() - 8) * s64 + z64
                    self.q0 = q  # kept for the nibble-order diagnosis
                    del z64
            elif peer == INT8_PEER:
                # Per-channel symmetric int8 of the same dequantised weights (a different
                # representation: one scale per row, no bias).
                wf = (q.float() * scales.float().repeat_interleave(group, dim=1) +
                      biases.float().repeat_interleave(group, dim=1))
                row_scale = (wf.abs().amax(dim=1) / 127).clamp_min(1e-8).to(torch.bfloat16)
                q8 = torch.round(wf / row_scale.float()[:, None]).clamp(-127, 127).to(torch.int8)
                self.torch.append((q8, row_scale))
                if c == 0:
                    self.w_torch = q8.double() * row_scale.double()[:, None]
            if c == 0:
                del s64, b64
            del q, w

    def hone_bytes(self):
        """[bytes] q + scales + biases, what one launch must read of the weights."""
        return self.n * self.k * self.bits // 8 + 2 * 2 * self.n * (self.k // self.group)

    def torch_bytes(self):
        if self.peer == INT4_PEER:
            return self.n * self.k // 2 + 2 * 2 * self.n * (self.k // self.group)
        if self.peer == INT8_PEER:
            return self.n * self.k + 2 * self.n
        return 0


def check_outputs(wts, x0, y_hone, y_torch, rows):
    """The relative L2 errors of copy 0; raises RuntimeError naming the cell when one is over
    ERROR_BOUND."""
    cell = "rows=%d n=%d k=%d bits=%d group=%d" % (rows, wts.n, wts.k, wts.bits, wts.group)
    ref_hone = x0.double() @ wts.w_hone.t()
    errors = {"hone_vs_reference": relative_l2(y_hone, ref_hone)}
    if wts.peer is not None:
        ref_torch = x0.double() @ wts.w_torch.t()
        errors["torch_vs_own_reference"] = relative_l2(y_torch, ref_torch)
        errors["torch_vs_hone_reference"] = relative_l2(y_torch, ref_hone)
        errors["hone_vs_torch"] = relative_l2(y_hone, y_torch)
    bad = {name: e for name, e in errors.items() if not e <= ERROR_BOUND}
    if bad and wts.peer == INT8_PEER:
        # Per-channel int8 re-quantizes the weights: only its own reference binds it.
        bad = {name: e for name, e in bad.items()
               if name not in ("torch_vs_hone_reference", "hone_vs_torch")}
    if bad:
        message = "%s: relative L2 errors over %.0e: %s" % (
            cell, ERROR_BOUND, ", ".join("%s %.3g" % kv for kv in sorted(bad.items())))
        if wts.peer == INT4_PEER and "torch_vs_own_reference" in bad:
            # Diagnosis: would the other nibble order have matched?
            q = wts.q0
            swapped = (q[:, 1::2] << 4 | q[:, ::2]).contiguous()
            tiles, _ = inner_k_tiles_for(wts.n, wts.k)
            packed = torch._convert_weight_to_int4pack(swapped, tiles)
            y_swapped = torch._weight_int4pack_mm(x0, packed, wts.group, wts.torch[0][1])
            message += ("; with the nibbles swapped (low nibble = even k) torch's error would "
                        "be %.3g" % relative_l2(y_swapped, x0.double() @ wts.w_torch.t()))
        raise RuntimeError(message)
    return errors


def bench_cell(wts, rows, samples, copies):
    dev = torch.device("cuda")
    n, k, bits, group = wts.n, wts.k, wts.bits, wts.group
    xs = [torch.randn(rows, k, device=dev).to(torch.bfloat16) for _ in range(copies)]
    y_hone = torch.empty(rows, n, device=dev, dtype=torch.bfloat16)

    def run_hone(c):
        q, s, b = wts.hone[c]
        hone.ops.qmv_affine_bf16(xs[c], q, s, b, bits, group, out=y_hone)  # current stream

    if wts.peer == INT4_PEER:
        def run_torch(c):
            packed, sz = wts.torch[c]
            return torch._weight_int4pack_mm(xs[c], packed, group, sz)
    elif wts.peer == INT8_PEER:
        def run_torch(c):
            q8, row_scale = wts.torch[c]
            return torch._weight_int8pack_mm(xs[c], q8, row_scale)
    else:
        run_torch = None

    run_hone(0)
    y_torch = run_torch(0) if run_torch else None
    torch.cuda.synchronize()
    errors = check_outputs(wts, xs[0], y_hone, y_torch, rows)

    sides = {"hone": run_hone}
    if run_torch:
        sides["torch"] = run_torch
    batch, times = time_interleaved(sides, copies, samples)
    r = {"rows": rows, "n": n, "k": k, "bits": bits, "group": group, "peer": wts.peer,
         "hone_weight_bytes": wts.hone_bytes(), "rotation_copies": copies, "batch": batch,
         "samples": samples, "hone_s": statistics.median(times["hone"]),
         "hone_spread": spread(times["hone"]), "errors": errors}
    if run_torch:
        r.update({"torch_weight_bytes": wts.torch_bytes(),
                  "torch_s": statistics.median(times["torch"]),
                  "torch_spread": spread(times["torch"])})
        r["ratio"] = r["hone_s"] / r["torch_s"]
    return r


def parse_pairs(text, sep, what):
    try:
        return [tuple(int(v) for v in item.split(sep)) for item in text.split(",") if item]
    except ValueError:
        raise SystemExit("qmv_affine_torch: %s %r: expected items like %s" %
                         (what, text, "4096x4096" if sep == "x" else "4:64")) from None


def markdown(doc):
    def fraction(r, side):
        if side + "_s" not in r:
            return "-"
        return "%.2f" % (r[side + "_weight_bytes"] / r[side + "_s"] / doc["read_bandwidth"])

    def table(results, geomean):
        lines = ["| bits | group | rows | n | k | hone µs | torch µs | ratio | hone read frac "
                 "| torch read frac |",
                 "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in results:
            lines.append("| %d | %d | %d | %d | %d | %.2f | %s | %s | %s | %s |" % (
                r["bits"], r["group"], r["rows"], r["n"], r["k"], r["hone_s"] * 1e6,
                "%.2f" % (r["torch_s"] * 1e6) if "torch_s" in r else "-",
                "%.3f" % r["ratio"] if "ratio" in r else "-",
                fraction(r, "hone"), fraction(r, "torch")))
        ratios = [r["ratio"] for r in results if "ratio" in r]
        if ratios and geomean:
            lines += ["", "geometric mean ratio: %.3f over %d cells" %
                      (math.exp(sum(map(math.log, ratios)) / len(ratios)), len(ratios))]
        return lines

    lines = ["# qmv.affine: hone vs torch weight-only kernels, %s" % doc["device"], "",
             "Cold L2 (rotation), CUDA-graph samples, interleaved, median of %d; ratio = "
             "t_hone / t_torch (below 1: hone faster). read frac = weight bytes (q + scales + "
             "biases) / t / %.0f GB/s (%s)." % (doc["samples"], doc["read_bandwidth"] / 1e9,
                                               doc["read_bandwidth_source"]), ""]
    same = [r for r in doc["results"] if r["peer"] == INT4_PEER]
    other = [r for r in doc["results"] if r["peer"] != INT4_PEER]
    if same:
        lines += ["## Same representation: int4, grouped scale and zero, against %s" %
                  INT4_PEER, ""] + table(same, geomean=True) + [""]
    if other:
        why = doc.get("int8_peer_missing") or ""
        lines += ["## Representation change, not a speedup: hone int8 (grouped scale and bias) "
                  "against %s" % (INT8_PEER + " (per-channel int8, no bias; a generic kernel)"
                                  if not why else "no peer (%s)" % why), ""]
        lines += table(other, geomean=False)
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the JSON and Markdown")
    parser.add_argument("--matrices", help="N x K list, e.g. 4096x4096,14336x4096 (default: %s)"
                        % ",".join("%dx%d" % m for m in MATRICES))
    parser.add_argument("--rows", help="row counts, e.g. 1,8,32 (default: %s)" %
                        ",".join(map(str, ROWS)))
    parser.add_argument("--formats", help="bits:group list, e.g. 4:64,8:64 (default: %s)" %
                        ",".join("%d:%d" % f for f in FORMATS))
    parser.add_argument("--samples", type=int, default=7, help="samples per median (>= 7)")
    parser.add_argument("--read-bandwidth", type=float,
                        help="device read bandwidth in GB/s (default: measured with torch.sum)")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    if args.samples < 7:
        parser.error("--samples must be at least 7")
    matrices = parse_pairs(args.matrices, "x", "--matrices") if args.matrices else MATRICES
    formats = parse_pairs(args.formats, ":", "--formats") if args.formats else FORMATS
    try:
        rows_list = [int(r) for r in args.rows.split(",")] if args.rows else ROWS
    except ValueError:
        parser.error("--rows %r: expected row counts like 1,8,32" % args.rows)
    for bits, group in formats:
        if bits not in (4, 8) or group not in (32, 64, 128):
            parser.error("--formats: bits=%d, group=%d (bits 4 or 8, group 32, 64 or 128)" %
                         (bits, group))
    for rows in rows_list:
        if not 1 <= rows <= 32:
            parser.error("--rows: %d outside 1..32" % rows)
    for n, k in matrices:
        for _, group in formats:
            if n < 1 or k % group != 0:
                parser.error("--matrices: %dx%d: k=%d is not a multiple of group=%d" %
                             (n, k, k, group))
    require_cuda("qmv_affine_torch", hone)
    props = torch.cuda.get_device_properties(0)
    l2_bytes = props.L2_cache_size
    if args.read_bandwidth:
        read_bandwidth, source = args.read_bandwidth * 1e9, "--read-bandwidth"
    else:
        read_bandwidth, source = measure_read_bandwidth(), "measured: torch.sum over 2 GiB"
    print("read bandwidth %.0f GB/s (%s)" % (read_bandwidth / 1e9, source), flush=True)
    int8_ok, int8_why = int8_peer_available()

    results = []
    for bits, group in formats:
        for n, k in matrices:
            if bits == 4:
                tiles, why = inner_k_tiles_for(n, k)
                peer = INT4_PEER if tiles else None
            else:
                tiles, why = None, int8_why
                peer = INT8_PEER if int8_ok else None
            # One rotation count for every row count of the matrix: weights dominate the bytes.
            launch_bytes = (n * k * bits // 8 + 4 * n * (k // group) +
                            2 * max(rows_list) * (n + k))
            copies = rotation_copies(l2_bytes, launch_bytes)
            wts = Weights(n, k, bits, group, copies, peer, tiles, args.seed)
            for rows in rows_list:
                r = bench_cell(wts, rows, args.samples, copies)
                if peer is None:
                    r["no_peer_reason"] = why
                results.append(r)
                print("bits=%d group=%-3d rows=%-2d n=%-5d k=%-5d hone %8.2f us  %s" % (
                    bits, group, rows, n, k, r["hone_s"] * 1e6,
                    "torch %8.2f us  ratio %.3f" % (r["torch_s"] * 1e6, r["ratio"])
                    if "ratio" in r else "no peer (%s)" % why), flush=True)
            del wts
            torch.cuda.empty_cache()

    doc = {
        **doc_header("qmv_affine_torch", hone, HONE_ENV),
        "read_bandwidth": read_bandwidth, "read_bandwidth_source": source,
        "peers": {"4": INT4_PEER + " (same representation: int4, grouped scale and zero)",
                  "8": (INT8_PEER + " (per-channel int8, no bias: a different representation)")
                  if int8_ok else None},
        "method": "cuda-graph replay of B launches per sample, events; interleaved hone/torch "
                  "alternating order; cold L2 by rotation of ceil(2*L2/bytes)+1 copies; outputs "
                  "checked against float64 references before timing",
        "error_bound": ERROR_BOUND, "samples": args.samples, "results": results,
    }
    if not int8_ok:
        doc["int8_peer_missing"] = int8_why
    table = markdown(doc)
    write_results(args.out, "qmv_affine_torch", doc, table)
    print(table)


if __name__ == "__main__":
    main()
