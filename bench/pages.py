"""How long each page takes to open from a link, as a ratio to Streamlit's own bare page on the same machine.

    python bench/pages.py                 # every page, 5 warm rounds each, then the buttons
    python bench/pages.py --rounds 9 --pages Translate Step_by_step

Needs Debian's chromium (see tests/test_e2e.py). Not a test: its numbers depend on the machine; BENCHMARKS.md
quotes its output. Two servers run side by side, started the same way (`streamlit run`, headless, no usage
statistics): the app, and a one-title page (`st.title`). Each load is a fresh tab (a new Streamlit session), and
its time is the page's own clock: from the navigation's start to the page's last change once its script run is
over and it has kept still for QUIET seconds (Plotly's hover layer aside), so the charts' drawing counts.

1. **cold**: the first request of each page right after its server started, against the bare page's first
   request after its own start (each page gets a freshly started server).
2. **warm**: once the server has served the page once, `--rounds` loads of the page alternating with the bare
   page; the medians and their ratio.
3. **floor** (`--floor`): Streamlit's own cost of a page of a multipage app with a sidebar like the app's, on a page
   that draws nothing else (FLOOR), as ratios to the bare page: what no page of the app can go below.
4. **breakdown** (`--breakdown`): where one warm load's time goes: the server's script run (the browser's rerun
   request to the last websocket message), the bytes it sent, the JavaScript the browser fetched (Plotly's module
   among it), the browser's time after the last message, Chromium's script and layout time, and the page's charts,
   iframes and data grids.
5. **buttons** on the shipped models: Next, Back and Run to end on Step by step, Draw again (sampling), a lens
   switch on Translate: the time from the click to the page's last change.

Goal (issue 42): every page at most 1.5x the bare page warm, 3x cold, every button under 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# The page's clock (DOM changes outside Plotly's hover layer; zero at the navigation's start; each click recorded as
# the action) and the end of a script run, as the many-users bench reads them (bench/ is the script's sys.path[0]).
from many_users import PAGE_CLOCK, SCRIPT_DONE

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
QUIET = 0.75  # s without a change after the script run ends: the page is drawn
BARE = 'import streamlit as st\n\nst.title("A bare page")\n'
TEACHING = "The girl eats an apple."
PAGES = {  # page -> the link a teacher would open (query string)
    "Home": "",
    "Translate": f"model=en-fr-teaching&text={TEACHING}",
    "Step_by_step": f"model=en-fr-teaching&text={TEACHING}",
    "Train": "",
    "Learn": f"model=en-fr-teaching&text={TEACHING}",
    "Teaching_guide": "",
    "Explain_heads": f"model=en-fr-teaching&text={TEACHING}",
    "Dataset": "model=en-fr-teaching",
}
# --floor: what Streamlit itself costs before a page draws anything of its own, as pages of a second app beside the
# bare one: the same title on a page of a multipage app (its address is a path: the browser first asks the server
# under that path), then with one select box in the sidebar (a widget whose code the browser fetches when it first
# draws one), then with a sidebar like the app's (eight page links, a select box, a toggle and a radio).
FLOOR = {
    "Title": "",
    "Select": 'st.sidebar.selectbox("Model", ["a", "b"])\n',
    "Sidebar": ('for i in range(8):\n    st.sidebar.page_link("bare.py", label=f"Page {i}", icon=":material/home:")\n'
                'st.sidebar.selectbox("Model", ["a", "b"])\nst.sidebar.toggle("Class mode")\n'
                'st.sidebar.radio("Charts download as", ["png", "svg"], horizontal=True)\n'),
}
FLOOR_CONFIG = '[client]\nshowSidebarNavigation = false\ntoolbarMode = "minimal"\n'  # as the app's
# The websocket's traffic and the page's long tasks, on the same clock (for --breakdown).
PROBE = """
window.__ws = {sent: 0, last: 0, bytes: 0, frames: 0};
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
    constructor(...args) {
        super(...args);
        this.addEventListener("message", e => {
            window.__ws.last = performance.now();
            window.__ws.bytes += e.data.byteLength ?? e.data.size ?? e.data.length;
            window.__ws.frames += 1;
        });
    }
    send(data) { if (!window.__ws.sent) window.__ws.sent = performance.now(); super.send(data); }
};
"""
COUNTS = """[document.querySelectorAll('.js-plotly-plot').length, document.querySelectorAll('iframe').length,
             document.querySelectorAll('[data-testid="stDataFrame"]').length]"""
RESOURCES = ("performance.getEntriesByType('resource').filter(r => r.name.endsWith('.js'))"
             ".map(r => [r.name, r.decodedBodySize])")


class Server:
    """`streamlit run SCRIPT` on a free port, in its own process group (stopped with the group)."""

    def __init__(self, script: Path, cwd: Path, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
               "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none"]
        env = {"MALLOC_ARENA_MAX": "2", **os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the server of {script} did not answer /_stcore/health in 120 s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def settle(page, since: str = "0", timeout: float = 180.0) -> float:
    """Seconds on the page's clock from `since` (0: the navigation's start) to its last change, once its script run
    is over and it has kept still for QUIET seconds."""
    deadline = time.monotonic() + timeout
    changed = None
    while time.monotonic() < deadline:
        page.wait_for_timeout(QUIET * 1000)
        now = page.evaluate("window.__clock.changed")
        if now == changed and page.evaluate(SCRIPT_DONE):
            return (now - page.evaluate(since)) / 1000
        changed = now
    raise TimeoutError(f"the page kept changing or running for {timeout:.0f} s: {page.url}")


def load(browser, url: str) -> float:
    """Seconds from navigation to a drawn page, in a fresh tab (a new session)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.add_init_script(PAGE_CLOCK)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
        return settle(page)
    finally:
        context.close()


