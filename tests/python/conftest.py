"""Every test gets its own empty cache directory, set before the library reads it."""
import os
import tempfile

_dir = tempfile.mkdtemp(prefix="hone-pytest-")
os.environ["HONE_CACHE_DIR"] = _dir
os.environ.pop("HONE_CACHE", None)
os.environ.pop("HONE_AUTOTUNE", None)
