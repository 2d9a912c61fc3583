"""How fast each page opens as users meet it, as ratios to Streamlit's floor: a page that draws nothing but a
title and a sidebar like the app's, in a multipage app beside it, measured in the same run.

    python bench/pages.py                 # every page: navigation, warm and cold loads, buttons
    python bench/pages.py --rounds 9 --pages Translate Step_by_step --no-cold

Needs Debian's chromium (see tests/browser/conftest.py). Not a test: its numbers depend on the machine; BENCHMARKS.md
quotes its output with the CPU it prints. Each time is the page's own clock: from the navigation's start (or the
click) to the page's last change once its script run is over and it has kept still for QUIET seconds, so the
charts' drawing counts.

1. **navigate**: in one tab, a click on the page's sidebar link from another page of the app (Home; the Teacher's
   guide for Home), `--rounds` times once the page was opened once, against the same click from one page of the
   floor app to its other one. Goal: median <= 0.5 s and <= 1.5x the floor's.
2. **warm**: a fresh tab (a new session) opening the page's link once the server served it, `--rounds` loads
   alternating with the floor page's link. Goal: <= 2.0x the floor page.
3. **cold**: the first request of each page right after its server started, against the floor page's first
   request after its own server started. Goal: <= 3x the floor page.
4. **buttons** on the teaching model: Next, Back and Run to end on Step by step, Draw again (sampling): from the
   click to the page's last change. Goal: every one under 1 s.
5. `--bare`: the warm loads of a one-title single-page app beside the floor page, for reference (Streamlit's
   multipage shell and the sidebar's widgets are what separate the two).
6. `--breakdown`: where one warm load's time goes (server script run, bytes sent, JavaScript fetched, browser
   time after the last message, Chromium's script and layout time, the charts and iframes drawn).
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

# The page's clock (DOM changes; zero at the navigation's start; each click recorded as the action) and the end of a
# script run, as the many-users bench reads them (bench/ is the script's sys.path[0]).
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
# The floor: a multipage app whose pages draw a title and a sidebar like the app's (eight page links, a select box, a
# toggle and a radio), configured as the app is. FLOOR is the page every ratio divides by; OTHER is where the
# navigation to it starts.
SIDEBAR = ('for i in range(4):\n'
           '    st.sidebar.page_link("pages/1_Floor.py", label=f"Floor {i}", icon=":material/home:")\n'
           '    st.sidebar.page_link("pages/2_Other.py", label=f"Other {i}", icon=":material/home:")\n'
           'st.sidebar.divider()\nst.sidebar.selectbox("Model", ["a", "b"])\nst.sidebar.toggle("Class mode")\n'
           'st.sidebar.radio("Charts download as", ["png", "svg"], horizontal=True)\n')
FLOOR, OTHER = "Floor", "Other"
# --references: floor pages with one more thing each, for what Streamlit itself charges for it (the reference
# measure: a 12x12 Altair heatmap with a click selection).
HEATMAP = ('import altair as alt\nimport numpy as np\nimport pandas as pd\n'
           'row, col = np.divmod(np.arange(144), 12)\n'
           'data = pd.DataFrame({"row": row, "col": col, "value": np.random.default_rng(0).random(144)})\n'
           'pick = alt.selection_point(name="cell", fields=["row", "col"], on="click")\n'
           'st.altair_chart(alt.Chart(data).mark_rect().encode(x="col:O", y="row:O", color="value:Q",\n'
           '                tooltip=["row", "col", "value"]).add_params(pick), key="map", on_select="rerun")\n')
REFERENCES = {"Text_input": 'st.text_input("Sentence", "The girl eats an apple.")\n', "Heatmap": HEATMAP,
              "Both": 'st.text_input("Sentence", "The girl eats an apple.")\n' + HEATMAP}
FLOOR_CONFIG = '[client]\nshowSidebarNavigation = false\ntoolbarMode = "minimal"\n'  # as the app's
LINKS = {"Home": "Home", "Translate": "Translate & Attention", "Step_by_step": "Decode step by step", "Train": "Train",
         "Learn": "Learn", "Teaching_guide": "Teacher's guide", "Explain_heads": "Explain heads", "Dataset": "Dataset"}
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
COUNTS = """[document.querySelectorAll('[data-testid="stVegaLiteChart"]').length,
             document.querySelectorAll('iframe').length,
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
    vega, scripts = sum(size for name, size in js if "Vega" in name or "embed" in name), sum(size for _, size in js)
    return (f"{total:5.2f} s: server {(ws['last'] - ws['sent']) / 1000:4.2f} s ({ws['frames']} messages, "
            f"{ws['bytes'] / 1e3:.0f} kB), browser after it {total - ws['last'] / 1000:5.2f} s; "
            f"JS {scripts / 1e6:.1f} MB "
            f"(Vega {vega / 1e6:.1f}), script {metrics['ScriptDuration']:.2f} s, layout+style "
            f"{metrics['LayoutDuration'] + metrics['RecalcStyleDuration']:.2f} s; {charts} charts, {iframes} iframes, "
            f"{grids} data grids")


def navigate(browser, start: str, link: str, rounds: int, where: str = "stSidebar") -> list[float]:
    """Seconds from a click on the link named `link` (in the sidebar, or where: another data-testid) to the page's
    last change, in one tab that opened `start` (the link's page opened once before the timed rounds; the tab goes
    back to `start` between them)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.add_init_script(PAGE_CLOCK)
    times = []
    try:
        page.goto(start, wait_until="commit")
        page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
        settle(page)
        back = page.url
        for i in range(rounds + 1):
            page.locator(f'[data-testid="{where}"] a', has_text=link).first.click()
            seconds = settle(page, since="window.__clock.action")
            if i:  # the first: the page's first run in this session
                times.append(seconds)
            page.goto(back)
            settle(page)
    finally:
        context.close()
    return times


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


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def verdict(ratio: float, goal: float, seconds: float | None = None, limit: float | None = None) -> str:
    met = ratio <= goal and (seconds is None or limit is None or seconds <= limit)
    return "ok" if met else "OVER"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed navigations and warm loads of each page")
    parser.add_argument("--pages", nargs="+", default=list(PAGES), choices=list(PAGES))
    parser.add_argument("--no-cold", action="store_true", help="skip the first-request-after-a-start loads")
    parser.add_argument("--no-buttons", action="store_true")
    parser.add_argument("--references", action="store_true", help="also navigate to the floor page with a text "
                        "box, with a 12x12 Altair heatmap, and with both (Streamlit's own cost of each)")
    parser.add_argument("--bare", action="store_true", help="also the warm loads of a one-title single-page app")
    parser.add_argument("--breakdown", action="store_true", help="after the warm loads, one load of each page taken "
                        "apart (server, bytes, JavaScript, browser)")
    args = parser.parse_args(argv)
    if not CHROMIUM:
        parser.error("chromium not found: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-pages-"))
    (tmp / "bare.py").write_text(BARE)
    floor_dir = tmp / "floor"
    (floor_dir / "pages").mkdir(parents=True)
    (floor_dir / ".streamlit").mkdir()
    (floor_dir / ".streamlit" / "config.toml").write_text(FLOOR_CONFIG)
    (floor_dir / "home.py").write_text(BARE + SIDEBAR)
    references = "".join(f'st.page_link("pages/{i}_{name}.py", label="{name}")\n'
                         for i, name in enumerate(REFERENCES, 3))  # on OTHER's page: the sidebar stays the app's
    for i, name in enumerate((FLOOR, OTHER), 1):
        (floor_dir / "pages" / f"{i}_{name}.py").write_text(BARE.replace("A bare page", name) + SIDEBAR
                                                            + (references if name == OTHER else ""))
    for i, (name, body) in enumerate(REFERENCES.items(), 3):
        (floor_dir / "pages" / f"{i}_{name}.py").write_text(BARE.replace("A bare page", name) + SIDEBAR + body)

    def app_server() -> Server:
        return Server(REPO / "app.py", REPO, tmp / "app.log")

    def floor_server() -> Server:
        return Server(floor_dir / "home.py", floor_dir, tmp / "floor.log")

    def path(name: str) -> str:
        return ("/" if name == "Home" else f"/{name}") + (f"?{PAGES[name]}" if PAGES[name] else "")

    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; {args.rounds} rounds", flush=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        app, floor = app_server(), floor_server()
        try:
            floor_page = f"{floor.url}/{FLOOR}"
            print("navigate: a click on the page's sidebar link, in one tab (goal: median <= 0.5 s and <= 1.5x)")
            floor_nav = statistics.median(navigate(browser, f"{floor.url}/{OTHER}", f"{FLOOR} 0", args.rounds))
            print(f"  {'floor':15s} {floor_nav:6.2f} s", flush=True)
            if args.references:  # the floor page with one more element, linked from the sidebar as FLOOR is
                for name in REFERENCES:
                    times = navigate(browser, f"{floor.url}/{OTHER}", name, args.rounds, where="stMain")
                    nav = statistics.median(times)
                    print(f"  {'floor + ' + name:15s} {nav:6.2f} s   ratio {nav / floor_nav:5.2f}   "
                          f"(max {max(times):.2f} s)", flush=True)
            for name in args.pages:
                start = app.url + ("/Teaching_guide" if name == "Home" else "/")
                times = navigate(browser, start, LINKS[name], args.rounds)
                nav = statistics.median(times)
                print(f"  {name:15s} {nav:6.2f} s   ratio {nav / floor_nav:5.2f}   "
                      f"(max {max(times):.2f} s)   {verdict(nav / floor_nav, 1.5, nav, 0.5)}", flush=True)
            print(f"warm: a fresh tab opening the link, median of {args.rounds}, alternating with the floor page "
                  "(goal: <= 2.0x)")
            load(browser, floor_page)
            for name in args.pages:
                url = app.url + path(name)
                load(browser, url)  # served once
                page_times, floor_times = [], []
                for _ in range(args.rounds):
                    page_times.append(load(browser, url))
                    floor_times.append(load(browser, floor_page))
                page_s, floor_s = statistics.median(page_times), statistics.median(floor_times)
                print(f"  {name:15s} {page_s:6.2f} s   floor {floor_s:5.2f} s   ratio {page_s / floor_s:5.2f}   "
                      f"(page {min(page_times):.2f}-{max(page_times):.2f} s)   {verdict(page_s / floor_s, 2.0)}",
                      flush=True)
            if args.bare:
                bare = Server(tmp / "bare.py", tmp, tmp / "bare.log")
                try:
                    bare_times = [(load(browser, bare.url), load(browser, floor_page)) for _ in range(args.rounds)]
                finally:
                    bare.stop()
                bare_s = statistics.median(b for b, _ in bare_times)
                floor_s = statistics.median(f for _, f in bare_times)
                print(f"  {'bare page':15s} {bare_s:6.2f} s   floor {floor_s:5.2f} s   floor / bare "
                      f"{floor_s / bare_s:5.2f}", flush=True)
            if args.breakdown:
                print("breakdown: one more fresh-tab load of each page (and of the floor page)")
                for name, url in [("floor", floor_page), *((name, app.url + path(name)) for name in args.pages)]:
                    print(f"  {name:15s} {breakdown(browser, url)}", flush=True)
            if not args.no_buttons:
                print("buttons on the teaching model: click to the last change, 3 each (goal: under 1 s)")
                for name, times in buttons(browser, app.url).items():
                    print(f"  {name:15s} median {statistics.median(times):5.2f} s   max {max(times):5.2f} s   "
                          f"{'ok' if max(times) < 1 else 'OVER'}", flush=True)
        finally:
            app.stop()
            floor.stop()
        if not args.no_cold:
            print("cold: the first request after a start, each page on a fresh server (goal: <= 3x)")
            for name in args.pages:
                floor = floor_server()
                try:
                    floor_s = load(browser, f"{floor.url}/{FLOOR}")
                finally:
                    floor.stop()
                app = app_server()
                try:
                    page_s = load(browser, app.url + path(name))
                finally:
                    app.stop()
                print(f"  {name:15s} {page_s:6.2f} s   floor {floor_s:5.2f} s   ratio {page_s / floor_s:5.2f}   "
                      f"{verdict(page_s / floor_s, 3.0)}", flush=True)
        browser.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
