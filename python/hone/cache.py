"""The tuning cache, as `hone cache path|verify|clear`.

    hone.cache.path()        # '/home/me/.cache/hone/tuning-cache.json'
    hone.cache.verify()      # [] when clean, else [VerifyItem(problem, key, reason), ...]
    hone.cache.clear()
"""

import ctypes
from collections import namedtuple

from ._lib import call_string, check, lib

VerifyItem = namedtuple("VerifyItem", ["problem", "key", "reason"])


def path():
    """The cache file's path ($HONE_CACHE_DIR, else $XDG_CACHE_HOME/hone, else ~/.cache/hone)."""
    return call_string(lib.hone_cache_path)


def verify():
    """Stale, unrunnable and corrupt findings, judged against each entry's own backend here
    (entries of another device or an absent backend are skipped)."""
    count = ctypes.c_int32(0)
    text = call_string(lambda out, cap, length: lib.hone_cache_verify(ctypes.byref(count), out,
                                                                      cap, length))
    items = []
    for line in text.splitlines():
        problem, key, reason = (line.split("  ", 2) + ["", ""])[:3]
        items.append(VerifyItem(problem, key, reason))
    return items


def clear():
    """Removes the cache file (a corrupt one is kept aside)."""
    check(lib.hone_cache_clear())
