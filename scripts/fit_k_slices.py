#!/usr/bin/env python3
"""Which K split (k_slices) a batch-invariant default should take per weight shape, from timings
of every config: the tunes of a decode matrix run in tolerance numerics (bench/op_matrix
--numerics tolerance --json), or the CSV of a kernel harness (bench/qmv_affine_harness or
bench/gemv_bf16_harness --csv FILE), which times every config of every cell.

A batch-invariant default fixes one K summation order for every row count of a shape: its path's
order (the mma path's, which the ring path shares) and its k_slices (warps_k x split_k), which
must serve rows 1 to 32 at once. In tolerance numerics every config is admitted and timed in the
tune's triage (interleaved, one median each), so a bucket's candidates give, per k_slices, the
fastest config of that order at that row count; the harness gives the same per cell. Only the
configs of the default's path order count, and the vendor's candidates (cuBLASLt) are left out:
the default is one of hone's own. For each shape this prints, per k_slices, the geomean over its
row counts of (fastest of that k_slices / fastest of any), with the rows-1 and rows-32 terms,
marks the default's k_slices (the default of the build that timed them), and ends with the same
geomean over all shapes for that default and for each constant k_slices, then the cost of the
present rule of default_k_slices (as this tree computes it) and of the cheapest rules of a search
over its constants (--rules N; the rule is restated below, so keep the two alike).

  scripts/fit_k_slices.py PART/matrix.json[.xz] ... [--md table.md] [--rules N]
  scripts/fit_k_slices.py harness.csv[.xz] ... [--md table.md] [--drop-last-cell] [--rules N]

Exit status: 0 on a table, 2 on bad input (a file that is neither, or a matrix tuned in
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


def open_text(path):
    """A text file, or its .xz-compressed form."""
    return (lzma.open if path.endswith(".xz") else open)(path, "rt")


def k_slices(tactic):
    fields = dict(re.findall(r"(\w+)=(-?\d+)", tactic))
    return int(fields.get("warps_k", 1)) * int(fields.get("split_k", 1))


def order_path(tactic):
    """The path whose summation order a config has: 'gemv.bf16.ring' sums as the mma path."""
    path = tactic.partition(":")[0].rpartition(".")[2]
    return "mma" if path == "ring" else path


def own_config(tactic):
    """A config of hone's own kernels (not the vendor's, not a harness variant or ceiling)."""
    return ":" in tactic and " " not in tactic and "cublaslt" not in tactic


def add(shapes, default, shape, rows, timings, default_tactic):
    """Keep, for one cell, the fastest time per k_slices of the default's path order."""
    want = order_path(default_tactic)
    best = {}
    for tactic, seconds in timings:
        if own_config(tactic) and seconds > 0 and order_path(tactic) == want:
            ks = k_slices(tactic)
            best[ks] = min(best.get(ks, math.inf), seconds)
    if best:
        shapes[shape][rows] = best
        default[shape] = k_slices(default_tactic)


def read_csv(path, shapes, default, drop_last_cell=False):
    """A harness CSV. Its candidate column is a tactic whose fields are comma-separated, quoted
    since 2026-12-06 and bare before, so a line is split by the header: the columns before
    `candidate` from the left, the ones after it from the right, and the candidate is what lies
    between, without its quotes. drop_last_cell: the
    run was cut (a timeout), so its last cell may be partial or its last line torn: the lines of
    the last cell are left out."""
    with open_text(path) as f:
        header = f.readline().strip().split(",")
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if drop_last_cell and lines and "candidate" in header:
        lead = header.index("candidate")
        last = lines[-1].split(",")[:lead]
        while lines and lines[-1].split(",")[:lead] == last:
            lines.pop()
    if not {"rows", "candidate", "us", "default"} <= set(header):
        raise BadInput(f"{path} is not a harness CSV with a default column "
                       "(rows, candidate, us, default)")
    lead = header.index("candidate")
    tail = len(header) - lead - 1
    cells = defaultdict(list)
    for number, line in enumerate(lines, start=2):
        fields = line.split(",")
        if len(fields) < len(header):
            raise BadInput(f"{path}:{number}: {len(fields)} fields, the header has {len(header)}")
        row = dict(zip(header[:lead], fields[:lead]))
        row.update(zip(header[lead + 1:], fields[len(fields) - tail:]))
        candidate = ",".join(fields[lead:len(fields) - tail])
        if len(candidate) >= 2 and candidate[0] == candidate[-1] == '"':
            candidate = candidate[1:-1]
        row["candidate"] = candidate
        shape = ",".join(f"{key}={row[key]}" for key in ("n", "k", "bits", "group") if key in row)
        cells[(shape, int(row["rows"]))].append(row)
    for (shape, rows), rows_lines in cells.items():
        defaults = [x["candidate"] for x in rows_lines if x["default"] == "1"]
        if len(defaults) != 1:
            raise BadInput(f"{path}: {shape} at rows={rows} has {len(defaults)} default lines")
        add(shapes, default, shape, rows,
            [(x["candidate"], float(x["us"]) * 1e-6) for x in rows_lines], defaults[0])


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def read_parts(paths, drop_last_cell=False):
    """{shape: {rows: {k_slices: fastest seconds}}} and {shape: the default's k_slices}."""
    shapes = defaultdict(dict)
    default = {}
    for path in paths:
        if path.endswith((".csv", ".csv.xz")):
            read_csv(path, shapes, default, drop_last_cell)
            continue
        try:
            with open_text(path) as f:
                doc = json.load(f)
            tunes, numerics = doc["tunes"], doc["numerics"]
        except (OSError, ValueError, KeyError, lzma.LZMAError) as e:
            raise BadInput(f"{path} is not an op_matrix report ({type(e).__name__}: {e})") from e
        if numerics != "tolerance":
            raise BadInput(f"{path} was tuned in {numerics} numerics: its gate left one K order; "
                           "run the matrix with --numerics tolerance")
        for t in tunes:
            parts = t["bucket"].split(",")
            add(shapes, default, ",".join(parts[1:]), int(parts[0].partition("=")[2]),
                [(c["tactic"], c.get("median_s", 0)) for c in t["candidates"]
                 if c["status"] == "ok"], t["default"])
    return shapes, default


