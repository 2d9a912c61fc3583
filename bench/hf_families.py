"""An imported NLLB-200 (M2M100) model against transformers: translation with every attention map, and the memory
that loading it holds.

    python bench/hf_families.py [--quick] [--rounds 3] [--threads 1] [--new-tokens 32] [--workdir DIR]

Builds a random M2M100ForConditionalGeneration at NLLB-200-distilled-600M's shape (d_model 1024, 12 + 12 layers, 16
heads, d_ff 4096, 256,206 tokens: 615M parameters, 2.5 GB in float32) with an NLLB tokenizer trained here
(tests/hf_fixtures.py), saves it as transformers does, imports it with `transformer.model.hf` (eng_Latn ->
fra_Latn), then, in one process, alternating the two in --rounds rounds after a warm-up:
  ours:   `Translator(DST).translate(text, greedy, attention=True)`: greedy search and every attention map (encoder
          self, decoder self and cross, every layer and head, one teacher-forced pass);
  theirs: `generate(forced_bos_token_id=fra_Latn, num_beams=1, output_attentions=True, return_dict_in_generate=True)`
          (eager attention: sdpa returns none), which records the decoder's maps step by step.
Both translate the same 20-word sentence to --new-tokens tokens (the ids are checked equal) and the median wall
and CPU seconds and their ratio are printed. Then, in a fresh process each, the resident memory that loading the
model adds (`Translator` for ours, `from_pretrained` for theirs) against its float32 weights; ours is measured
twice, after loading and after one translation. --quick builds a smaller model (d_model 512, 6 + 6 layers, 8
heads, d_ff 2048, 32,000 tokens) for a run of a minute.
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

from tests import hf_fixtures  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.model.hf import import_model  # noqa: E402

SENTENCE = ("The children play football in the garden while my brother works at the hospital near the old river "
            "every evening.")  # 20 words
NLLB_600M = dict(d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
                 decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024)
QUICK = dict(d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
             encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512)
VOCAB = {"full": 256_206, "quick": 32_000}
RESIDENT = """
import sys, warnings, torch
sys.path.insert(0, {repo!r})
torch.set_num_threads(1)
def rss():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
def peak():
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
import transformers
from transformer.decoding.translate import Translator
warnings.simplefilter("ignore")
before = rss()
if {ours!r}:
    translator = Translator({path!r})
    model = translator.model
    loaded, loaded_peak = rss(), peak()
    translator.translate("The cat sat on the mat.")
else:
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained({path!r}).eval()
    loaded, loaded_peak = rss(), peak()
    tokenizer = transformers.AutoTokenizer.from_pretrained({path!r}, src_lang="eng_Latn")
    with torch.inference_mode():
        model.generate(**tokenizer(["The cat sat on the mat."], return_tensors="pt"), max_new_tokens=8,
                       forced_bos_token_id=tokenizer.convert_tokens_to_ids("fra_Latn"))
weights = sum(p.numel() * p.element_size() for p in model.parameters())
print(loaded - before, loaded_peak - before, rss() - before, weights)
"""


def timed(run) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def resident(path: Path, ours: bool) -> list[int]:
    """[resident bytes after loading, peak while loading, after one translation, bytes of the weights], measured in
    a fresh interpreter."""
    code = RESIDENT.format(repo=str(REPO), path=str(path), ours=ours)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [int(n) for n in out.split()[-4:]]


def build(work: Path, quick: bool) -> tuple[Path, Path]:
    """The random NLLB folder as save_pretrained writes it, and our import of it."""
    started = time.perf_counter()
    words = tuple(w.strip(".") for w in SENTENCE.split())
    folder = hf_fixtures.write_folder("nllb", work / "nllb-random", train_steps=0, scaled=True,
                                      vocab_size=VOCAB["quick" if quick else "full"], lines=(SENTENCE, " ".join(words)),
                                      **(QUICK if quick else NLLB_600M))
    built = time.perf_counter()
    ours = import_model(str(folder), work / "ours", src_lang="eng_Latn", tgt_lang="fra_Latn")
    print(f"built in {built - started:.0f} s, imported in {time.perf_counter() - built:.0f} s")
    return folder, ours


def compare(folder: Path, ours_path: Path, rounds: int, new_tokens: int) -> None:
    """Ours and theirs alternating, rounds after a warm-up; prints the medians and their ratio."""
    model, tokenizer = hf_fixtures.load("nllb", folder)
    translator = Translator(ours_path)
    settings = SearchSettings(max_len_a=0, max_len_b=new_tokens)
    batch = tokenizer([SENTENCE], return_tensors="pt")
    target = tokenizer.convert_tokens_to_ids("fra_Latn")
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters; {len(SENTENCE.split())} words, "
          f"{batch['input_ids'].size(1)} source pieces, {new_tokens} output tokens, {torch.get_num_threads()} "
          "thread(s)")

    def theirs():
        with torch.inference_mode():
            return model.generate(**batch, num_beams=1, do_sample=False, max_new_tokens=new_tokens,
                                  forced_bos_token_id=target, forced_eos_token_id=None, output_attentions=True,
                                  return_dict_in_generate=True)

    def ours():
        return translator.translate(SENTENCE, settings, attention=True)

    times = {"ours": [], "theirs": []}
    for _ in range(rounds + 1):  # the first round warms both up and is not counted
        for name, run in (("ours", ours), ("theirs", theirs)):
            times[name].append(timed(run))
    a, b = times["ours"][-1][2], times["theirs"][-1][2]
    same = a.token_ids == b.sequences[0, 1:].tolist()
    for name in times:
        wall, cpu = (statistics.median(t[i] for t in times[name][1:]) for i in (0, 1))
        print(f"{name:7s} wall {wall:.3f} s, cpu {cpu:.3f} s (median of {rounds})")
    ratio = [statistics.median(o[i] / t[i] for o, t in zip(times["ours"][1:], times["theirs"][1:])) for i in (0, 1)]
    print(f"ours / theirs: wall {ratio[0]:.2f}, cpu {ratio[1]:.2f} (median of the rounds' ratios); "
          f"{len(a.token_ids)} tokens out, the same ids: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller model (d_model 512, 6 + 6 layers, 32k tokens)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--workdir", type=Path, help="where to build the model (default: a temporary folder)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        folder, ours_path = build(Path(work), args.quick)
        compare(folder, ours_path, args.rounds, args.new_tokens)  # its models are gone before the fresh processes
        for name, path, is_ours in (("ours", ours_path, True), ("theirs", folder, False)):
            loaded, peak, after, weights = resident(path, is_ours)
            print(f"resident ({name}): loading adds {loaded / 2**20:.0f} MiB ({loaded / weights:.2f} x the "
                  f"{weights / 2**20:.0f} MiB of weights; peak while loading {peak / weights:.2f} x), "
                  f"{after / weights:.2f} x after one translation")


if __name__ == "__main__":
    main()
