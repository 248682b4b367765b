#!/usr/bin/env python3
"""The SASS lines with the most warp-stall samples, from an Nsight Compute source page.

    ncu -i REPORT.ncu-rep --page source --print-source sass --csv > source.csv
    scripts/ncu_stalls.py source.csv [--top 40]

Prints the stall-sample columns the page has, the total per column over the kernel, then the
--top lines by all-samples count, each with its opcode text and its non-zero per-reason counts.
The column names differ between ncu versions, so the sampling columns are found by name: the
all-samples column contains "Warp Stall Sampling (All", per-reason columns start with "stall_"
or contain "Stall" (besides the two sampling totals).
"""
import argparse
import csv
import sys


def number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def read_rows(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.strip()]
    # ncu prints notes ("==PROF==" and the like) before the header: start at the first line
    # that names the source column.
    start = next((i for i, line in enumerate(lines) if '"Source"' in line or "Source," in line), None)
    if start is None:
        raise ValueError(f"{path}: no header with a Source column")
    return list(csv.DictReader(lines[start:]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    try:
        rows = read_rows(args.csv)
    except (OSError, ValueError) as e:
        print(f"ncu_stalls: {e}", file=sys.stderr)
        return 1
    if not rows:
        print(f"ncu_stalls: {args.csv}: no rows", file=sys.stderr)
        return 1
    names = list(rows[0].keys())
    total_col = next((n for n in names if "Warp Stall Sampling (All" in n), None)
    if total_col is None:
        print(f"ncu_stalls: {args.csv}: no 'Warp Stall Sampling (All Samples)' column; columns: "
              + ", ".join(names), file=sys.stderr)
        return 1
    reasons = [n for n in names if n != total_col and "Warp Stall Sampling" not in n and
               (n.startswith("stall_") or "Stall" in n or "stall" in n)]
    totals = {n: sum(number(r.get(n)) for r in rows) for n in [total_col] + reasons}
    all_samples = totals[total_col] or 1.0
    print(f"{len(rows)} SASS lines, {totals[total_col]:.0f} stall samples in all")
    for n in sorted(reasons, key=lambda n: -totals[n]):
        if totals[n] > 0:
            print(f"  {n}: {totals[n]:.0f} ({100 * totals[n] / all_samples:.1f} %)")
    print()
    source_col = "Source" if "Source" in names else names[1]
    address_col = next((n for n in names if "Address" in n), names[0])
    top = sorted(rows, key=lambda r: -number(r.get(total_col)))[: args.top]
    for r in top:
        count = number(r.get(total_col))
        if count <= 0:
            break
        parts = [f"{n}={number(r.get(n)):.0f}" for n in reasons if number(r.get(n)) > 0]
        print(f"{r.get(address_col, '')}  {100 * count / all_samples:5.1f} %  "
              f"{(r.get(source_col) or '').strip()[:70]}")
        if parts:
            print("        " + " ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
