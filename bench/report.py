"""The HTML report of one sentence (ui.explain.html_report): its size by part and the time to build it, against
another checkout of the project built the same way in alternating fresh processes.

    python bench/report.py [--against DIR] [--rounds 3]

Each round builds, in a fresh process per checkout, the report of a teaching sentence on en-fr-teaching with every
head's statistics and the norm-weighted and ALTI+ lenses, and the plain report of a verse on en-fr-bible: twice each,
the first build cold (what the server's first report pays: imports done, chart renderer not yet started), the second
warm. Prints the medians of the whole size, of the head views' part (the rest: the charts and tables) and of the
times and, with --against (e.g. a `git archive` of an older commit with the checkpoints linked in), the ratios
this / that.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {"en-fr-teaching": "The young man buys a green bicycle.", "en-fr-bible": "And God said, Let there be light."}
CHILD = r"""
import json, re, sys, time
sys.path.insert(0, ".")
from transformer.decoding.translate import Translator
from transformer.explain import StatisticsAccumulator
from transformer.model.checkpoint import load_checkpoint
from ui.explain import html_report
from ui.shared.attention import lens_switch
from ui.shared.attention.families import FAMILIES
out = {}
for model, text in json.loads(sys.argv[1]).items():
    translator = Translator(load_checkpoint("checkpoints/" + model))
    t = translator.translate(text, attention=True)
    att, stats = t.attention, StatisticsAccumulator()
    stats.add({f: getattr(att, f) for f in FAMILIES}, {"enc_self": att.source_pieces, "cross": att.source_pieces,
                                                       "dec_self": att.target_input_pieces})
    lenses = lens_switch.report_maps(translator.model, t, ["norm", "alti"], translator.specials)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        if model == "en-fr-teaching":
            doc = html_report.sentence_report(t, model=model, stats=stats.result(),
                                              extra=html_report.lens_sections(t, *lenses))
        else:
            doc = html_report.sentence_report(t, model=model)
        times.append(time.perf_counter() - start)
    views = sum(len(v.encode()) for v in re.findall(r'<svg class="hv".*?</svg>', doc, flags=re.S))
    out[model] = {"bytes": len(doc.encode()), "views": views, "cold": times[0], "warm": times[1]}
print("RESULT" + json.dumps(out))
"""


def measure(root: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES)], cwd=root, capture_output=True, text=True,
                          timeout=900)
    found = re.search(r"^RESULT(.*)$", done.stdout, flags=re.M)
    if found is None:
        raise SystemExit(f"{root}: no result\n{done.stderr[-2000:]}")
    return json.loads(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout, measured the same way in turn")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    roots = {"this": ROOT, **({"that": args.against.resolve()} if args.against else {})}
    runs: dict[str, list[dict]] = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():
            runs[name].append(measure(root))
    for model in CASES:
        for key in ("bytes", "views", "cold", "warm"):
            medians = {name: statistics.median(r[model][key] for r in rounds) for name, rounds in runs.items()}
            shown = "  ".join(f"{name} {value:,.2f}" if key in ("cold", "warm") else f"{name} {value:,.0f}"
                              for name, value in medians.items())
            ratio = f"  this / that {medians['this'] / medians['that']:.2f}" if "that" in medians else ""
            print(f"{model:15} {key:6} {shown}{ratio}")


if __name__ == "__main__":
    main()
