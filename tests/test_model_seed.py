"""One seed makes one model, in every process: the embeddings' initialisation once iterated a set of modules, whose
order follows their memory addresses, so `torch.manual_seed(s); Transformer(config)` gave one of two models."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ("import torch; from tests.conftest import tiny_config; from transformer import Transformer; "
         "torch.manual_seed(4); m = Transformer(tiny_config(src_vocab_size=20, tgt_vocab_size=20)); "
         "print(float(m.src_embed.tokens.weight.sum()), float(m.tgt_embed.tokens.weight.sum()))")


def test_the_same_seed_builds_the_same_model_in_every_process():
    runs = {subprocess.run([sys.executable, "-c", BUILD], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in range(6)}
    assert len(runs) == 1, runs
    src, tgt = map(float, runs.pop().split())
    assert src != tgt  # two embeddings, each drawn once
