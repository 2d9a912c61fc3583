"""One seed makes one model, in every process: the embeddings' initialisation once iterated a set of modules, whose
order follows their memory addresses, so `torch.manual_seed(s); Transformer(config)` gave one of two models.

Each process builds the model 8 times and keeps every copy alive, so each build lands at new addresses: with the old
set, 8 builds in one process gave both models (checked when this test was written), which two processes with two
string-hash seeds see far more surely than the six single-build processes this test used to start (each start
imports torch: about 2 s of CPU)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ("import torch; from tests.conftest import tiny_config; from transformer import Transformer; kept = []\n"
         "for i in range(8):\n"
         "    torch.manual_seed(4); m = Transformer(tiny_config(src_vocab_size=20, tgt_vocab_size=20))\n"
         "    kept += [m, [object() for _ in range(37 * i)]]  # the next build at other addresses\n"
         "    print(float(m.src_embed.tokens.weight.sum()), float(m.tgt_embed.tokens.weight.sum()))")


def test_the_same_seed_builds_the_same_model_in_every_process():
    processes = [subprocess.Popen([sys.executable, "-c", BUILD], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={"PYTHONHASHSEED": str(seed), "PATH": ""})
                 for seed in (0, 1)]
    builds = []
    for proc in processes:
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"a process building 8 tiny models did not finish in 120 s:\n{err}") from None
        assert proc.returncode == 0, err
        builds += out.splitlines()
    assert len(builds) == 16 and len(set(builds)) == 1, builds
    src, tgt = map(float, builds[0].split())
    assert src != tgt  # two embeddings, each drawn once
