r"""Train a translation model from the command line (also what the app's Train page runs).

    python -m transformer.training --corpus bible --src en --tgt fr --preset small --out runs/NAME
    python -m transformer.training --src-translation k,2,3,4 --tgt-translation l,o,5 --out runs/NAME
    python -m transformer.training --mix bible:k,2,3,4/l,o,5=1 --mix debian:data/debian-en-fr/pairs.tsv=2 \
        --mix teaching=1 --out runs/NAME             (corpora mixed with weights: see --mix)
    python -m transformer.training --resume runs/NAME [--max-steps 20000]
    torchrun --nproc_per_node=2 -m transformer.training ...      (DistributedDataParallel)

SIGINT or SIGTERM saves the latest checkpoint and exits cleanly; --resume continues the same run.
On a terminal a progress bar shows the steps (loss, tokens/s, ETA) with the evaluations above it; otherwise
(CI, nohup, a redirected log) each log point is a plain line. train.log in the run always has every line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from transformer import arguments
from transformer.data.corpora.base import CorpusError
from transformer.data.corpora.mix import MixArg, parse_mix_arg, split_bible_value
from transformer.data.spec import CorpusSpec, MixPart
from transformer.data.tokenizer import TokenizerError
from transformer.model.checkpoint import CONFIG_FILE, CheckpointError
from transformer.model.config import ModelConfig
from transformer.progress import PROGRESS, BarSafeHandler, is_terminal
from transformer.runs import RunFiles
from transformer.training import cores
from transformer.training.cores import PLAN_REASON, WAIT_POLICY, CorePlan
from transformer.training.distributed import COLLECTIVE_TIMEOUT, START_TIMEOUT
from transformer.training.flags import RANGES, check_args
from transformer.training.loop import Trainer
from transformer.training.recipe import PRESETS, TokenizerSettings, TrainConfig
from transformer.training.run import RunSpec, TrainingError, create_run

log = logging.getLogger("transformer.training")

# command-line flag -> (section of the run spec, field)
OVERRIDES = {
    "d_model": ("model", "d_model"), "n_heads": ("model", "n_heads"), "layers": ("model", "layers"),
    "d_ff": ("model", "d_ff"), "dropout": ("model", "dropout"), "post_ln": ("model", "norm_first"),
    "max_len": ("model", "max_len"), "activation": ("model", "activation"),
    "vocab_size": ("tokenizer", "vocab_size"), "tokenizer": ("tokenizer", "kind"),
    "separate_vocab": ("tokenizer", "shared"),
    **{name: ("train", name) for name in (
        "lr", "warmup_steps", "max_steps", "max_epochs", "max_tokens", "accumulation", "label_smoothing",
        "clip_grad_norm", "optimizer", "weight_decay", "schedule", "eval_every", "save_every", "log_every",
        "keep_last", "eval_sentences", "seed", "device", "precision", "threads", "compile")},
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="new run directory")
    p.add_argument("--resume", metavar="RUN", help="continue the run in this directory")
    p.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    p.add_argument("--init-from", metavar="CHECKPOINT",
                   help="fine-tune: start from this checkpoint's weights, architecture and vocabulary (e.g. "
                   "checkpoints/en-fr-bible); model and tokenizer flags are then refused")
    data = p.add_argument_group("corpus")
    data.add_argument("--corpus", choices=["bible", "teaching", "tsv", "hf", "debian"],
                      help="bible (default): offline; teaching: generated everyday English -> French sentences "
                           "with gold word alignments; debian: a file of the Debian corpus (--path)")
    data.add_argument("--src", default="en")
    data.add_argument("--tgt", default="fr")
    data.add_argument("--src-translation", metavar="CODES",
                      help="Bible translation code(s), e.g. k or k,2,3,4: train pairs every listed source version "
                           "with every target version of a verse; dev and test use the first of each")
    data.add_argument("--tgt-translation", metavar="CODES", help="Bible translation code(s), e.g. l or l,o,5")
    data.add_argument("--path", help="tsv or debian file, or a local file / saved dataset for --corpus hf")
    data.add_argument("--hf-name", help="Hugging Face dataset name, e.g. opus_books")
    data.add_argument("--hf-config", help="e.g. en-fr")
    data.add_argument("--src-field")
    data.add_argument("--tgt-field")
    data.add_argument("--max-words", type=int, default=100)
    data.add_argument("--dedup", action="store_true")
    data.add_argument("--train-pairs", type=int, metavar="N",
                      help="teaching only: generate N train pairs (default 40,000; dev and test stay the same)")
    data.add_argument("--mix", action="append", metavar="KIND[:VALUE][=WEIGHT]",
                      help="one part of a mix of corpora (repeat the flag; instead of --corpus). KIND: bible "
                           "(--src/--tgt-translation, or bible:k,2/l,o), teaching, tsv:PATH, debian:PATH or hf:NAME "
                           "(with --hf-config, --src-field, --tgt-field). WEIGHT (default 1): the part's share of the "
                           "training pairs, repeating or leaving out pairs; every part has the run's --src, --tgt, "
                           "--max-words and --dedup. Dev: up to 1,000 pairs from all parts; test: each part's "
                           "(transformer.decoding.evaluate --part)")
    model = p.add_argument_group("model and tokenizer (override the preset)")
    for name, kind in (("d_model", int), ("n_heads", int), ("layers", int), ("d_ff", int), ("dropout", float),
                       ("max_len", int), ("vocab_size", int)):
        model.add_argument("--" + name.replace("_", "-"), type=arguments.number if name in RANGES else kind)
    model.add_argument("--activation", choices=["relu", "gelu"])
    model.add_argument("--post-ln", action="store_const", const=False, help="the paper's post-LN (default pre-LN)")
    model.add_argument("--tokenizer", choices=["bpe", "wordlevel"])
    model.add_argument("--separate-vocab", action="store_const", const=False, help="one vocabulary per language")
    train = p.add_argument_group("training (override the preset)")
    for name, kind in (("lr", float), ("warmup_steps", int), ("max_steps", int), ("max_epochs", int),
                       ("max_tokens", int), ("accumulation", int), ("label_smoothing", float),
                       ("clip_grad_norm", float), ("weight_decay", float), ("eval_every", int),
                       ("save_every", int), ("log_every", int), ("keep_last", int), ("eval_sentences", int),
                       ("seed", int), ("threads", int)):
        # the ranges' numbers as given (1e20, -inf, 2.5), so that flags.check_args names the flag and its range
        train.add_argument("--" + name.replace("_", "-"), type=arguments.number if name in RANGES else kind)
    train.add_argument("--optimizer", choices=["adam", "adamw"])
    train.add_argument("--schedule", choices=["noam", "cosine"])
    train.add_argument("--device", choices=["auto", "cpu", "cuda", "mps"])
    train.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"],
                       help="auto (default): bf16 autocast where the CPU has AVX-512 BF16 or AMX (or the GPU bf16), "
                            "else fp32; the log and status.json say which and why")
    train.add_argument("--compile", action=argparse.BooleanOptionalAction,
                       help="torch.compile the training step (off by default: slow to compile on a CPU)")
    p.add_argument("--nice", type=arguments.number, default=0, metavar="N",
                   help="lower this process's CPU priority by N (Unix nice), so that programs beside it, such as "
                        "the app's translations, get the cores first; the Train page starts runs at 10")
    ddp = p.add_argument_group("distributed (torchrun)")
    ddp.add_argument("--start-timeout", type=arguments.number, default=START_TIMEOUT, metavar="SECONDS",
                     help="fail, naming the missing ranks, when not all ranks have joined after this long")
    ddp.add_argument("--collective-timeout", type=arguments.number, default=COLLECTIVE_TIMEOUT, metavar="SECONDS",
                     help="fail when a rank waits this long for the others in a barrier (rank 0 evaluates alone)")
    return p


def check_command(argv: Sequence[str]) -> None:
    """What main checks before it writes anything, for a command another program builds (the Train page): every
    flag's range (flags.RANGES) and, for a new run, its spec. ValueError (CorpusError is one) with main's message."""
    parser, problem = build_parser(), io.StringIO()
    try:
        with contextlib.redirect_stderr(problem):
            args = arguments.parse_args(parser, argv)
    except SystemExit:
        raise ValueError(problem.getvalue().strip().splitlines()[-1]) from None
    check_args(args)
    if args.out:
        spec_from_args(args)


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    preset = PRESETS[args.preset]
    sections = {"model": dict(preset["model"]), "tokenizer": dict(preset["tokenizer"]), "train": dict(preset["train"])}
    for flag, (section, field) in OVERRIDES.items():
        value = getattr(args, flag)
        if value is not None:
            sections[section][field] = value
    layers = sections["model"].pop("layers", None)
    if layers is not None:
        sections["model"] |= {"n_encoder_layers": layers, "n_decoder_layers": layers}
    if not args.init_from:  # the model's sizes before the run is made, not after its tokenizer is trained
        vocab = sections["tokenizer"].get("vocab_size", TokenizerSettings.vocab_size)
        ModelConfig(**sections["model"], src_vocab_size=vocab, tgt_vocab_size=vocab)
    else:
        given = [flag for flag, (section, _) in OVERRIDES.items()
                 if section in ("model", "tokenizer") and getattr(args, flag) is not None]
        if given:
            raise ValueError(f"--init-from keeps the checkpoint's architecture and vocabulary: drop "
                             f"{', '.join('--' + f.replace('_', '-') for f in given)}")
        if not (Path(args.init_from) / CONFIG_FILE).is_file():
            raise ValueError(f"--init-from {args.init_from}: not a checkpoint directory (no {CONFIG_FILE})")
    return RunSpec(corpus_from_args(args), TokenizerSettings(**sections["tokenizer"]), sections["model"],
                   TrainConfig(**sections["train"]), preset=args.preset, init_from=args.init_from)


def corpus_from_args(args: argparse.Namespace) -> CorpusSpec:
    if not args.mix:
        return CorpusSpec(kind=args.corpus or "bible", src=args.src, tgt=args.tgt,
                          src_translation=args.src_translation, tgt_translation=args.tgt_translation,
                          path=args.path, hf_name=args.hf_name, hf_config=args.hf_config, src_field=args.src_field,
                          tgt_field=args.tgt_field, max_words=args.max_words, dedup=args.dedup,
                          train_pairs=args.train_pairs)
    if args.corpus or args.path or args.hf_name:
        raise CorpusError("--mix names each part itself: drop --corpus, --path and --hf-name "
                          "(e.g. --mix tsv:PATH=1 --mix hf:NAME=1)")
    return CorpusSpec.mix([mix_part(parse_mix_arg(text), args) for text in args.mix])


def mix_part(arg: MixArg, args: argparse.Namespace) -> MixPart:
    """One --mix part as a corpus spec: the run's languages and filters, and the part's own source."""
    common = dict(src=args.src, tgt=args.tgt, max_words=args.max_words, dedup=args.dedup)
    if arg.kind == "bible":
        src_translation, tgt_translation = (split_bible_value(arg.value) if arg.value
                                            else (args.src_translation, args.tgt_translation))
        spec = CorpusSpec(kind="bible", src_translation=src_translation, tgt_translation=tgt_translation, **common)
    elif arg.kind in ("tsv", "debian"):
        spec = CorpusSpec(kind=arg.kind, path=arg.value, **common)
    elif arg.kind == "hf":
        spec = CorpusSpec(kind="hf", hf_name=arg.value, hf_config=args.hf_config, src_field=args.src_field,
                          tgt_field=args.tgt_field, **common)
    elif arg.kind == "teaching" and not arg.value:
        spec = CorpusSpec(kind="teaching", train_pairs=args.train_pairs, **common)
    else:
        raise CorpusError(f"--mix {arg.kind}{':' + arg.value if arg.value else ''}: expected bible[:SRC/TGT], "
                          "teaching, tsv:PATH, debian:PATH or hf:NAME")
    return MixPart(spec, arg.weight)


def resume_overrides(args: argparse.Namespace) -> dict:
    """Training flags given with --resume change the stored config (e.g. a larger --max-steps)."""
    return {field: getattr(args, flag) for flag, (section, field) in OVERRIDES.items()
            if section == "train" and getattr(args, flag) is not None}


def format_record(record: dict, max_steps: int) -> str:
    if "train_loss" in record:
        eta = record["elapsed"] / max(record["step"], 1) * (max_steps - record["step"])
        return (f"step {record['step']:>6}/{max_steps}  loss {record['train_loss']:.3f}  lr {record['lr']:.2e}  "
                f"{record['tokens_per_s']:,.0f} tok/s  grad {record['grad_norm']:.2f}  ETA {eta / 60:.1f} min")
    scores = "  ".join(f"{k} {record[k]:.2f}" for k in ("dev_loss", "dev_bleu", "dev_chrf", "dev_exact", "dev_aer_best")
                       if k in record)
    best_head = f" ({record['dev_aer_best_head']})" if "dev_aer_best_head" in record else ""
    return f"eval at step {record['step']}: {scores}{best_head}"


class StepBar:
    """The training steps as a tqdm bar with the loss and tokens/s; tqdm's rate gives the ETA."""

    def __init__(self, max_steps: int):
        self.max_steps, self.bar = max_steps, None

    def update(self, record: dict) -> None:
        if "train_loss" not in record:
            return
        if self.bar is None:  # from the first logged step, so that a resumed run's rate and ETA are its own
            self.bar = tqdm(total=self.max_steps, initial=record["step"], desc="training", unit="step",
                            file=sys.stderr, dynamic_ncols=True)
        self.bar.set_postfix(loss=f"{record['train_loss']:.3f}", tok_s=f"{record['tokens_per_s']:,.0f}",
                             refresh=False)
        self.bar.update(record["step"] - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def lower_priority(increment: int) -> str:
    """Lower this process's CPU priority by `increment`, before the training threads start (they inherit it).
    Returns what to log: the new nice value, or why it is unchanged."""
    if increment <= 0:
        return "priority: unchanged"
    if not hasattr(os, "nice"):  # Windows
        return "priority: unchanged (this system has no nice)"
    niceness = os.nice(increment)
    tasks = Path("/proc/self/task")
    if tasks.is_dir():  # Linux keeps a nice value per thread: the threads importing torch started stay behind
        for task in tasks.iterdir():
            with contextlib.suppress(OSError, ValueError):
                os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)
    # Linux's autogroup scheduler shares the cores between sessions first and applies nice only within a session, so
    # a run in a session of its own (as the app starts one) must lower its session's weight too, or it gains nothing
    autogroup = Path("/proc/self/autogroup")
    if not autogroup.exists() or not _autogroups_enabled():
        return f"priority: nice {niceness} (programs beside this run get the cores first)"
    if os.getsid(0) != os.getpid():
        return (f"priority: nice {niceness} within this terminal's session: Linux shares the cores between sessions "
                "first (autogroup), so programs of other sessions do not gain; start the run with setsid to yield")
    try:
        autogroup.write_text(str(niceness))
    except OSError as e:
        return f"priority: nice {niceness}, but its session's scheduling group is unchanged ({e.strerror})"
    return f"priority: nice {niceness}, its session's scheduling group too (programs beside it get the cores first)"


