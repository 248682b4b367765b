#!/usr/bin/env python3
"""decode.paged's default kv_chunk and silu_mul's default, priced on model tunes (hone tune
--json reports; the three H200 tunes of Llama-3.1-8B below). Each
decode.paged bucket's triage timed every candidate chunk, interleaved, so the default the
makespan model of decode_paged_default_chunk (decode_paged_config.cpp) would choose under other
constants can be priced offline: the triage median of its chunk over the fastest candidate,
geomean over the buckets.

The model is restated below. Before pricing, the script checks the restatement: with the
constants of the tune's build (64 overhead tokens, two CTA slots per SM on 132 SMs), it must
choose every bucket's recorded default. The buckets are equal-length requests (total_len = batch x
max_len), 8 KV heads, page size 16, 4 warps.

    python3 docs/benchmark_results/2026-12-05-h100-3/scripts/price_h200_defaults.py \
        docs/benchmark_results/2026-12-03-h200-3/call1/tune.json.xz \
        docs/benchmark_results/2026-12-02-h200-3/run1/tuneE.json.xz \
        docs/benchmark_results/2026-12-02-h200-3/run2/tuneF.json.xz

On those three H200 tunes: one slot per SM costs 1.002-1.004x, against 1.014-1.016x for two.

silu_mul: every bucket's triage timed every config; the rule silu_mul_default took (256 threads
of one vector, 8-byte vectors up to 256 rows and 16-byte past) costs 1.002-1.003x the fastest
config, against 1.101-1.107x for the earlier default (the recorded one).
"""
import json
import lzma
import math
import sys

TILE_TOKENS = 16  # kDecodePagedTileTokens
SMS = 132


def items(pages, chunk_pages):
    count = sum(-(-p // chunk_pages) for p in pages)
    return count, max(min(p, chunk_pages) for p in pages)


def makespan(total_tokens, it, hkv, page, slots, overhead):
    count, longest_pages = it
    ctas, longest = hkv * count, longest_pages * page + overhead
    if ctas <= slots:
        return longest
    waves = -(-ctas // slots)
    work = hkv * total_tokens + overhead * ctas
    return min(waves * longest, -(-work // slots) + longest)


def default_chunk(pages, page, hkv, warps, slots, overhead):
    max_pages, total = max(pages), sum(pages) * page
    min_pages = max(page, TILE_TOKENS * warps) // page
    if max_pages <= min_pages:
        return 0
    best_pages = max_pages
    best = makespan(total, items(pages, max_pages), hkv, page, slots, overhead)

    def consider(p):
        nonlocal best, best_pages
        if p < min_pages or p >= max_pages:
            return
        t = makespan(total, items(pages, p), hkv, page, slots, overhead)
        if t < best or (t == best and p > best_pages):
            best, best_pages = t, p

    p = min_pages
    while p < max_pages:
        consider(p)
        p *= 2
    if hkv * items(pages, max_pages)[0] <= slots:
        lo, hi = min_pages, max_pages
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if hkv * items(pages, mid)[0] <= slots:
                hi = mid
            else:
                lo = mid + 1
        consider(lo)
    return 0 if best_pages >= max_pages else best_pages * page


def buckets(path):
    with lzma.open(path, "rt") if path.endswith(".xz") else open(path) as f:
        reports = json.load(f)["reports"]
    for r in reports:
        if r["op"] != "decode.paged":
            continue
        b = {k: int(v) for k, v in (x.split("=") for x in r["bucket"].split(","))}
        med = {c["tactic"]: c["median_s"] for c in r["candidates"]
               if c["status"] == "ok" and c.get("median_s")}
        yield [b["max_len"] // b["page_size"]] * b["batch"], b["page_size"], b["hkv"], \
            r["default"], med


def tactic(chunk):
    return f"decode.paged:kv_chunk={chunk},warps=4"


def silu_rule(rows):
    vec = 4 if rows <= 256 else 8
    return f"silu_mul.bf16:vec={vec},vectors=1,threads=256"


def price_silu(path):
    with lzma.open(path, "rt") if path.endswith(".xz") else open(path) as f:
        reports = [r for r in json.load(f)["reports"] if r["op"] == "silu_mul"]
    if not reports:
        return
    for name, rule in (("recorded default", None), ("taken", silu_rule)):
        costs, better, worse = [], 0, 0
        for r in reports:
            med = {c["tactic"]: c["median_s"] for c in r["candidates"]
                   if c["status"] == "ok" and c.get("median_s")}
            rows = int(r["bucket"].split(",")[0].split("=")[1])
            t = r["default"] if rule is None else rule(rows)
            if t not in med:
                sys.exit(f"{path}: {t} was not a candidate of {r['bucket']}")
            costs.append(med[t] / min(med.values()))
            better += med[t] < med[r["default"]] / 1.02
            worse += med[t] > med[r["default"]] * 1.02
        g = math.exp(sum(map(math.log, costs)) / len(costs))
        print(f"  silu_mul, {name}: {g:.4f} over {len(costs)} buckets; {better} more than 2 % "
              f"faster than the recorded default, {worse} slower")


def main(paths):
    for path in paths:
        price_silu(path)
        data = list(buckets(path))
        if not data:
            print(f"{path}: no decode.paged buckets")
            continue
        wrong = [d for d in data if tactic(default_chunk(d[0], d[1], d[2], 4, 2 * SMS, 64)) != d[3]]
        if wrong:
            sys.exit(f"{path}: the restated model misses {len(wrong)} of {len(data)} defaults")
        print(f"{path}: the restated model reproduces {len(data)} of {len(data)} defaults")
        for per_sm in (2, 1):
            costs, better, worse, missing = [], 0, 0, 0
            for pages, page, hkv, default, med in data:
                t = tactic(default_chunk(pages, page, hkv, 4, per_sm * SMS, 64))
                if t not in med:
                    t, missing = default, missing + 1
                costs.append(med[t] / min(med.values()))
                better += med[t] < med[default] / 1.02
                worse += med[t] > med[default] * 1.02
            g = math.exp(sum(map(math.log, costs)) / len(costs))
            print(f"  {per_sm} slot(s) per SM: {g:.4f} over {len(costs)} buckets; "
                  f"{better} more than 2 % faster than the recorded default, {worse} slower, "
                  f"{missing} not a candidate")


if __name__ == "__main__":
    main(sys.argv[1:])
