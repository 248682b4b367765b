#!/usr/bin/env python3
"""Which K split (k_slices) a batch-invariant default should take per weight shape, from the
tunes of a decode matrix run in tolerance numerics (bench/op_matrix --numerics tolerance --json).

A batch-invariant default fixes one K summation order for every row count of a shape, so its
k_slices (warps_k x split_k) must serve rows 1 to 32 at once. In tolerance numerics every config
is admitted and timed in the tune's triage (interleaved, one median each), so a bucket's
candidates give, per k_slices, the fastest config of that order at that row count. For each shape
this prints, per k_slices, the geomean over its row buckets of (fastest of that order / fastest
of any order) with the rows-1 and rows-32 terms, marks the default's k_slices, and ends with the
same geomean over all shapes for the default and for each constant k_slices. The vendor's
candidates (a kernel name with "cublaslt") are left out: the default is one of hone's own.

  scripts/fit_k_slices.py PART/matrix.json[.xz] ... [--md table.md]

Exit status: 0 on a table, 2 on bad input (a part that is not a report, or one tuned in
batch-invariant numerics, whose gate removed every other order before timing).
"""

import argparse
import json
import lzma
import math
import re
import sys
from collections import defaultdict


class BadInput(Exception):
    pass


def k_slices(tactic):
    fields = dict(re.findall(r"(\w+)=(-?\d+)", tactic))
    return int(fields.get("warps_k", 1)) * int(fields.get("split_k", 1))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def read_parts(paths):
    """{shape: {rows: {k_slices: fastest median}}} and {shape: the default's k_slices}."""
    shapes = defaultdict(dict)
    default = {}
    for path in paths:
        try:
            opener = lzma.open if path.endswith(".xz") else open
            with opener(path, "rt") as f:
                doc = json.load(f)
            tunes, numerics = doc["tunes"], doc["numerics"]
        except (OSError, ValueError, KeyError, lzma.LZMAError) as e:
            raise BadInput(f"{path} is not an op_matrix report ({type(e).__name__}: {e})") from e
        if numerics != "tolerance":
            raise BadInput(f"{path} was tuned in {numerics} numerics: its gate left one K order; "
                           "run the matrix with --numerics tolerance")
        for t in tunes:
            parts = t["bucket"].split(",")
            rows = int(parts[0].partition("=")[2])
            shape = ",".join(parts[1:])
            best = {}
            for c in t["candidates"]:
                if c["status"] != "ok" or "cublaslt" in c["tactic"] or not c.get("median_s"):
                    continue
                ks = k_slices(c["tactic"])
                best[ks] = min(best.get(ks, math.inf), c["median_s"])
            if best:
                shapes[shape][rows] = best
                default[shape] = k_slices(t["default"])
    return shapes, default


def cost(buckets, ks):
    """Geomean over the buckets of fastest-at-ks / fastest; None when a bucket lacks ks."""
    if any(ks not in b for b in buckets.values()):
        return None
    return geomean([b[ks] / min(b.values()) for b in buckets.values()])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", help="matrix.json[.xz] of parts tuned in tolerance")
    ap.add_argument("--md", help="also write the table here")
    args = ap.parse_args(argv)
    try:
        shapes, default = read_parts(args.parts)
    except BadInput as e:
        print(f"fit_k_slices: {e}", file=sys.stderr)
        return 2
    every_ks = sorted({ks for s in shapes.values() for b in s.values() for ks in b})
    lines = ["| shape | buckets | default k_slices | "
             + " | ".join(f"k_slices {ks} (r1, r32)" for ks in every_ks) + " |",
             "| --- | ---: | ---: | " + " | ".join("---" for _ in every_ks) + " |"]
    totals = defaultdict(list)
    for shape, buckets in sorted(shapes.items()):
        cells = []
        for ks in every_ks:
            c = cost(buckets, ks)
            if c is None:
                cells.append("-")
                continue
            totals[ks].append(c)
            ends = [f"{buckets[r][ks] / min(buckets[r].values()):.2f}" for r in (1, 32)
                    if r in buckets]
            mark = "**" if ks == default[shape] else ""
            cells.append(f"{mark}{c:.3f}{mark} ({', '.join(ends)})")
        d = cost(buckets, default[shape])
        if d is not None:
            totals["default"].append(d)
        lines.append(f"| {shape} | {len(buckets)} | {default[shape]} | " + " | ".join(cells)
                     + " |")
    lines.append("")
    lines.append("Geomean over the shapes of each shape's cost (fastest of the order / fastest, "
                 "geomean over its row buckets):")
    for key in ["default"] + every_ks:
        if len(totals[key]) == len(shapes):
            name = "the default's k_slices" if key == "default" else f"k_slices {key} everywhere"
            lines.append(f"- {name}: {geomean(totals[key]):.3f}")
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
