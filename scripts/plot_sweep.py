#!/usr/bin/env python3
"""The charts of `hone sweep`, from its sweep.json (PNG, one unit per chart).

    python3 scripts/plot_sweep.py DIR/sweep.json DIR

Writes into DIR:
  step_time.png        step time (us) against context, one line per batch: default dashed,
                       tuned solid, one colour per batch;
  speedup_tuned.png    default us / tuned us against context, one line per batch (> 1: the
                       tuned step is faster);
  speedup_peer.png     peer us / tuned us against context, one line per batch; only when some
                       cell has peer data. With quantized weights against the bf16 peer this is
                       a representation change, and the title says so.
Context is on a log2 axis. Cells that were skipped or failed, or lack peer data, leave a gap.
Exit status: 0 when the charts are written, 2 for a bad sweep.json, 3 when matplotlib is not
installed (hone sweep then warns and keeps its sweep.md and sweep.json).
"""
import json
import textwrap
import os
import sys


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print("plot_sweep.py: cannot read %s (%s)" % (path, e), file=sys.stderr)
        sys.exit(2)
    if not isinstance(doc, dict) or doc.get("format") != "hone.sweep":
        print("plot_sweep.py: %s is not a hone sweep.json (its format field is not "
              "\"hone.sweep\")" % path, file=sys.stderr)
        sys.exit(2)
    return doc


def series(doc, value):
    """{batch: ([context], [value])} over the cells that ran, in context order; value(cell) may
    return None for a gap."""
    out = {}
    for c in doc["cells"]:
        if c.get("status") != "ok":
            continue
        v = value(c)
        if v is None:
            continue
        xs, ys = out.setdefault(c["batch"], ([], []))
        xs.append(c["context"])
        ys.append(v)
    for b, (xs, ys) in out.items():
        order = sorted(range(len(xs)), key=xs.__getitem__)
        out[b] = ([xs[i] for i in order], [ys[i] for i in order])
    return dict(sorted(out.items()))


def subtitle(doc):
    return "%s, %s weights, %s; %s" % (doc["model"], doc["quant"], doc["device"]["model"],
                                       doc["method"])


def context_axis(ax, doc):
    contexts = sorted(set(doc["contexts"]))
    ax.set_xscale("log", base=2)
    ax.set_xlim(contexts[0] / 1.25, contexts[-1] * 1.25)  # every context, with or without data
    ax.set_xticks(contexts)
    ax.set_xticklabels(["%dk" % (c // 1024) if c % 1024 == 0 else str(c) for c in contexts])
    ax.set_xlabel("context (tokens per request)")
    ax.grid(True, which="major", alpha=0.3)


def ratio_chart(plt, doc, value, ylabel, title, path):
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (batch, (xs, ys)) in enumerate(series(doc, value).items()):
        ax.plot(xs, ys, "o-", color=colours[i % len(colours)], label="batch %d" % batch)
    ax.axhline(1.0, color="grey", linewidth=1)
    context_axis(ax, doc)
    ax.set_ylabel(ylabel)
    ax.set_title(textwrap.fill(title, 90) + "\n" + subtitle(doc), fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        print("usage: plot_sweep.py SWEEP.json DIR", file=sys.stderr)
        return 2
    doc = load(argv[1])
    out_dir = argv[2]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sweep.py: matplotlib is not installed (pip install matplotlib); no charts",
              file=sys.stderr)
        return 3
    os.makedirs(out_dir, exist_ok=True)
    written = []

    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    default = series(doc, lambda c: c["default_s"] * 1e6)
    tuned = series(doc, lambda c: c["tuned_s"] * 1e6)
    for i, batch in enumerate(tuned):
        colour = colours[i % len(colours)]
        ax.plot(*default[batch], "o--", color=colour, alpha=0.6, label="batch %d default" % batch)
        ax.plot(*tuned[batch], "o-", color=colour, label="batch %d tuned" % batch)
    context_axis(ax, doc)
    ax.set_ylabel("step time (us)")
    ax.set_title("decode step time: default (dashed) and tuned (solid)\n" + subtitle(doc),
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(out_dir, "step_time.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    path = os.path.join(out_dir, "speedup_tuned.png")
    ratio_chart(plt, doc, lambda c: c["speedup"], "default us / tuned us",
                "speed-up of the tuned step over the default", path)
    written.append(path)

    if any(c.get("speedup_vs_peer") is not None for c in doc["cells"]):
        peer = doc.get("peer") or {}
        title = "speed-up of the tuned step over the peer (%s)" % (peer.get("peer") or "PyTorch")
        if peer.get("representation_change"):
            title = ("peer (bf16 weights) us / tuned (%s) us: a representation change, not a "
                     "kernel speed-up" % doc["quant"])
        path = os.path.join(out_dir, "speedup_peer.png")
        ratio_chart(plt, doc, lambda c: c.get("speedup_vs_peer"), "peer us / tuned us", title,
                    path)
        written.append(path)
    for p in written:
        print("wrote %s" % p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
