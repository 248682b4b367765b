#!/usr/bin/env python3
"""Whether two tunes of the same matrix agree: their picks timed head to head in one run.

For every key both tuning caches hold, with different picks, `hone bench` times A's pick (as the
cached pick, the cache being A) against B's (as the extra tactic) on the bucket's shape,
interleaved in one process. The picks agree when B's median over A's is within the switch margin
of the noise floor: |ratio - 1| <= max(2 %, 3 x the larger spread of the two), the margin a tune
uses to replace a default (docs/benchmarks.md). Equal picks agree without a run. Keys that
`hone bench` cannot time (a chain cell) are listed as not compared. A key that differs names
its likely cause from the two entries: one tune kept the default that the other left at the
switch margin's edge (a ratio above 1 - 3 %), or the two ordered two challengers differently.

With --recheck-samples N, a key judged "differ" is timed once more in a fresh `hone bench` run
of N samples, and that run's verdict stands (the first run's ratio is kept in the report as
`first_ratio`): one noisy run does not make two tunes disagree, and a difference that is real
shows twice.

  scripts/compare_tunes.py A/tuning-cache.json B/tuning-cache.json --hone build/tools/hone/hone \
      --md report.md --json report.json [--budget 300] [--recheck-samples 15]

Exit status: 0 when every compared key agrees, 1 when one does not, 2 on bad input.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MIN_MARGIN = 0.02
NOISE_MULTIPLE = 3.0
# A switch within this of the minimum margin (a ratio above 1 - 3 %) is at the margin's edge.
EDGE = 0.01


def read_entries(path):
    """{key: entry} of a tuning cache file; exits 2 naming the file when it is not one."""
    try:
        with open(path) as f:
            doc = json.load(f)
        entries = doc["entries"]
        return {e["key"]: e for e in entries}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"compare_tunes: {path}: not a tuning cache ({e})", file=sys.stderr)
        sys.exit(2)


def split_key(key):
    """(op without its version, bucket) of 'op@version|bucket|dtype|device'."""
    parts = key.split("|")
    if len(parts) < 4 or "@" not in parts[0]:
        raise ValueError(f"malformed cache key '{key}'")
    return parts[0].split("@")[0], parts[1]


def margin(spread_a, spread_b):
    return max(MIN_MARGIN, NOISE_MULTIPLE * max(spread_a, spread_b))


def head_to_head(hone, cache_a, op, bucket, tactic_b, samples):
    """(median A, spread A, median B, spread B) from one `hone bench` run, or a reason string."""
    with tempfile.TemporaryDirectory(prefix="hone-compare-") as tmp:
        out = os.path.join(tmp, "bench.json")
        env = dict(os.environ, HONE_CACHE_DIR=os.path.dirname(os.path.abspath(cache_a)))
        cmd = [hone, "bench", "--op", op, "--shape", bucket, "--tactic", tactic_b,
               "--samples", str(samples), "--json", out]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(out):
            lines = (run.stderr or run.stdout).strip().splitlines()
            return lines[-1] if lines else f"hone bench exited {run.returncode}"
        with open(out) as f:
            subjects = json.load(f)["subjects"]
    # A subject's label joins the roles it plays ("default+cached", "default+tactic").
    cached = [s for s in subjects if "cached" in s["label"].split("+")]
    extra = [s for s in subjects if "tactic" in s["label"].split("+")]
    if not cached or not extra or any(s["status"] != "ok" for s in cached + extra):
        return "bench did not time both picks: " + ", ".join(
            f"{s['label']} {s['status']} {s.get('reason', '')}".strip() for s in subjects)
    a, b = cached[0], extra[0]
    return a["median_s"], a["spread"], b["median_s"], b["spread"]


def round_robin(keys):
    """The keys one op at a time in turn (each op's in sorted order), so that a run stopped by
    its budget has compared every op about as far."""
    by_op = {}
    for key in sorted(keys):
        by_op.setdefault(split_key(key)[0], []).append(key)
    queues = [by_op[op] for op in sorted(by_op)]
    order = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    return order


def judge(row, result):
    """Sets the row's timings, ratio, margin and verdict from one head-to-head result."""
    ta, sa, tb, sb = result
    ratio = tb / ta
    m = margin(sa, sb)
    row.update(median_a_s=ta, spread_a=sa, median_b_s=tb, spread_b=sb, ratio=ratio, margin=m,
               verdict="agree" if abs(ratio - 1) <= m else "differ")


def cause(a, b):
    """Why two cache entries with different picks may differ, from what each tune recorded: one
    kept the default that the other left at a ratio near the switch margin (a challenger about
    the margin faster is taken or not as the noise falls), or two challengers were ordered
    differently. None where the entries do not say (no default recorded)."""
    default = a.get("default_tactic")
    if default is None or default != b.get("default_tactic"):
        return None
    if a["tactic"] != default and b["tactic"] != default:
        return "two challengers ordered differently"
    switched, name = (b, "B") if a["tactic"] == default else (a, "A")
    ratio = switched.get("ratio")
    if ratio is None:
        return None
    kept = "A" if name == "B" else "B"
    edge = "at the switch margin: " if 1 - ratio < MIN_MARGIN + EDGE else ""
    return f"{edge}{name} took {ratio:.3f} of the default, {kept} kept it"


def compare(entries_a, entries_b, bench, budget_s=None, clock=time.monotonic, recheck=None):
    """Rows of the report, in round-robin order over the ops; `bench(op, bucket, tactic_b)` runs
    one head-to-head. Once `budget_s` seconds have passed, the keys left with different picks
    are listed as not compared. `recheck(op, bucket, tactic_b)`, when given, times a key judged
    "differ" once more, and its verdict stands; a recheck that cannot run leaves the first."""
    rows = []
    start = clock()
    for key in round_robin(set(entries_a) & set(entries_b)):
        a, b = entries_a[key], entries_b[key]
        op, bucket = split_key(key)
        row = {"key": key, "op": op, "bucket": bucket, "pick_a": a["tactic"],
               "pick_b": b["tactic"]}
        if a["tactic"] == b["tactic"]:
            row.update(verdict="same pick")
        elif budget_s is not None and clock() - start >= budget_s:
            row.update(verdict="not compared", reason=f"past the {budget_s:g} s budget")
        else:
            result = bench(op, bucket, b["tactic"])
            if isinstance(result, str):
                row.update(verdict="not compared", reason=result)
            else:
                judge(row, result)
                again = recheck(op, bucket, b["tactic"]) if (
                    recheck is not None and row["verdict"] == "differ") else None
                if again is not None and not isinstance(again, str):
                    first = row["ratio"]
                    judge(row, again)
                    row["first_ratio"] = first
                if row["verdict"] == "differ" and (why := cause(a, b)) is not None:
                    row["cause"] = why
        rows.append(row)
    return rows


def markdown(rows, only_a, only_b):
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    lines = ["# Two tunes head to head", "",
             f"{len(rows)} keys in both: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
             + f"; {only_a} only in A, {only_b} only in B. ratio = B's pick / A's pick, one "
             f"`hone bench` run each; agree: |ratio - 1| <= max({MIN_MARGIN:.0%}, "
             f"{NOISE_MULTIPLE:g} x spread).", "",
             "| key | pick A | pick B | ratio | margin | verdict |",
             "| --- | --- | --- | ---: | ---: | --- |"]
    if any("first_ratio" in r for r in rows):
        lines[2] += (" A key that differed was timed again; the ratio and verdict are the second "
                     "run's, the first run's ratio in brackets.")
    for r in rows:
        if r["verdict"] == "same pick":
            continue
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else "-"
        if "first_ratio" in r:
            ratio += f" ({r['first_ratio']:.3f})"
        m = f"{r['margin']:.3f}" if "margin" in r else "-"
        verdict = r["verdict"] + (f" ({r['reason']})" if "reason" in r else "") + (
            f": {r['cause']}" if "cause" in r else "")
        key = r["key"].replace("|", "\\|")
        lines.append(f"| {key} | {r['pick_a']} | {r['pick_b']} | {ratio} | {m} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache_a")
    parser.add_argument("cache_b")
    parser.add_argument("--hone", default="hone", help="the hone binary")
    parser.add_argument("--samples", type=int, default=9, help="samples per subject (9)")
    parser.add_argument("--md", help="write the Markdown report here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--budget", type=float,
                        help="seconds of head-to-head runs; keys left are listed as not compared")
    parser.add_argument("--recheck-samples", type=int, default=0,
                        help="time a key that differs once more with this many samples; its "
                             "verdict stands (0: no recheck)")
    args = parser.parse_args(argv)
    if args.recheck_samples != 0 and args.recheck_samples < 5:
        print(f"compare_tunes: --recheck-samples {args.recheck_samples} is below 5 (0: no "
              "recheck)", file=sys.stderr)
        return 2
    if args.budget is not None and args.budget <= 0:
        print(f"compare_tunes: --budget {args.budget:g} is not a positive number of seconds",
              file=sys.stderr)
        return 2
    if args.samples < 5:
        print(f"compare_tunes: --samples {args.samples} is below 5", file=sys.stderr)
        return 2
    if os.path.basename(args.cache_a) != "tuning-cache.json":
        print(f"compare_tunes: {args.cache_a}: A must be a cache directory's tuning-cache.json "
              "(hone bench reads its picks from HONE_CACHE_DIR)", file=sys.stderr)
        return 2
    a, b = read_entries(args.cache_a), read_entries(args.cache_b)
    try:
        def bench(samples):
            return lambda op, bucket, tactic: head_to_head(args.hone, args.cache_a, op, bucket,
                                                           tactic, samples)

        rows = compare(a, b, bench(args.samples), args.budget,
                       recheck=bench(args.recheck_samples) if args.recheck_samples else None)
    except ValueError as e:
        print(f"compare_tunes: {e}", file=sys.stderr)
        return 2
    report = markdown(rows, len(set(a) - set(b)), len(set(b) - set(a)))
    sys.stdout.write(report)
    if args.md:
        with open(args.md, "w") as f:
            f.write(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")
    return 1 if any(r["verdict"] == "differ" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
