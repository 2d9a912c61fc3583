"""An imported opus-mt model against transformers: translation with every attention map, and resident memory.

    python bench/hf_marian.py [--rounds 5] [--threads 1] [--new-tokens 32] [--workdir DIR]

Builds a random MarianMTModel at opus-mt-en-fr's full size (d_model 512, 6 + 6 layers, 8 heads, d_ff 2048, a
59,514-piece vocabulary: 74M parameters; tests/marian_fixtures.py), saves it as transformers does, imports it
with `transformer.model.hf`, and then, in one process, alternating the two in --rounds rounds:
  ours:   `Translator(DST).translate(text, greedy, attention=True)`: greedy search and every attention map
          (encoder self, decoder self and cross, every layer and head, one teacher-forced pass);
  theirs: `generate(num_beams=1, do_sample=False, output_attentions=True, return_dict_in_generate=True)` (eager
          attention: sdpa returns none), which records the decoder's maps step by step.
Both translate the same 20-word sentence to at most --new-tokens tokens (the outputs are checked equal), and
print the median wall and CPU seconds of the rounds and their ratio.
Then, in a fresh process each: the resident memory that loading a model and translating one short sentence add
(Translator for ours, MarianMTModel and MarianTokenizer for theirs) against the size of its float32 weights.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from tests.marian_fixtures import load_marian, write_marian_folder  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.model.hf import import_marian  # noqa: E402

SENTENCE = ("The children play football in the garden while my brother works at the hospital near the old river "
            "every evening.")  # 20 words, 21 pieces as opus-mt-en-fr's tokenizer would cut them about
FULL_SIZE = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
                 encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512)
VOCAB = 59_514
RESIDENT = """
import sys, warnings, torch
sys.path.insert(0, {repo!r})
torch.set_num_threads(1)
def rss():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
import transformers
from transformer.decoding.translate import Translator
before = rss()
warnings.simplefilter("ignore")
if {ours!r}:
    translator = Translator({path!r})
    model = translator.model
    translator.translate("The cat sat on the mat.")
else:
    model = transformers.MarianMTModel.from_pretrained({path!r}).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained({path!r})
    with torch.inference_mode():
        model.generate(**tokenizer(["The cat sat on the mat."], return_tensors="pt"), max_new_tokens=8)
weights = sum(p.numel() * p.element_size() for p in model.parameters())
print(rss() - before, weights)
"""


def timed(run) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def resident(path: Path, ours: bool) -> tuple[int, int]:
    """(resident bytes a loaded model adds, bytes of its weights), measured in a fresh interpreter."""
    code = RESIDENT.format(repo=str(REPO), path=str(path), ours=ours)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    added, weights = out.split()[-2:]
    return int(added), int(weights)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--workdir", type=Path, help="where to build the model (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        words = tuple(w.strip(".") for w in SENTENCE.split())
        folder = write_marian_folder(Path(work) / "opus-mt-random", vocab_size=VOCAB, source_words=words, **FULL_SIZE)
        ours_path = import_marian(str(folder), Path(work) / "ours")
        model, tokenizer = load_marian(folder)
        translator = Translator(ours_path)
        settings = SearchSettings(max_len_a=0, max_len_b=args.new_tokens)
        batch = tokenizer([SENTENCE], return_tensors="pt")
        print(f"{sum(p.numel() for p in model.parameters()):,} parameters; {len(SENTENCE.split())} words, "
              f"{batch['input_ids'].size(1)} source pieces, {args.new_tokens} output tokens, {args.threads} thread(s)")

        def theirs():
            with torch.inference_mode():
                return model.generate(**batch, num_beams=1, do_sample=False, max_new_tokens=args.new_tokens,
                                      forced_eos_token_id=None,
                                      output_attentions=True, return_dict_in_generate=True)

        def ours():
            return translator.translate(SENTENCE, settings, attention=True)

        times = {"ours": [], "theirs": []}
        for _ in range(args.rounds + 1):  # the first round warms both up and is not counted
            for name, run in (("ours", ours), ("theirs", theirs)):
                times[name].append(timed(run))
        a, b = times["ours"][-1][2], times["theirs"][-1][2]
        same = a.token_ids == b.sequences[0, 1:].tolist()
        for name in times:
            wall, cpu = (statistics.median(t[i] for t in times[name][1:]) for i in (0, 1))
            print(f"{name:7s} wall {wall:.3f} s, cpu {cpu:.3f} s (median of {args.rounds})")
        ratio = [statistics.median(o[i] / t[i] for o, t in zip(times["ours"][1:], times["theirs"][1:]))
                 for i in (0, 1)]
        print(f"ours / theirs: wall {ratio[0]:.2f}, cpu {ratio[1]:.2f} (median of the rounds' ratios); "
              f"{len(a.token_ids)} tokens out, the same ids: {same}")
        for name, path, is_ours in (("ours", ours_path, True), ("theirs", folder, False)):
            added, weights = resident(path, is_ours)
            print(f"resident ({name}): {added / 2**20:.0f} MiB added by loading and translating, weights "
                  f"{weights / 2**20:.0f} MiB: "
                  f"{added / weights:.2f} x")


if __name__ == "__main__":
    main()