def cost(buckets, ks):
    """Geomean over the buckets of fastest-at-ks / fastest; None when a bucket lacks ks."""
    if any(ks not in b for b in buckets.values()):
        return None
    return geomean([b[ks] / min(b.values()) for b in buckets.values()])


# The default's rule, as default_k_slices in gemv_bf16_config.cpp and qmv_affine_config.cpp
# computes it, with its constants as parameters: the largest power of two k_slices <= 16 whose
# launch keeps at most `target` warps (m16 tiles x slices) and whose slices hold at least
# `min_slice` chunks; then, where the launch has fewer than `fill` warps, K split further, down to
# one chunk a slice. The present constants: target 2048, fill 512; min_slice 8 chunks of 32 for
# gemv.bf16 (256 elements), 3 chunks for qmv.affine (of 128 values at 4 bits, 64 at 8).
MAX_SLICES = 16
PRESENT = {"gemv": (2048, 8, 512), "qmv": (2048, 3, 512)}
SEARCH = {"target": (512, 1024, 2048, 2560, 4096, 8192), "min_slice": (1, 2, 3, 4, 8),
          "fill": (0, 256, 512, 1024)}


def chunk_of(shape):
    """K values per chunk: 32 for gemv.bf16, 16 x 32 / bits for qmv.affine."""
    fields = dict(part.split("=") for part in shape.split(","))
    return 16 * (32 // int(fields["bits"])) if "bits" in fields else 32


def rule_slices(shape, target, min_slice, fill):
    fields = dict(part.split("=") for part in shape.split(","))
    n, k = int(fields["n"]), int(fields["k"])
    tiles, chunk = (n + 15) // 16, chunk_of(shape)
    chunks = (k + chunk - 1) // chunk
    slices = 1
    while slices < MAX_SLICES and 2 * slices * tiles <= target and 2 * slices * min_slice <= chunks:
        slices *= 2
    floor = 1
    while floor < MAX_SLICES and 2 * floor * tiles <= fill and 2 * floor * chunk <= k:
        floor *= 2
    return max(slices, floor)


def rule_cost(shapes, params):
    """(geomean cost over the shapes, worst cost, its shape) of a rule; None where a shape's
    rule split was not measured."""
    costs = []
    for shape, buckets in shapes.items():
        c = cost(buckets, rule_slices(shape, *params))
        if c is None:
            return None
        costs.append((c, shape))
    worst = max(costs)
    return geomean([c for c, _ in costs]), worst[0], worst[1]


def rule_lines(shapes, top):
    """The present rule's cost and the `top` cheapest of the searched rules."""
    kinds = {"qmv" if "bits=" in shape else "gemv" for shape in shapes}
    lines = ["", "Rules (target warps, minimum slice in chunks, fill warps): geomean cost over "
             "the shapes, and the worst shape's:"]
    if len(kinds) == 1:
        present = PRESENT[kinds.pop()]
        r = rule_cost(shapes, present)
        if r:
            lines.append(f"- present {present}: {r[0]:.3f}, worst {r[1]:.3f} ({r[2]})")
    ranked = []
    for target in SEARCH["target"]:
        for min_slice in SEARCH["min_slice"]:
            for fill in SEARCH["fill"]:
                r = rule_cost(shapes, (target, min_slice, fill))
                if r:
                    ranked.append((r[0], r[1], (target, min_slice, fill), r[2]))
    for g, worst, params, shape in sorted(ranked)[:top]:
        lines.append(f"- {params}: {g:.3f}, worst {worst:.3f} ({shape})")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+",
                    help="matrix.json[.xz] of parts tuned in tolerance, or harness CSVs (.csv[.xz])")
    ap.add_argument("--md", help="also write the table here")
    ap.add_argument("--drop-last-cell", action="store_true",
                    help="leave out each CSV's last cell (a harness run cut by a timeout)")
    ap.add_argument("--rules", type=int, default=5, metavar="N",
                    help="list the N cheapest rules of the search (0: none)")
    args = ap.parse_args(argv)
    try:
        shapes, default = read_parts(args.parts, args.drop_last_cell)
    except (BadInput, OSError, ValueError) as e:
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
    if args.rules > 0:
        lines += rule_lines(shapes, args.rules)
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
