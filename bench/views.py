"""What the views of transformer.explain.views cost for one long sentence, on the server and in the browser.

    python bench/views.py --checkpoint checkpoints/en-fr-bible [--tokens 40] [--repeats 7] [--browser]

Server: the median time to build each view (head view, model view, Eq. 1 picture, beam tree of a beam of 5) and
the heatmaps of every head (an Altair chart, with its JSON spec) for a sentence of about --tokens source pieces, and
its size, against the reference built in the same process: the app's heatmap of one map with its JSON (what the
explorer sends for one head). Browser (--browser, Debian's chromium): the time to load and lay out each HTML view's
page, against a page of the same size of plain text (lines of 100 characters).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from transformer.charts.heatmap import heatmap  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.explain import cell_arithmetic, views  # noqa: E402
from ui.shared.attention import families  # noqa: E402

VERSE = ("And God said, Let there be light: and there was light, and God saw the light, that it was good: and "
         "God divided the light from the darkness, and the evening and the morning were the first day, and the "
         "waters under the heaven were gathered together unto one place.")


def median_s(build, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        out = build()
        times.append(time.perf_counter() - started)
    return statistics.median(times), out


def sentence(translator: Translator, tokens: int) -> str:
    """The longest prefix of VERSE (in words) with at most `tokens` source pieces, </s> included."""
    words = VERSE.split()
    while len(translator.prepare(" ".join(words)).ids) > tokens:
        words.pop()
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="checkpoints/en-fr-bible")
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--browser", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    translator = Translator(args.checkpoint)
    text = sentence(translator, args.tokens)
    t = translator.translate(text, attention=True)
    att = t.attention
    session = translator.session(text, SearchSettings(beam_size=5))
    session.run_to_end()
    query = len(t.target_pieces) // 2
    decoder_input = [translator.specials.start, *t.token_ids[:-1]]
    cell = cell_arithmetic(translator.model, t.source_ids, decoder_input, "cross", 1, 0, query)
    matrix, rows, cols = families.matrix(att, "cross", 1, 0)
    reference, _ = median_s(lambda: heatmap(matrix, rows, cols, title="x").to_json(), args.repeats)
    builds = {
        "head view (cross, every layer)": lambda: views.head_view(att, "cross"),
        "head view (enc_self)": lambda: views.head_view(att, "enc_self"),
        "model view (cross)": lambda: views.model_view(att, "cross"),
        "heatmaps chart + JSON (cross, every head)": lambda: views.heatmaps(att, "cross").to_json(),
        "Eq. 1 picture (one cell)": lambda: views.cell_flow(cell, t.target_pieces[query], t.source_pieces),
        "Eq. 1: cell_arithmetic + picture": lambda: views.cell_flow(
            cell_arithmetic(translator.model, t.source_ids, decoder_input, "cross", 1, 0, query),
            t.target_pieces[query], t.source_pieces),
        f"beam tree ({session.n_steps} steps, beam 5)": lambda: views.beam_tree(
            session.history, translator.tokenizer.target_pieces, session.finished[0].tokens),
    }
    print(f"{args.checkpoint}: {len(t.source_ids)} source pieces, {len(t.token_ids)} output pieces; reference: "
          f"Altair heatmap of one head + JSON {reference * 1e3:.1f} ms")
    print(f"{'view':40} {'server ms':>10} {'x ref':>7} {'KB':>7}")
    built = {}
    for name, build in builds.items():
        seconds, view = median_s(build, args.repeats)
        built[name] = view
        size = len(view.html) if isinstance(view, views.View) else len(view)  # a view's HTML, a chart's JSON
        print(f"{name:40} {seconds * 1e3:10.1f} {seconds / reference:7.2f} {size / 1024:7.0f}")
    if args.browser:
        browser(built, args.repeats)


def browser(built: dict, repeats: int) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        page = chromium.new_page(viewport={"width": 1280, "height": 720})

        def load(document: str) -> float:
            times = []
            for _ in range(repeats):
                page.set_content("<html><body></body></html>")
                started = time.perf_counter()
                page.set_content(document)
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(document.body.scrollHeight)))")
                times.append(time.perf_counter() - started)
            return statistics.median(times)

        print(f"{'view':40} {'browser ms':>10} {'x text':>7}")
        for name, view in built.items():
            if not isinstance(view, views.View):  # a chart's spec: Vega draws it in the page, as the app does
                continue
            document = view.document()
            line = "x" * 99 + "\n"
            text = f"<html><body><pre>{line * (len(document) // 100)}</pre></body></html>"  # as many bytes, as text
            plain, drawn = load(text), load(document)
            print(f"{name:40} {drawn * 1e3:10.1f} {drawn / plain:7.2f}")
        chromium.close()


if __name__ == "__main__":
    main()
