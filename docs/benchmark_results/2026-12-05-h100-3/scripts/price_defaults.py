#!/usr/bin/env python3
"""The defaults of qmv.affine and gemv.bf16 past 8 rows, priced from this run's batch-invariant
tunes (../decode_matrix/*/matrix.json.xz). In batch-invariant numerics every admitted config of a
bucket has the default's K order and was timed in the tune's triage (interleaved, one median
each), so a rule that changes only the default's CTA shape can be priced offline: per rows-16 and
rows-32 bucket, the triage median of the config the rule names over the fastest admitted one,
geomean over the buckets, beside the present default's. A rule whose config was not a candidate
of a bucket falls back to that bucket's default ("fallback"). "worse" counts buckets where the
rule's config is more than 2 % slower than the default's.

The rules the defaults took (docs/notes/qmv_affine.md v10, docs/notes/gemv_bf16.md v4):
- qmv.affine, "taken": packed weights under 8 MB or K <= 1536 run the rows in groups with one
  m16 tile per warp (8 rows a CTA at 9-16, 16 at 17-32), larger ones all rows in one CTA with two
  (16 or 32), no cp.async ring; 16 K slices keep the default;
- gemv.bf16, "small -> groups of 16": 17-32 rows in two groups of 16 on weights under 8 MB.

    python3 docs/benchmark_results/2026-12-05-h100-3/scripts/price_defaults.py
    python3 .../price_defaults.py --tune docs/benchmark_results/2026-12-03-h200-3/call1/tune.json.xz

--tune prices the same rules on a model tune of `hone tune --json` instead (its reports hold the
same candidates with their triage medians): an H200 tune of Llama-3.1-8B of an earlier build is
an out-of-sample check of the rules read from this run.
"""
import argparse
import glob
import json
import lzma
import math
import os
import re

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "decode_matrix")
MMA_FIELDS = ["rows_per_cta", "warps", "warps_k", "outputs_per_warp", "split_k", "vec", "async"]


def fields(tactic):
    return dict(re.findall(r"(\w+)=(\d+)", tactic))


def k_slices(tactic):
    f = fields(tactic)
    return int(f["warps_k"]) * int(f["split_k"])


def mma(op, **f):
    """An mma-path tactic string, fields in the order the op spells them."""
    return f"{op}.mma:" + ",".join(f"{k}={f[k]}" for k in MMA_FIELDS if f.get(k) is not None)


def cta(ks):
    """set_default_cta(slices, warps_at_2 = 2, no cluster pairs): (warps, warps_k, split_k)."""
    return {1: (4, 1, 1), 2: (2, 2, 1), 4: (4, 4, 1), 8: (8, 8, 1)}.get(ks, (16, 16, 1))


def load(pattern, tune=None, op=None):
    """[(rows, n, k, bits, default tactic, {tactic: triage median})] of the buckets past 8 rows:
    of the matrix parts matching `pattern`, or of `op`'s reports in the model tune `tune`."""
    cells = []
    docs = []
    if tune:
        with lzma.open(tune, "rt") if tune.endswith(".xz") else open(tune) as f:
            docs = [[t for t in json.load(f)["reports"] if t["op"] == op]]
    else:
        for path in sorted(glob.glob(os.path.join(HERE, pattern, "matrix.json.xz"))):
            with lzma.open(path, "rt") as f:
                docs.append(json.load(f)["tunes"])
    for tunes in docs:
        for t in tunes:
            b = dict(p.split("=") for p in t["bucket"].split(","))
            if int(b["rows"]) <= 8:
                continue
            med = {c["tactic"]: c["median_s"] for c in t["candidates"]
                   if c["status"] == "ok" and c.get("median_s")}
            cells.append((int(b["rows"]), int(b["n"]), int(b["k"]), int(b.get("bits", 16)),
                          t["default"], med))
    return cells


def qmv_rule(small):
    def rule(rows, n, k, bits, default):
        ks = k_slices(default)
        if ks >= 16:
            return default
        warps, warps_k, split_k = cta(ks)
        sm = small(n, k, bits)
        r = (8 if rows <= 16 else 16) if sm else (16 if rows <= 16 else 32)
        return mma("qmv.affine", rows_per_cta=r, warps=warps, warps_k=warps_k,
                   outputs_per_warp=16 if sm else 32, split_k=split_k)
    return rule


def gemv_rule(large_o32):
    def rule(rows, n, k, bits, default):
        if rows <= 16:
            return default
        f = fields(default)
        if 2 * n * k < 8e6:
            f["rows_per_cta"] = "16"
        elif large_o32 and k >= 4096 and n * k >= 16e6:
            f["outputs_per_warp"] = "32"
        return mma("gemv.bf16", **f)
    return rule


def price(cells, rules):
    for name, rule in rules.items():
        for rows in (16, 32):
            costs, worse, fallback = [], 0, 0
            if not any(c[0] == rows for c in cells):
                continue
            for r, n, k, bits, default, med in cells:
                if r != rows:
                    continue
                best = min(med.values())
                t = default if rule is None else rule(r, n, k, bits, default)
                if t not in med:
                    t, fallback = default, fallback + 1
                costs.append(med[t] / best)
                worse += med[t] > med[default] * 1.02
            g = math.exp(sum(map(math.log, costs)) / len(costs))
            print(f"  {name:34s} rows {rows}: {g:.3f} over {len(costs)} buckets, worse {worse}, "
                  f"fallback {fallback}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tune", help="a model tune (hone tune --json) to price instead")
    tune = ap.parse_args().tune
    print("qmv.affine")
    price(load("qmv.affine_*", tune, "qmv.affine"), {
        "present default": None,
        "taken": qmv_rule(lambda n, k, b: n * k * b / 8 < 8e6 or k <= 1536),
        "small under 8 MB alone": qmv_rule(lambda n, k, b: n * k * b / 8 < 8e6),
        "every matrix small": qmv_rule(lambda n, k, b: True),
        "every matrix large": qmv_rule(lambda n, k, b: False),
    })
    print("gemv.bf16")
    price(load("gemv.bf16_?of2", tune, "gemv.bf16"), {
        "present default": None,
        "small -> groups of 16": gemv_rule(False),
        "and large K=4096 -> o32": gemv_rule(True),
    })


if __name__ == "__main__":
    main()
