#!/usr/bin/env python3
"""The no-cliff chart of quantized_linear and the acceptance checks of issue 11, from the JSON
of bench/op_matrix (and, optionally, bench/peers/qmm_affine_torch.py).

    op_matrix --op quantized_linear --also quantized_linear.qmv --also quantized_linear.qmm \\
        --json ql.json
    op_matrix --op qmm.affine --json qmm.json
    python3 scripts/plot_crossover.py --linear ql.json [--qmm qmm.json] [--torch torch.json] \\
        [--png crossover.png]

Chart: per (n, k), time against M (1..128) of the tuned quantized_linear ("pick"), qmv only,
qmm only, and cuBLASLt BF16 dense on the dequantised weights (a representation change).
Checks, printed as one table (PASS/FAIL per line; exit status 1 when any fails):
  no cliff      over M = 1..128 on each (n, k), t(M) <= 1.05 x t(M') for every M' > M;
  decode        cuBLAS / tuned >= 1.2 at every M 1..64, >= 1.0 at every M 65..256;
  tuned         tuned <= default (within 2 %: the tuner's margin) at every point;
  prefill       qmm.affine at M 512/2048/8192, int4 g64/g128, TFLOP/s over cuBLAS's: geomean
                >= 0.7, every cell >= 0.6;
  torch         qmm.affine over torch._weight_int4pack_mm: every cell >= 10x.
"""
import argparse
import json
import math
import re
import sys

QMV = "quantized_linear.qmv"
QMM = "quantized_linear.qmm"
PEER = "cublas.dequant"


def shape_dims(text):
    """{name: value} of an op_matrix shape text `rows=8,n=4096,...`."""
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", text)}


def points(doc):
    """[(dims, {label: seconds})] of the successful results of an op_matrix JSON."""
    out = []
    for r in doc.get("results", []):
        if "error" in r:
            continue
        out.append((shape_dims(r["shape"]), {k: v["t_s"] for k, v in r["times"].items()}))
    return out


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


class Checks:
    def __init__(self):
        self.lines, self.failed = [], 0

    def add(self, name, ok, detail):
        self.lines.append("| %s | %s | %s |" % (name, "PASS" if ok else "FAIL", detail))
        self.failed += 0 if ok else 1


def linear_checks(pts, checks):
    by_matrix = {}
    for dims, t in pts:
        by_matrix.setdefault((dims["n"], dims["k"]), []).append((dims["rows"], t))
    for (n, k), rows in sorted(by_matrix.items()):
        rows.sort()
        tuned = {m: t["pick"] for m, t in rows}
        small = [m for m in sorted(tuned) if m <= 128]
        if len(small) >= 2:
            worst, where = 0.0, ""
            for i, m in enumerate(small):
                later = min(tuned[x] for x in small[i + 1:]) if i + 1 < len(small) else None
                if later and tuned[m] / later - 1 > worst:
                    worst, where = tuned[m] / later - 1, "M=%d" % m
            checks.add("no cliff %dx%d" % (n, k), worst <= 0.05,
                       "worst excess over a larger M %.1f %% %s (%d points)" %
                       (100 * worst, where, len(small)))
        for lo, hi, bound in ((1, 64, 1.2), (65, 256, 1.0)):
            r = [(m, t[PEER] / t["pick"]) for m, t in rows if lo <= m <= hi and PEER in t]
            if r:
                m_min, v_min = min(r, key=lambda x: x[1])
                checks.add("cuBLAS/tuned %dx%d M %d-%d" % (n, k, lo, hi), v_min >= bound,
                           "min %.2fx at M=%d (need >= %.1f), %d points" %
                           (v_min, m_min, bound, len(r)))


def tuned_checks(name, pts, checks):
    r = [(d, t["pick"] / t["default"]) for d, t in pts if "default" in t]
    if r:
        d, worst = max(r, key=lambda x: x[1])
        checks.add("tuned <= default (%s)" % name, worst <= 1.02,
                   "worst pick/default %.3f at %s, %d points" %
                   (worst, ",".join("%s=%d" % kv for kv in d.items()), len(r)))


def prefill_checks(pts, checks):
    cells = [(d, t[PEER] / t["pick"]) for d, t in pts
             if PEER in t and d["rows"] in (512, 2048, 8192) and d["bits"] == 4 and
             d["group"] in (64, 128) and (d["n"], d["k"]) in
             ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))]
    if cells:
        ratios = [v for _, v in cells]
        d, worst = min(cells, key=lambda x: x[1])
        checks.add("prefill vs cuBLAS geomean", geomean(ratios) >= 0.7,
                   "%.3f over %d cells (need >= 0.7)" % (geomean(ratios), len(ratios)))
        checks.add("prefill vs cuBLAS every cell", worst >= 0.6,
                   "min %.3f at rows=%d n=%d k=%d g=%d (need >= 0.6)" %
                   (worst, d["rows"], d["n"], d["k"], d["group"]))


def torch_checks(doc, checks):
    r = doc.get("results", [])
    if r:
        worst = min(r, key=lambda x: x["speedup"])
        checks.add("vs torch int4", worst["speedup"] >= 10,
                   "min %.1fx at rows=%d n=%d k=%d g=%d, geomean %.1fx (need >= 10)" %
                   (worst["speedup"], worst["rows"], worst["n"], worst["k"], worst["group"],
                    geomean([x["speedup"] for x in r])))


def plot(pts, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_crossover: matplotlib is not installed; no chart (the checks still run)",
              file=sys.stderr)
        return False
    by_matrix = {}
    for dims, t in pts:
        if dims["rows"] <= 128:
            by_matrix.setdefault((dims["n"], dims["k"]), []).append((dims["rows"], t))
    if not by_matrix:
        return False
    fig, axes = plt.subplots(1, len(by_matrix), figsize=(7 * len(by_matrix), 5), squeeze=False)
    for ax, ((n, k), rows) in zip(axes[0], sorted(by_matrix.items())):
        rows.sort()
        for label, key, style in (("quantized_linear (tuned)", "pick", "-k"),
                                  ("qmv.affine only", QMV, ":b"),
                                  ("qmm.affine only", QMM, "--r"),
                                  ("cuBLASLt BF16 dense (bf16 weights)", PEER, "-.g")):
            xs = [m for m, t in rows if key in t]
            if xs:
                ax.plot(xs, [rows_t[key] * 1e6 for m, rows_t in rows if key in rows_t], style,
                        label=label, linewidth=1.5 if key == "pick" else 1)
        ax.set_title("int4 g64, N=%d K=%d" % (n, k))
        ax.set_xlabel("rows (M)")
        ax.set_ylabel("time per call [µs], cold L2")
        ax.set_xlim(1, 128)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--linear", required=True, help="op_matrix JSON of quantized_linear")
    parser.add_argument("--qmm", help="op_matrix JSON of qmm.affine")
    parser.add_argument("--torch", help="qmm_affine_torch.json")
    parser.add_argument("--png", help="write the chart here")
    args = parser.parse_args()
    with open(args.linear) as f:
        linear = points(json.load(f))
    checks = Checks()
    linear_checks(linear, checks)
    tuned_checks("quantized_linear", linear, checks)
    if args.qmm:
        with open(args.qmm) as f:
            qmm = points(json.load(f))
        tuned_checks("qmm.affine", qmm, checks)
        prefill_checks(qmm, checks)
    if args.torch:
        with open(args.torch) as f:
            torch_checks(json.load(f), checks)
    if args.png and plot(linear, args.png):
        print("chart: %s" % args.png)
    print("| check | result | detail |\n|---|---|---|")
    print("\n".join(checks.lines))
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
