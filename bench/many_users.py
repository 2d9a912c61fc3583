"""Four browser users at once against one server while a training run goes: latencies and the server's memory.

    python bench/many_users.py                # starts the server, a tiny training run and 4 Playwright pages
    python bench/many_users.py --no-train     # without the training run
    python bench/many_users.py --train-threads 2 --train-nice 0   # a 2-thread run at full priority

Needs Debian's chromium (see tests/browser/conftest.py). Not a test: it takes minutes and its numbers depend on the
machine; BENCHMARKS.md quotes its output. What it does, all users at the same time (asyncio, one browser):

1. each opens Translate and translates 5 (--sentences) test-split sentences of 10 to 60 words (greedy), the
   last 4 timed from Enter to the page's last change (PAGE_CLOCK: the translation and every chart drawn); the CPU
   the server, the browsers and the training run used meanwhile is printed (the browsers share this machine's
   cores, a class's do not);
2. each opens Decode step by step with a 66-word sentence and beam 4, presses Next 3 times and Run to end,
   each click timed the same way;
3. each pastes a sentence at the app's limit (MAX_SOURCE_TOKENS pieces) with beam 8: timed, and whether the
   page showed "Waiting for a free slot";
4. they leave (their tabs close); the server's memory is sampled for 45 s more.

A user sends the next request once the page is complete and has kept still for QUIET seconds (reading time).

The server's resident memory (VmRSS) is sampled every 0.2 s throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.async_api import async_playwright, expect  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
IDLE = '[data-testid="stStatusWidget"]'  # "Running…" while a script run is in progress
RESULT = '[data-testid="stMarkdown"] h3'  # the translation (st.subheader's h3 is an stHeading)
# The page's own clock: when the user's last Enter or click reached it, and when its DOM last changed (the chart's
# tooltip aside: a chart under the mouse pointer draws one). A response is complete once the page's script
# run is over (Streamlit's `data-test-script-state`) and the page has kept still for QUIET seconds; its time is from
# the action to the last change. The status widget alone does not tell: Streamlit shows it only after a run's first
# 0.5 s, and the charts are drawn after the run's last message (a page's first chart also loads Vega's module).
# And Playwright's waits poll (after the first 0.3 s every 0.5 s), so the time
# at which they return is late or, when a run ends before its status shows, early.
PAGE_CLOCK = """
window.__clock = {action: 0, changed: 0};
document.addEventListener("keydown", e => { if (e.key === "Enter") window.__clock.action = performance.now(); }, true);
document.addEventListener("click", () => { window.__clock.action = performance.now(); }, true);
new MutationObserver(records => {
    const drawn = records.some(r => {
        const element = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        return !(element && element.closest("#vg-tooltip-element"));
    });
    if (drawn) window.__clock.changed = performance.now();
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
"""
QUIET = 1.0  # s
SCRIPT_DONE = "document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState === 'notRunning'"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.samples, self.marks, self.stop = pid, [], {}, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), rss_mib(self.pid)))
            except OSError:
                return
            time.sleep(0.2)

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic()

    def peak(self, start: str, end: str) -> float:
        return max((m for t, m in self.samples if self.marks[start] <= t <= self.marks[end]), default=0.0)

    def now(self) -> float:
        return self.samples[-1][1]


def cpu_seconds(server: int, trainer: int | None) -> dict[str, float]:
    """CPU seconds used so far by the server, the browsers (on this machine too, unlike a class's) and the
    training run, from /proc: who took the cores while the users waited."""
    ticks = os.sysconf("SC_CLK_TCK")
    used = {"server": 0.0, "browsers": 0.0, "training": 0.0}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        pid, pgid, seconds = int(proc.name), int(fields[2]), (int(fields[11]) + int(fields[12])) / ticks
        group = ("server" if pid == server else "training" if trainer is not None and pgid == trainer
                 else "browsers" if b"chrom" in command or b"headless_shell" in command else None)
        if group:
            used[group] += seconds
    return used


def sentences(count: int) -> tuple[list[str], str, str]:
    """`count` test-split verses of 10 to 60 words, one of about 66 words, and one at the app's source limit."""
    from transformer.data.load import load_corpus
    from transformer.data.spec import CorpusSpec
    from transformer.decoding.translate import Translator
    from ui.shared.models.translation_gate import MAX_SOURCE_TOKENS

    translator = Translator()
    spec = CorpusSpec.from_dict(translator.checkpoint.metadata["corpus"]).for_evaluation()
    verses = [s for s, _ in load_corpus(spec).test]
    short = [v for v in verses if 10 <= len(v.split()) <= 60][:count]
    long66 = " ".join(" ".join(verses[:10]).split()[:66])
    words = " ".join(verses[:40]).split()
    n = max(k for k in range(1, 200) if len(translator.prepare(" ".join(words[:k])).ids) <= MAX_SOURCE_TOKENS)
    return short, long66, " ".join(words[:n])


def start_server(runs: Path, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    env = {"MALLOC_ARENA_MAX": "2", **os.environ, "EXPLORER_RUNS": str(runs), "PYTHONUNBUFFERED": "1"}  # README
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(log.read_text())


async def settled(page, timeout: float = 120_000) -> None:
    """Wait until the page's script run is over (the status widget hides)."""
    await page.wait_for_timeout(150)
    await expect(page.locator(IDLE)).to_be_hidden(timeout=timeout)


class Times:
    """Response times of one kind of request: by the page's clock (from the Enter or click to the page's last
    change) and as the waits in this script saw them (their polling included)."""

    def __init__(self):
        self.page: list[float] = []
        self.polled: list[float] = []

    async def add(self, page, start: float) -> None:
        """After the waits returned: the polled time, and the page's (see PAGE_CLOCK)."""
        self.polled.append(time.monotonic() - start)
        changed = None
        while (changed != (changed := await page.evaluate("window.__clock.changed"))
               or not await page.evaluate(SCRIPT_DONE)):
            await page.wait_for_timeout(QUIET * 1000)
        self.page.append((changed - await page.evaluate("window.__clock.action")) / 1000)

    def summary(self, what: str) -> str:
        return (f"{len(self.page)} {what}, p50 {statistics.median(self.page):.2f} s, p90 {pct(self.page, 0.9):.2f} s, "
                f"max {max(self.page):.2f} s (as polled: p50 {statistics.median(self.polled):.2f}, "
                f"p90 {pct(self.polled, 0.9):.2f} s)")


async def translate_user(page, url: str, texts: list[str], times: Times) -> None:
    await page.goto(url + "/Translate?text=" + urllib.parse.quote(texts[0]))
    await page.locator(RESULT).first.wait_for(timeout=180_000)
    box = page.get_by_label(re.compile("sentence"))
    for text in texts[1:]:
        before = await page.locator(RESULT).first.inner_text()
        await box.fill(text)
        start = time.monotonic()
        await box.press("Enter")
        await expect(page.locator(RESULT).first).not_to_have_text(before, timeout=180_000)
        await settled(page)
        await times.add(page, start)


async def step_user(page, url: str, text: str, times: Times) -> None:
    await page.goto(url + "/Step_by_step?search=beam&beam=4&text=" + urllib.parse.quote(text))
    await page.get_by_role("button", name="Next").wait_for(timeout=180_000)
    await settled(page)
    for name in ("Next", "Next", "Next", "Run to end"):
        start = time.monotonic()
        await page.get_by_role("button", name=name).click()
        await settled(page, 300_000)
        await times.add(page, start)


async def limit_user(page, text: str, times: Times, waited: set[int], shot: Path) -> None:
    await page.get_by_role("link", name="Translate & Attention").first.click()
    box = page.get_by_label(re.compile("sentence"))
    await box.wait_for(timeout=60_000)
    await settled(page)
    await page.get_by_text("beam", exact=True).click()
    await page.wait_for_timeout(300)
    await settled(page)
    before = await page.locator(RESULT).first.inner_text()
    await box.fill(text)
    start = time.monotonic()
    await box.press("Enter")
    note, result = page.get_by_text("Waiting for a free slot"), page.locator(RESULT).first
    while await result.inner_text() == before:
        if await note.count():
            waited.add(id(page))
            if not shot.exists():
                await page.screenshot(path=str(shot))
        await page.wait_for_timeout(100)
    await settled(page)
    await times.add(page, start)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def run(args) -> None:
    n = args.sentences
    short, long66, at_limit = sentences(args.users * n)
    work = Path(tempfile.mkdtemp(prefix="many-users-"))
    runs = work / "runs"
    runs.mkdir()
    trainer = None
    if args.train:
        trainer = subprocess.Popen([sys.executable, "-m", "transformer.training", "--corpus", "teaching", "--preset",
                                    "tiny", "--out", str(runs / "load"), "--threads", str(args.train_threads),
                                    "--max-steps", "100000", "--nice", str(args.train_nice)],
                                   cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
    server, url = start_server(runs, work / "server.log")
    sampler = Sampler(server.pid)
    sampler.start()
    sampler.mark("start")
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            contexts = [await browser.new_context(viewport={"width": 1280, "height": 1400}) for _ in range(args.users)]
            for context in contexts:
                await context.add_init_script(PAGE_CLOCK)
            pages = [await c.new_page() for c in contexts]
            errors: list[str] = []
            for page in pages:
                page.on("pageerror", lambda e: errors.append(str(e)))
            first = await contexts[0].new_page()  # one user first: loads the model, the idle level
            await first.goto(url + "/Translate?text=" + urllib.parse.quote(short[0]))
            await first.locator(RESULT).first.wait_for(timeout=180_000)
            await first.close()
            await asyncio.sleep(3)
            sampler.mark("idle")
            idle = sampler.now()
            tr_times = Times()
            cpu_before, wall = cpu_seconds(server.pid, trainer and trainer.pid), time.monotonic()
            await asyncio.gather(*(translate_user(pg, url, short[i * n:(i + 1) * n] or short[:n], tr_times)
                                   for i, pg in enumerate(pages)))
            wall = time.monotonic() - wall
            cpu = {k: v - cpu_before[k] for k, v in cpu_seconds(server.pid, trainer and trainer.pid).items()}
            sampler.mark("translated")
            step_times = Times()
            await asyncio.gather(*(step_user(pg, url, long66, step_times) for pg in pages))
            sampler.mark("stepped")
            limit_times = Times()
            waited: set[int] = set()
            shot = work / "waiting.png"
            await asyncio.gather(*(limit_user(pg, at_limit, limit_times, waited, shot) for pg in pages))
            sampler.mark("limit")
            exceptions = sum([await pg.locator('[data-testid="stException"]').count() for pg in pages])
            for c in contexts:
                await c.close()
            await browser.close()
        sampler.mark("left")
        await asyncio.sleep(args.after)
        sampler.mark("end")
    finally:
        sampler.stop.set()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
        if trainer is not None:
            os.killpg(trainer.pid, signal.SIGTERM)
            trainer.wait(timeout=60)
    training = f"on ({args.train_threads} threads, nice {args.train_nice})" if args.train else "off"
    print(f"{args.users} users, training run {training}, {os.cpu_count()} cores; "
          f"load average at the end {os.getloadavg()[0]:.1f}")
    print(f"translate, {len(short[0].split())}-60 words, greedy: {tr_times.summary('requests')}")
    print(f"  CPU seconds over those {wall:.0f} s (of {wall * os.cpu_count():.0f} core-seconds): "
          + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items()))
    print(f"step by step, 66 words, beam 4: {step_times.summary('clicks')}")
    print(f"at the limit ({len(at_limit.split())} words), beam 8, all at once: "
          + ", ".join(f"{t:.1f}" for t in sorted(limit_times.page)) + f" s; {len(waited)} saw 'Waiting for a free slot'"
          + (f" (screenshot {shot})" if shot.exists() else ""))
    print(f"server memory: idle (model loaded) {idle:.0f} MiB; peak translating "
          f"{sampler.peak('idle', 'translated'):.0f}"
          f", stepping {sampler.peak('translated', 'stepped'):.0f}, at the limit {sampler.peak('stepped', 'limit'):.0f}"
          f" MiB; {args.after:.0f} s after they left {sampler.now():.0f} MiB")
    print(f"page errors: {len(errors)}, exceptions on pages: {exceptions}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--no-train", dest="train", action="store_false")
    parser.add_argument("--sentences", type=int, default=5,
                        help="sentences each user translates (the first loads the page, the others are timed)")
    parser.add_argument("--train-threads", type=int, default=1, help="threads of the training run")
    parser.add_argument("--train-nice", type=int, default=10,
                        help="the training run's nice increment: 10 as the Train page starts it, 0 for full priority")
    parser.add_argument("--after", type=float, default=45.0, help="seconds to watch memory after the users left")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
