"""The server and the trainer give freed heap pages back to the OS (glibc's malloc_trim); the server keeps few
malloc arenas."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from transformer import memory
from transformer.cli import app_environment

pytestmark = pytest.mark.skipif(memory._MALLOC_TRIM is None, reason="no glibc malloc_trim here")

# Fill ~200 MiB with 1 KiB blocks, free 19 of every 20 (the survivors pin the heap: no automatic trim at its top),
# then print the resident size before and after trim().
SCRIPT = textwrap.dedent("""
    import sys
    from transformer import memory

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
                         cwd=memory.__file__.rsplit("/transformer/", 1)[0]).stdout
    before, after, _ = map(float, out.split())
    assert before - after > 100, (before, after)  # MiB given back


# Eight threads allocate at the same time (blocks over pymalloc's 512 bytes go to malloc), then glibc's
# malloc_info lists one <heap> per arena in use.
ARENAS_SCRIPT = textwrap.dedent("""
    import ctypes, ctypes.util, sys, threading

    together = threading.Barrier(8)

    def work():
        blocks = [bytearray(4096) for _ in range(500)]
        together.wait()
        return blocks

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fopen.restype = ctypes.c_void_p
    stream = ctypes.c_void_p(libc.fopen(sys.argv[2].encode(), b"w"))
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(sys.argv[2]).read().count("<heap nr="))
""")


def arenas_in_use(env: dict, tmp_path) -> int:
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    out = subprocess.run([sys.executable, "-c", ARENAS_SCRIPT, "x", str(tmp_path / "malloc.xml")], env=environment,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return int(out)


def test_the_servers_arena_limit_keeps_eight_threads_in_two_arenas(tmp_path):
    assert arenas_in_use({}, tmp_path) > 2  # glibc's default: an arena per thread, up to 8 per core
    assert arenas_in_use(app_environment(), tmp_path) <= 2  # what attention-explorer gives the server


def test_the_trimming_thread_starts_once():
    started = memory.start_trimming(every=3600)
    assert memory.start_trimming(every=3600) is False
    assert started or memory._started.is_set()
    assert any(t.name == "malloc-trim" and t.daemon for t in threading.enumerate())


# A fresh process trains a tiny run, with malloc_trim counted (a wrapper around the ctypes function) and the
# trimming thread's period shortened; it prints whether malloc_trim ran, whether the thread lives, and how many full
# collections that thread ran.
TRAINING_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from transformer import memory
    from transformer.training.loop import Trainer

    calls = []
    real = memory._MALLOC_TRIM
    memory._MALLOC_TRIM = lambda pad: calls.append(pad) or real(pad)
    memory.TRAINING_TRIM_EVERY = 0.05
    collected = []  # full collections run by the trimming thread
    real_collect = memory.gc.collect
    memory.gc.collect = lambda *a: (threading.current_thread().name == "malloc-trim" and collected.append(a)) \
        or real_collect(*a)
    list(Trainer(sys.argv[1]).fit())
    time.sleep(0.3)
    names = [t.name for t in threading.enumerate() if t.daemon]
    print(len(calls) > 0, "malloc-trim" in names, len(collected))
""")


def test_a_training_run_trims_its_heap_without_collecting(tmp_path):
    from tests.training.test_training import WORDS, tiny_spec  # the tiny corpus and run of those tests
    from transformer.training.run import create_run

    corpus = tmp_path / "tiny.tsv"
    corpus.write_text("\n".join(f"the {en} {en}\tle {fr} {fr}" for en, fr in WORDS.items()) * 30, encoding="utf-8")
    root = create_run(tmp_path / "run", tiny_spec(corpus, max_steps=3, eval_every=3))
    out = subprocess.run([sys.executable, "-c", TRAINING_SCRIPT, str(root)], capture_output=True, text=True,
                         timeout=120, check=True, cwd=memory.__file__.rsplit("/transformer/", 1)[0]).stdout
    trimmed, thread, collections = out.split()
    assert trimmed == "True" and thread == "True"
    assert collections == "0"  # the trainer's thread never runs a full garbage collection
