"""The server gives freed heap pages back to the OS (glibc's malloc_trim)."""

import subprocess
import sys
import textwrap
import threading

import pytest

from ui import memory

pytestmark = pytest.mark.skipif(memory._MALLOC_TRIM is None, reason="no glibc malloc_trim here")

# Fill ~200 MiB with 1 KiB blocks, free 19 of every 20 (the survivors pin the heap: no automatic trim at its top),
# then print the resident size before and after trim().
SCRIPT = textwrap.dedent("""
    import sys
    from ui import memory

    def rss():
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024

    blocks = [bytes(1000) + bytes([i % 256]) for i in range(200_000)]
    survivors = blocks[::20]
    del blocks
    before = rss()
    assert memory.trim()
    print(before, rss(), len(survivors))
""")


def test_trim_returns_freed_pages_to_the_os():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True,
                         cwd=memory.__file__.rsplit("/ui/", 1)[0]).stdout
    before, after, _ = map(float, out.split())
    assert before - after > 100, (before, after)  # MiB given back


def test_the_trimming_thread_starts_once():
    started = memory.start_trimming(every=3600)
    assert memory.start_trimming(every=3600) is False
    assert started or memory._started.is_set()
    assert any(t.name == "malloc-trim" and t.daemon for t in threading.enumerate())