def breakdown(browser, url: str) -> str:
    """One fresh-tab load, taken apart: server script run, bytes, JavaScript, browser time, what was drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.add_init_script(PAGE_CLOCK)
    page.add_init_script(PROBE)
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
        total = settle(page)
        ws = page.evaluate("window.__ws")
        js = page.evaluate(RESOURCES)
        charts, iframes, grids = page.evaluate(COUNTS)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    finally:
        context.close()
    plotly, scripts = sum(size for name, size in js if "Plotly" in name), sum(size for _, size in js)
    return (f"{total:5.2f} s: server {(ws['last'] - ws['sent']) / 1000:4.2f} s ({ws['frames']} messages, "
            f"{ws['bytes'] / 1e3:.0f} kB), browser after it {total - ws['last'] / 1000:5.2f} s; "
            f"JS {scripts / 1e6:.1f} MB "
            f"(plotly {plotly / 1e6:.1f}), script {metrics['ScriptDuration']:.2f} s, layout+style "
            f"{metrics['LayoutDuration'] + metrics['RecalcStyleDuration']:.2f} s; {charts} charts, {iframes} iframes, "
            f"{grids} data grids")


def click(page, name: str) -> float:
    """Seconds from a click on the button `name` to the page's last change."""
    page.get_by_role("button", name=name, exact=True).first.click()
    return settle(page, since="window.__clock.action")


