#!/usr/bin/env python3
"""Issue 13's acceptance points, read from the parts of one decode matrix (bench/op_matrix --json).

Each part is the matrix.json of `scripts/device/decode_matrix.sh` (one op, a share of the
shapes of bench/shapes/decode_matrix/OP.txt). The report answers, per op and weight format:
- correct and batch-invariant default: the default passed its tune's gate (float64 reference,
  and in batch-invariant numerics every row bitwise against the rows=1 default) in every bucket;
- tuned >= default: the pick's median over the default's, measured interleaved, in every cell;
  a cell counts as slower only when the excess is above the larger of the two spreads;
- the peer ratio in every cell (cuBLASLt for gemv.bf16, cuBLAS on the dequantised weights for
  qmv.affine), its geomean over rows 1-16 and its worst cell; every cell below 1.0x the peer,
  classed as within the two spreads, within its tune's switch margin, or beyond both;
- the fraction of the measured read bandwidth (the device's large-read rate, not the per-shape
  loads-only ceiling: a fraction of the ceiling is at least this) on the large matrices.
A cell is one shape at one row count; its bucket (the row count its tune measured) is the
smallest tuned row count at or above it.

  scripts/decode_matrix_report.py DIR/matrix.json[.xz] ... --md report.md [--large-mb 100]

Exit status: 0 on a report, 2 on bad input.
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


def load(path):
    try:
        opener = lzma.open if path.endswith(".xz") else open
        with opener(path, "rt") as f:
            doc = json.load(f)
        return doc, doc["results"], doc["tunes"]
    except (OSError, ValueError, KeyError, lzma.LZMAError) as e:
        raise BadInput(f"{path} is not an op_matrix report ({type(e).__name__}: {e})") from e


def fields(shape):
    """{'rows': 1, 'n': 4096, ...} of 'rows=1,n=4096,k=4096,...'."""
    out = {}
    for part in shape.split(","):
        key, _, value = part.partition("=")
        out[key] = int(value) if value.lstrip("-").isdigit() else value
    return out


def weight_format(f):
    return f"int{f['bits']} g{f['group']}" if "bits" in f else "bf16"


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", help="matrix.json (or matrix.json.xz) of each part")
    ap.add_argument("--md", required=True, help="the Markdown report to write")
    ap.add_argument("--large-mb", type=float, default=100.0,
                    help="a matrix is large when its bf16 form is at least this many MB")
    args = ap.parse_args(argv)
    try:
        lines, n_keys = report(args)
    except BadInput as e:
        print(f"decode_matrix_report: {e}", file=sys.stderr)
        return 2
    with open(args.md, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines[:6 + n_keys]))
    return 0


def slower_than_default(r):
    """The pick's time over the default's, when above 1 by more than the larger spread."""
    t = r["times"]
    ratio = t["pick"]["t_s"] / t["default"]["t_s"]
    return ratio if ratio - 1 > max(t["pick"]["spread"], t["default"]["spread"]) else None


def peer_of(op):
    """The peer a cell of `op` is held to: cuBLASLt, or cuBLAS on the dequantised weights."""
    return "cublas" if op == "gemv.bf16" else "cublas.dequant"


def below_peer(r, peer_name):
    """(peer / pick, how) for a cell where the peer is faster than the pick, else None. how:
    "within the spreads" (the deficit at most the sum of the two medians' spreads), "within the
    tune's margin" (beyond them, but at most the switch margin of the cell's tune: a difference
    no pairing of that tune could resolve), or "beyond"."""
    t = r["times"]
    if peer_name not in t or t[peer_name]["over_pick"] >= 1.0:
        return None
    ratio = t[peer_name]["over_pick"]
    deficit = 1.0 - ratio
    if deficit <= t["pick"]["spread"] + t[peer_name]["spread"]:
        return ratio, "within the spreads"
    if deficit <= r.get("tune_margin", 0.0):
        return ratio, "within the tune's margin"
    return ratio, "beyond"


def report(args):
    """The report's lines and how many (op, numerics, format) rows its first table has."""

    cells = defaultdict(list)   # (op, numerics, format) -> [result]
    gates = defaultdict(lambda: [0, 0])  # (op, numerics, format) -> [tunes, default passed]
    devices = set()
    for path in args.parts:
        doc, results, tunes = load(path)
        op, numerics = doc["op"], doc["numerics"]
        devices.add(doc["device"]["model"])
        for r in results:
            cells[(op, numerics, weight_format(fields(r["shape"])))].append(r)
        for t in tunes:
            key = (op, numerics, weight_format(fields(t["bucket"])))
            gates[key][0] += 1
            default = [c for c in t["candidates"] if c["tactic"] == t["default"]]
            gates[key][1] += bool(default) and default[0]["status"] == "ok"

    lines = [f"# Decode matrix: issue 13's points ({', '.join(sorted(devices))})", ""]
    lines.append("Peer: cuBLASLt (gemv.bf16) or cuBLAS on the dequantised weights (qmv.affine); "
                 "`peer / pick` above 1 means hone's pick is faster. `of read bw`: the pick's "
                 "bytes per second over the measured read bandwidth, on matrices whose bf16 form "
                 f"is at least {args.large_mb:g} MB.")
    lines.append("")
    lines.append("| op | numerics | format | cells | default gated ok | pick slower than "
                 "default (cells, worst) | peer / pick geomean rows 1-16 | worst peer / pick "
                 "(cell) | cells below 1.0x peer | large: of read bw rows 1-16 (min) | rows 17-32 "
                 "(min) |")
    lines.append("| --- | --- | --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: |")
    for key in sorted(cells):
        op, numerics, fmt = key
        rs = cells[key]
        slower = [slower_than_default(r) - 1 for r in rs if slower_than_default(r)]
        peer_name = peer_of(op)
        ratios = [(r["times"][peer_name]["over_pick"], r) for r in rs if peer_name in r["times"]]
        low = [x for x in ratios if x[0] < 1.0]
        worst = min(ratios, key=lambda x: x[0]) if ratios else None
        small_rows = [x[0] for x in ratios if fields(x[1]["shape"])["rows"] <= 16]
        large = [r for r in rs
                 if 2 * fields(r["shape"])["n"] * fields(r["shape"])["k"] >= args.large_mb * 1e6]
        lo = [r["fraction_of_read_bandwidth"] for r in large if fields(r["shape"])["rows"] <= 16]
        hi = [r["fraction_of_read_bandwidth"] for r in large if fields(r["shape"])["rows"] > 16]
        tunes, passed = gates[key]
        worst_slow = max(slower) if slower else 0
        lines.append(
            f"| {op} | {numerics} | {fmt} | {len(rs)} | {passed} of {tunes} tunes | "
            f"{len(slower)}{f', {100 * worst_slow:.1f} %' if slower else ''} | "
            f"{geomean(small_rows):.3f} | "
            + (f"{worst[0]:.3f} ({worst[1]['shape']}) | " if worst else "- | ")
            + f"{len(low)} | "
            + (f"{min(lo):.3f} | " if lo else "- | ")
            + (f"{min(hi):.3f} |" if hi else "- |"))
    lines.append("")

    lines.append("## Cells where the pick is slower than the default (beyond both spreads)")
    lines.append("")
    any_slow = False
    for key in sorted(cells):
        for r in cells[key]:
            t = r["times"]
            ratio = slower_than_default(r)
            if ratio:
                any_slow = True
                lines.append(f"- {key[0]} ({key[1]}) {r['shape']}: pick / default {ratio:.3f} "
                             f"(spreads {t['pick']['spread']:.3f}, {t['default']['spread']:.3f}); "
                             f"pick `{r['pick_tactic']}`")
    if not any_slow:
        lines.append("None.")
    lines.append("")

    lines.append("## Cells below 1.0x the peer")
    lines.append("")
    lines.append("Each with the pick's and the peer's spreads and its tune's switch margin; "
                 "`beyond` marks a deficit larger than both.")
    lines.append("")
    any_below = False
    for key in sorted(cells):
        peer_name = peer_of(key[0])
        for r in sorted(cells[key], key=lambda r: r["times"].get(peer_name, {}).get("over_pick", 9)):
            below = below_peer(r, peer_name)
            if not below:
                continue
            any_below = True
            t = r["times"]
            lines.append(f"- {key[0]} ({key[1]}, {key[2]}) {r['shape']}: peer / pick "
                         f"{below[0]:.4f}, {below[1]} (spreads {t['pick']['spread']:.4f}, "
                         f"{t[peer_name]['spread']:.4f}; margin "
                         f"{r.get('tune_margin', 0.0):.3f}); pick `{r['pick_tactic']}`")
    if not any_below:
        lines.append("None.")
    lines.append("")

    lines.append("## Peer / pick by row count (geomean over the shapes)")
    lines.append("")
    rows_all = sorted({fields(r["shape"])["rows"] for rs in cells.values() for r in rs})
    lines.append("| op | numerics | format | " + " | ".join(f"r{n}" for n in rows_all) + " |")
    lines.append("| --- | --- | --- | " + " | ".join("---:" for _ in rows_all) + " |")
    for key in sorted(cells):
        peer_name = peer_of(key[0])
        by_rows = defaultdict(list)
        for r in cells[key]:
            if peer_name in r["times"]:
                by_rows[fields(r["shape"])["rows"]].append(r["times"][peer_name]["over_pick"])
        lines.append(f"| {' | '.join(key)} | "
                     + " | ".join(f"{geomean(by_rows[n]):.2f}" if by_rows[n] else "-"
                                  for n in rows_all) + " |")
    lines.append("")
    return lines, len(cells)


if __name__ == "__main__":
    sys.exit(main())
