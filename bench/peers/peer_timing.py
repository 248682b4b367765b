"""What the torch peer scripts (bench/peers/*_torch.py) share: output comparison, CUDA-graph
capture and replay timing, the interleaved sampling of hone and torch at one batch size, the
SDPA backends a call runs on, and the documents' header and writers.

    import peer_timing
    batch, times = peer_timing.time_interleaved({"hone": run_hone, "torch": run_torch},
                                                copies, samples)
    t_hone = statistics.median(times["hone"])

One sample is one CUDA-graph replay of B launches (B sized so a sample lasts >= SAMPLE_SECONDS),
timed with events; each launch reads input copy i % copies, so that the L2 stays cold when
`copies` is rotation_copies(): ceil(8 x L2 / bytes per launch) + 1, hone's rotation_count().
"""
import datetime
import json
import math
import os
import platform
import statistics
import sys
import warnings

import torch

SAMPLE_SECONDS = 2e-3

# hone's kRotationLlcMultiple (include/hone/measurement.h): the copies cycled through between two
# uses of one copy span this many times the L2; twice left part of it in the H200's L2.
ROTATION_LLC_MULTIPLE = 8


def rotation_copies(l2_bytes, launch_bytes):
    """Input copies for a cold L2: ceil(ROTATION_LLC_MULTIPLE x L2 / bytes per launch) + 1."""
    return math.ceil(ROTATION_LLC_MULTIPLE * l2_bytes / launch_bytes) + 1


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


def time_graph(graph, replays=1):
    """[seconds] `replays` back-to-back replays of `graph`, between two CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e-3  # [seconds]


def repeats_to_fill(seconds, each, at_least, at_most=math.inf):
    """How many repeats of `each` seconds (floored at 1e-7) fill `seconds`, clamped to
    [at_least, at_most]."""
    return max(at_least, min(at_most, math.ceil(seconds / max(each, 1e-7))))


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
    batch = repeats_to_fill(SAMPLE_SECONDS, per_launch, copies, 2000)
    graphs = {name: capture(fn, batch, copies, stream) for name, fn in sides.items()}
    times = {name: [] for name in sides}
    names = list(sides)
    for s in range(samples):
        for name in (names if s % 2 == 0 else names[::-1]):
            times[name].append(time_graph(graphs[name]) / batch)
    del graphs
    return batch, times


def sdpa_backends_accepting(attention):
    """The SDPA backends (flash_attention, cudnn_attention, efficient_attention, math: those
    this torch has) that accept `attention()`, a call of F.scaled_dot_product_attention that
    returns its output: each tried alone, its refusal's warning silenced, and a CUDA output
    synchronised so that a failed launch counts as a refusal. For the record; torch still
    picks."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    accepting = []
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION", "MATH"):
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            continue
        try:
            with warnings.catch_warnings(), sdpa_kernel([backend]):
                warnings.simplefilter("ignore")  # each refusal warns why
                out = attention()
            if out.is_cuda:
                torch.cuda.synchronize()
            accepting.append(name.lower())
        except RuntimeError:
            pass
    return accepting


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


def torch_header(stem, device):
    """The fields every peer document opens with, hone's aside: its format (hone.peer.`stem`),
    the date, the torch.device `device` (a CUDA device's name and L2 size; on the CPU the
    processor and torch's thread count, l2_bytes None), and torch's and CUDA's versions."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        name, l2_bytes = props.name, props.L2_cache_size
    else:
        name = "cpu (%s, %d threads)" % (platform.processor() or platform.machine(),
                                         torch.get_num_threads())
        l2_bytes = None
    return {
        "format": "hone.peer." + stem, "format_version": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": name, "l2_bytes": l2_bytes, "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }


def doc_header(stem, hone, env_names=()):
    """torch_header of CUDA device 0, then hone's version and device, and the HONE_* variables
    of `env_names` that are set."""
    doc = torch_header(stem, torch.device("cuda", 0))
    doc.update({"hone": hone.version(), "hone_device": hone.device_info("cuda")})
    env = {v: os.environ[v] for v in env_names if v in os.environ}
    if env_names:
        doc["hone_env"] = env
    return doc


def write_text(path, text):
    """Writes `text` to `path`, creating its folder."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def write_json(path, doc):
    """Writes `doc` to `path` as JSON (indented by 2, a newline at the end), creating its
    folder."""
    write_text(path, json.dumps(doc, indent=2) + "\n")


def write_results(out_dir, stem, doc, table):
    """Writes `stem`.json (doc) and `stem`.md (table) to out_dir, creating it."""
    write_json(os.path.join(out_dir, stem + ".json"), doc)
    write_text(os.path.join(out_dir, stem + ".md"), table)

