"""bench/peers/peer_timing.py on the host: the replay timer (fake CUDA events), the repeat count,
the document header on the CPU, the writers, and (with torch) the SDPA backend probe."""
import datetime
import json
import types
import warnings

import pytest


class FakeEvent:
    """A CUDA event that logs what is done to it; elapsed_time is 1.5 ms a replay logged
    between the two events."""

    def __init__(self, log, enable_timing):
        assert enable_timing
        self.log, self.name = log, "end" if "start.new" in log else "start"
        log.append(self.name + ".new")

    def record(self):
        self.log.append(self.name + ".record")

    def synchronize(self):
        self.log.append(self.name + ".synchronize")

    def elapsed_time(self, end):
        first, last = self.log.index("start.record"), self.log.index("end.record")
        return 1.5 * self.log[first:last].count("replay")


def test_time_graph_times_every_replay_between_two_events(peers, monkeypatch):
    log = []
    monkeypatch.setattr(peers.timing.torch.cuda, "Event",
                        lambda enable_timing: FakeEvent(log, enable_timing))
    graph = types.SimpleNamespace(replay=lambda: log.append("replay"))
    assert peers.timing.time_graph(graph, 4) == pytest.approx(4 * 1.5e-3)
    assert log == ["start.new", "end.new", "start.record"] + ["replay"] * 4 + [
        "end.record", "end.synchronize"]
    log.clear()
    assert peers.timing.time_graph(graph) == pytest.approx(1.5e-3)  # one replay by default
    assert log.count("replay") == 1


def test_repeats_to_fill_rounds_up_and_clamps(peers):
    fill = peers.timing.repeats_to_fill
    assert fill(0.02, 0.003, 3) == 7  # ceil(6.67)
    assert fill(0.02, 0.001, 3) == 20
    assert fill(0.02, 0.1, 3) == 3  # at least
    assert fill(2e-3, 1e-6, 5, 2000) == 2000  # at most
    assert fill(1e-3, 0.0, 1) == 10000  # each floored at 1e-7 s


def test_torch_header_on_the_cpu_names_the_processor_and_no_l2(peers):
    doc = peers.timing.torch_header("some_peer", types.SimpleNamespace(type="cpu"))
    assert list(doc) == ["format", "format_version", "date", "device", "l2_bytes", "torch", "cuda"]
    assert doc["format"] == "hone.peer.some_peer" and doc["format_version"] == 1
    assert doc["device"].startswith("cpu (") and doc["device"].endswith(" threads)")
    assert doc["l2_bytes"] is None
    assert doc["torch"] == peers.timing.torch.__version__
    date = datetime.datetime.fromisoformat(doc["date"])
    assert date.utcoffset() == datetime.timedelta(0)


def test_writers_create_the_folder_and_end_json_with_a_newline(peers, tmp_path):
    doc = {"format": "hone.peer.x", "results": [{"a": 1.5, "b": None}], "note": "µs"}
    path = tmp_path / "new" / "deeper" / "doc.json"
    peers.timing.write_json(str(path), doc)
    assert path.read_text() == json.dumps(doc, indent=2) + "\n"
    assert json.loads(path.read_text()) == doc
    peers.timing.write_text(str(tmp_path / "other" / "t.md"), "| a |\n")
    assert (tmp_path / "other" / "t.md").read_text() == "| a |\n"
    peers.timing.write_results(str(tmp_path / "out"), "stem", doc, "# table\n")
    assert json.loads((tmp_path / "out" / "stem.json").read_text()) == doc
    assert (tmp_path / "out" / "stem.md").read_text() == "# table\n"


def test_sdpa_backends_accepting_drops_a_refusal_and_silences_its_warning(peers):
    if peers.torch_stub:
        pytest.skip("torch is not installed")
    torch = peers.timing.torch
    q = torch.zeros(1, 2, 1, 8)
    kv = torch.zeros(1, 2, 4, 8)
    calls = []

    def attention():  # refuses the first backend tried, as a backend refuses: warn, raise
        calls.append(1)
        if len(calls) == 1:
            warnings.warn("refused")
            raise RuntimeError("no kernel")
        return torch.nn.functional.scaled_dot_product_attention(q, kv, kv)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        accepting = peers.timing.sdpa_backends_accepting(attention)
    assert caught == []
    known = ["flash_attention", "cudnn_attention", "efficient_attention", "math"]
    tried = [n for n in known if hasattr(torch.nn.attention.SDPBackend, n.upper())]
    assert len(calls) == len(tried)
    assert tried[0] not in accepting  # the refusal
    assert "math" in accepting and accepting == [n for n in tried if n in accepting]