def _autogroups_enabled() -> bool:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


def core_plan(threads: int | None, nice: int) -> CorePlan:
    """This run's threads and wait policy: planned now, or carried by the restart that applied the policy."""
    reason = os.environ.get(PLAN_REASON)
    policy = os.environ.get(WAIT_POLICY)
    if reason is not None and policy is not None:
        return CorePlan(threads or cores.usable_cores(), policy, reason)
    if policy is None and "LOCAL_RANK" in os.environ:
        return CorePlan(threads or torch.get_num_threads(), None, "under torchrun the ranks keep the launcher's "
                        f"environment: set {WAIT_POLICY} before torchrun to change how their threads wait")
    return cores.plan_cores(threads, cores.usable_cores(), cores.busy_cores(), shared=nice > 0, policy_set=policy)


def main(argv: list[str] | None = None) -> int:
    """The command line. Called with argv None (a real command line, not a test in this process) it also applies
    the core plan: it starts the process again with the plan's OMP_WAIT_POLICY, which OpenMP reads only when
    torch loads, and sets torch's threads."""
    args = arguments.parse_args(build_parser(), argv)  # "--lr -inf" reaches the range check
    try:  # every flag's range, before anything is planned or written
        check_args(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    plan = core_plan(args.threads, args.nice)
    if argv is None and cores.wants_restart(plan):  # before lower_priority: a restarted process keeps its nice value
        os.execve(sys.executable, [sys.executable, "-m", "transformer.training.cli", *sys.argv[1:]],
                  {**os.environ, WAIT_POLICY: plan.policy, PLAN_REASON: plan.reason})
    if argv is None:
        torch.set_num_threads(plan.threads)  # a resumed run's recorded --threads still wins (setup_device)
    priority = lower_priority(args.nice)
    if bool(args.out) == bool(args.resume):
        print("error: give exactly one of --out (new run) or --resume (existing run)", file=sys.stderr)
        return 2
    timeouts = dict(start_timeout=args.start_timeout, collective_timeout=args.collective_timeout)
    try:
        if args.out:
            spec = spec_from_args(args)  # every rank validates the flags; rank 0 alone creates the run
            root = create_run(args.out, spec) if int(os.environ.get("RANK", "0")) == 0 else args.out
            trainer = Trainer(root, **timeouts)
        else:
            root = args.resume
            trainer = Trainer(root, overrides=resume_overrides(args), **timeouts)
    except (TrainingError, CorpusError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    handlers = [logging.FileHandler(RunFiles(trainer.files.root).log, encoding="utf-8")] if trainer.is_main else []
    terminal = is_terminal() and trainer.is_main
    handlers.append(BarSafeHandler() if terminal else logging.StreamHandler(sys.stderr))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", handlers=handlers, force=True)

    def stop(signum, frame):
        log.info("received %s: saving a checkpoint and stopping", signal.Signals(signum).name)
        trainer.request_stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    log.info("run %s: %s", root, replace(trainer.spec.train))
    log.info(priority)
    log.info(plan.describe())
    bar = StepBar(trainer.config.max_steps) if terminal else None
    try:
        for record in trainer.fit():
            if trainer.is_main:  # on a terminal the bar shows the steps; train.log still gets each line
                log.info(format_record(record, trainer.config.max_steps), extra={PROGRESS: "train_loss" in record})
                if bar is not None:
                    bar.update(record)
    except (TrainingError, CorpusError, TokenizerError, CheckpointError, ValueError) as e:
        log.error("error: %s", e)
        return 1
    except Exception:  # a bug, not a user error: keep the traceback in train.log
        log.exception("training crashed")
        return 1
    finally:
        if bar is not None:
            bar.close()
    log.info("done: %s%s", root, f" ({trainer.ended_by})" if trainer.ended_by else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
