"""Every test gets its own empty cache directory, set before the library reads it. The `peers`
fixture imports the torch peer scripts' modules (bench/peers) for their host tests."""
import importlib
import importlib.util
import os
import pathlib
import sys
import tempfile
import types

import pytest

_dir = tempfile.mkdtemp(prefix="hone-pytest-")
os.environ["HONE_CACHE_DIR"] = _dir
os.environ.pop("HONE_CACHE", None)
os.environ.pop("HONE_AUTOTUNE", None)

PEERS = pathlib.Path(__file__).resolve().parents[2] / "bench" / "peers"
PEER_MODULES = ("peer_timing", "decode_step_torch")


def _torch_stub():
    """sys.modules entries for a torch that only imports: what the peer modules read at import
    time (dtypes, torch.nn.functional), a CPU thread count and versions, and a torch.cuda whose
    Event a test replaces."""
    torch = types.ModuleType("torch")
    for name in ("bfloat16", "float16", "float32", "float64", "int32", "int64"):
        setattr(torch, name, "torch." + name)
    torch.__version__ = "stub"
    torch.version = types.SimpleNamespace(cuda=None)
    torch.get_num_threads = lambda: 1
    torch.cuda = types.SimpleNamespace(Event=None)
    torch.nn = types.ModuleType("torch.nn")
    torch.nn.functional = types.ModuleType("torch.nn.functional")
    return {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional}


@pytest.fixture
def peers(monkeypatch):
    """The peer modules, freshly imported (namespace: timing, step, torch_stub), over the
    installed torch or, without one, over _torch_stub() (torch_stub True)."""
    try:
        import torch  # noqa: F401
        stub = False
    except ImportError:
        for name, module in _torch_stub().items():
            monkeypatch.setitem(sys.modules, name, module)
        stub = True
    monkeypatch.syspath_prepend(str(PEERS))
    for name in PEER_MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield types.SimpleNamespace(timing=importlib.import_module("peer_timing"),
                                step=importlib.import_module("decode_step_torch"),
                                torch_stub=stub)
    for name in PEER_MODULES:
        sys.modules.pop(name, None)


def load_script(name):
    """scripts/NAME.py imported as a module, for the host tests of the repository's scripts."""
    path = pathlib.Path(__file__).resolve().parents[2] / "scripts" / (name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
