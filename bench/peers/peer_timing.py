"""Timing shared by the torch peer scripts (gemv_bf16_torch.py, qmv_affine_torch.py): output
comparison, CUDA-graph capture and replay timing, and the interleaved sampling of hone and
torch at one batch size.

    import peer_timing
    batch, times = peer_timing.time_interleaved({"hone": run_hone, "torch": run_torch},
                                                copies, samples)
    t_hone = statistics.median(times["hone"])

One sample is one CUDA-graph replay of B launches (B sized so a sample lasts >= SAMPLE_SECONDS),
timed with events; each launch reads input copy i % copies, so that the L2 stays cold when
`copies` is ceil(2 x L2 / bytes per launch) + 1.
"""
import datetime
import json
import math
import os
import statistics
import sys

import torch

SAMPLE_SECONDS = 2e-3


def relative_l2(a, b):
    a, b = a.double(), b.double()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-30)).item()


def capture(launches, batch, copies, stream):
    """A CUDA graph of `batch` launches cycling through `copies` input sets, captured on
    `stream`, where the warm-up ran too (hone's per-stream state then exists)."""
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in range(copies):  # warm-up outside capture (lazy init, workspaces, dispatch)
            launches(c)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for i in range(batch):
            launches(i % copies)
    torch.cuda.synchronize()
    return graph


def time_graph(graph):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3  # [seconds]


def spread(values):
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / statistics.median(values)


def time_interleaved(sides, copies, samples):
    """`sides`: name -> launch(copy). Returns (batch, {name: [seconds] per launch, one per
    sample}), the sides sampled in turn, in an order that alternates so that none always goes
    first."""
    # Batch: estimate one launch from a short graph, then size a sample to SAMPLE_SECONDS.
    stream = torch.cuda.Stream()
    probe = {name: capture(fn, copies, copies, stream) for name, fn in sides.items()}
    per_launch = min(min(time_graph(g) for _ in range(3)) / copies for g in probe.values())
    del probe
    batch = max(copies, min(2000, math.ceil(SAMPLE_SECONDS / max(per_launch, 1e-7))))
    graphs = {name: capture(fn, batch, copies, stream) for name, fn in sides.items()}
    times = {name: [] for name in sides}
    names = list(sides)
    for s in range(samples):
        for name in (names if s % 2 == 0 else names[::-1]):
            times[name].append(time_graph(graphs[name]) / batch)
    del graphs
    return batch, times


def measure_read_bandwidth():
    """[bytes/s] torch.sum over 2 GiB of float32 (a streaming read), CUDA-graph replays of 5
    sums, median of 7."""
    buf = torch.ones(512 * 1024 * 1024, device="cuda", dtype=torch.float32)
    out = torch.empty((), device="cuda", dtype=torch.float32)
    graph = capture(lambda c: torch.sum(buf, dim=0, out=out), 5, 1, torch.cuda.Stream())
    t = statistics.median(time_graph(graph) / 5 for _ in range(7))
    return buf.numel() * 4 / t


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def require_cuda(script, hone):
    """Exits naming `script` unless torch sees a CUDA device and libhone.so a CUDA backend."""
    if not torch.cuda.is_available():
        sys.exit("%s: no CUDA device" % script)
    if "cuda" not in hone.backends():
        sys.exit("%s: libhone.so has no usable CUDA backend (backends: %s)" %
                 (script, ",".join(hone.backends())))


def doc_header(stem, hone, env_names=()):
    """The fields every peer document opens with: its format (hone.peer.`stem`), the date, the
    device, torch's and hone's versions, and the HONE_* variables of `env_names` that are set."""
    props = torch.cuda.get_device_properties(0)
    doc = {
        "format": "hone.peer." + stem, "format_version": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": props.name, "l2_bytes": props.L2_cache_size, "torch": torch.__version__,
        "cuda": torch.version.cuda, "hone": hone.version(),
        "hone_device": hone.device_info("cuda"),
    }
    env = {v: os.environ[v] for v in env_names if v in os.environ}
    if env_names:
        doc["hone_env"] = env
    return doc


def write_results(out_dir, stem, doc, table):
    """Writes `stem`.json (doc) and `stem`.md (table) to out_dir, creating it."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(doc, f, indent=2)
    with open(os.path.join(out_dir, stem + ".md"), "w") as f:
        f.write(table)