def buttons(browser, url: str) -> dict[str, list[float]]:
    """Each button a lesson presses, timed three times on the teaching model."""
    times: dict[str, list[float]] = {}
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.add_init_script(PAGE_CLOCK)
    try:
        page.goto(f"{url}/Step_by_step?{PAGES['Step_by_step']}")
        settle(page)
        for _ in range(3):
            times.setdefault("Next", []).append(click(page, "Next"))
        for _ in range(3):
            times.setdefault("Back", []).append(click(page, "Back"))
        for _ in range(3):
            times.setdefault("Run to end", []).append(click(page, "Run to end"))
            click(page, "Back")
        page.goto(f"{url}/Step_by_step?{PAGES['Step_by_step']}&search=sample&seed=1")
        settle(page)
        for _ in range(3):
            times.setdefault("Draw again", []).append(click(page, "Draw again"))
    finally:
        context.close()
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="warm loads of each page (and of the bare page)")
    parser.add_argument("--pages", nargs="+", default=list(PAGES), choices=list(PAGES))
    parser.add_argument("--no-cold", action="store_true", help="skip the first-request-after-a-start loads")
    parser.add_argument("--no-buttons", action="store_true")
    parser.add_argument("--floor", action="store_true", help="after the warm loads, Streamlit's own pages (FLOOR): "
                        "a multipage app's page, a sidebar select box, a sidebar like the app's")
    parser.add_argument("--breakdown", action="store_true", help="after the warm loads, one load of each page taken "
                        "apart (server, bytes, JavaScript, browser)")
    args = parser.parse_args(argv)
    if not CHROMIUM:
        parser.error("chromium not found: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-pages-"))
    (tmp / "bare.py").write_text(BARE)

    def app_server() -> Server:
        return Server(REPO / "app.py", REPO, tmp / "app.log")

    def bare_server() -> Server:
        return Server(tmp / "bare.py", tmp, tmp / "bare.log")

    def warm(url: str, name: str) -> None:
        load(browser, url)  # served once
        page_times, bare_times = [], []
        for _ in range(args.rounds):
            page_times.append(load(browser, url))
            bare_times.append(load(browser, bare.url))
        page_s, bare_s = statistics.median(page_times), statistics.median(bare_times)
        print(f"  {name:15s} {page_s:6.2f} s   bare {bare_s:5.2f} s   ratio {page_s / bare_s:5.2f}"
              f"   (page {min(page_times):.2f}-{max(page_times):.2f} s)", flush=True)

    def path(name: str) -> str:
        return ("/" if name == "Home" else f"/{name}") + (f"?{PAGES[name]}" if PAGES[name] else "")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        if not args.no_cold:
            print("cold: the first request after a start (each page on a fresh server)")
            for name in args.pages:
                bare = bare_server()
                try:
                    bare_s = load(browser, bare.url)
                finally:
                    bare.stop()
                app = app_server()
                try:
                    page_s = load(browser, app.url + path(name))
                finally:
                    app.stop()
                print(f"  {name:15s} {page_s:6.2f} s   bare {bare_s:5.2f} s   ratio {page_s / bare_s:5.2f}", flush=True)
        app, bare = app_server(), bare_server()
        try:
            print(f"warm: once served, the median of {args.rounds} fresh-tab loads, alternating with the bare page")
            for name in args.pages:
                warm(app.url + path(name), name)
            if args.floor:
                print("floor: Streamlit's own pages, nothing of the app's (FLOOR)")
                floor = tmp / "floor"
                (floor / "pages").mkdir(parents=True)
                (floor / ".streamlit").mkdir()
                (floor / ".streamlit" / "config.toml").write_text(FLOOR_CONFIG)
                (floor / "bare.py").write_text(BARE)
                for i, (name, extra) in enumerate(FLOOR.items(), 1):
                    (floor / "pages" / f"{i}_{name}.py").write_text(BARE + extra)
                shell = Server(floor / "bare.py", floor, tmp / "floor.log")
                try:
                    for name in FLOOR:
                        warm(f"{shell.url}/{name}", name)
                finally:
                    shell.stop()
            if args.breakdown:
                print("breakdown: one more fresh-tab load of each page (and of the bare page)")
                for name, url in [("bare", bare.url), *((name, app.url + path(name)) for name in args.pages)]:
                    print(f"  {name:15s} {breakdown(browser, url)}", flush=True)
            if not args.no_buttons:
                print("buttons on the teaching model: click to the last change (3 each)")
                for name, times in buttons(browser, app.url).items():
                    print(f"  {name:15s} median {statistics.median(times):5.2f} s   max {max(times):5.2f} s",
                          flush=True)
        finally:
            app.stop()
            bare.stop()
            browser.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
