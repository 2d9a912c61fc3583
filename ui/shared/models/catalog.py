"""Where the explorer finds models and runs, and what it says about a model: pure Python, no streamlit.

`checkpoints/` (shipped or copied models) and `runs/` (training runs) are relative to the repository;
EXPLORER_CHECKPOINTS and EXPLORER_RUNS point them elsewhere (tests use tmp dirs).

Discovery never fails on one bad model: metadata.json and status.json are read only when they are regular files
of at most MAX_METADATA_BYTES, and checked by type; a model whose metadata is wrong, or whose directory links out
of its folder, is listed as unreadable with the reason, and the others as usual.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformer.files import read_json_object, read_small_text
from transformer.model.checkpoint_files import (
    CONFIG_FILE,
    MAX_JSON_BYTES,
    METADATA_FILE,
    WEIGHTS_FILE,
    checkpoint_order,
)
from transformer.model.metadata import metadata_problem
from transformer.runs import RunFiles, read_status

MAX_METADATA_BYTES = MAX_JSON_BYTES[METADATA_FILE]

REPO = Path(__file__).resolve().parents[3]


def checkpoints_dir() -> Path:
    return Path(os.environ.get("EXPLORER_CHECKPOINTS") or REPO / "checkpoints")


def runs_dir() -> Path:
    return Path(os.environ.get("EXPLORER_RUNS") or REPO / "runs")


@dataclass(frozen=True)
class ModelChoice:
    label: str  # shown in the picker
    path: str  # checkpoint directory, as a string so that it is hashable and JSON-friendly
    key: str  # its name in a link: the directory name of a shipped model, run/NAME/best of a run's
    summary: str = ""  # one line: the language pair and what the model is for
    languages: tuple[str, str] | None = None  # (source, target) codes its metadata records, if it does
    problem: str = ""  # why it cannot be opened (its metadata, a link out of its folder); "" when it can


def _is_checkpoint(path: Path) -> bool:
    try:
        return (path / CONFIG_FILE).is_file() and (path / WEIGHTS_FILE).is_file()
    except OSError:  # a name the file system refuses (too long, unreadable): no checkpoint there
        return False


def is_model_path(path: str | Path) -> bool:
    """True for a directory inside checkpoints/ or the runs folder (after resolving `..` and symbolic links): the
    only places the explorer opens a model from, whatever a link, a session, a run name or a symlink says."""
    return _inside_roots(Path(path)) is not None


def _inside_roots(path: Path) -> Path | None:
    """The folder (checkpoints/ or the runs folder) that path really lies in once links are resolved, or None."""
    target = Path(os.path.realpath(path))
    for root in (checkpoints_dir(), runs_dir()):
        root = Path(os.path.realpath(root))
        if target != root and target.is_relative_to(root):
            return root
    return None


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file, or {} when it is missing, half-written, not an object, not a regular file (a
    FIFO would block the page) or larger than MAX_METADATA_BYTES."""
    return read_json_object(path, MAX_METADATA_BYTES)


def read_metadata(path: Path) -> tuple[dict[str, Any], str]:
    """A checkpoint's metadata and "" when it is usable; {} and the reason when it is not (a missing file is {})."""
    file = path / METADATA_FILE
    if not file.exists() and not file.is_symlink():
        return {}, ""
    if not is_model_path(file):
        return {}, f"{METADATA_FILE} links outside the folder"
    if read_small_text(file, MAX_METADATA_BYTES) is None:
        return {}, f"{METADATA_FILE} is not a regular file of at most {MAX_METADATA_BYTES // 1024:,} KB"
    metadata = read_json(file)
    problem = metadata_problem(metadata) if metadata else f"{METADATA_FILE} is not a JSON object"
    return (metadata, "") if problem is None else ({}, f"{METADATA_FILE}: {problem}")


def _choice(path: Path, label: str, key: str) -> ModelChoice:
    """The picker's entry for the checkpoint at path: described by its metadata, or marked unreadable."""
    problem = "" if is_model_path(path) else "it links outside its folder"
    metadata, problem = ({}, problem) if problem else read_metadata(path)
    if problem:
        return ModelChoice(f"{label} (unreadable)", str(path), key, f"Cannot be opened: {problem}", None, problem)
    return ModelChoice(label + language_pair(metadata, " · "), str(path), key, summary(metadata), languages(metadata))


APP_MODEL = "en-fr-teaching"  # the model the app opens first: it translates its sentences right (99% exact)
PAGE_SIZE = 40  # models, or runs, listed at once: the files of a folder are read only when it is listed
CHECKPOINT_NAMES = ("best", "latest")  # a run's checkpoints the picker offers


def subfolders(root: Path, *, newest_first: bool = False) -> list[Path]:
    """root's folders (not hidden), by name or newest first: one listing of root and, for the order by time, one
    stat per folder; no file inside a folder is opened."""
    if not root.is_dir():
        return []
    found = []
    with os.scandir(root) as entries:
        for entry in entries:
            try:
                if entry.is_dir() and not entry.name.startswith("."):
                    found.append((entry.stat().st_mtime if newest_first else 0.0, entry.name))
            except OSError:  # removed while listed
                continue
    # newest first: equal times by name, last first (run names hold their start time: run-20261202-031500)
    return [root / name for _, name in sorted(found, reverse=newest_first)]


def _shipped(path: Path) -> ModelChoice | None:
    return _choice(path, path.name, path.name) if _is_checkpoint(path) else None


def _run_choices(run: Path) -> list[ModelChoice]:
    """A run's checkpoints as picker entries, labelled with the run's state."""
    paths = [RunFiles(run).checkpoint(name) for name in CHECKPOINT_NAMES]
    if not any(_is_checkpoint(path) for path in paths):
        return []
    state = str(read_status(run).get("state", "starting"))[:20] if is_model_path(run) else "unreadable"
    return [_choice(path, f"run {run.name} / {name} ({state})", f"run/{run.name}/{name}")
            for name, path in zip(CHECKPOINT_NAMES, paths) if _is_checkpoint(path)]


def find_models(limit: int | None = PAGE_SIZE) -> list[ModelChoice]:
    """The first `limit` models (None: all): shipped checkpoints first (APP_MODEL, the package's default model,
    then by name), then the best/latest checkpoints of runs (newest run first). Only the folders listed are read,
    so 20,000 checkpoints cost what 40 do. The app opens the first: a newcomer's first translation is a good one,
    where the Bible model, the command line's default, writes "Dieu créa l'a créé" for Genesis 1:1."""
    choices: list[ModelChoice] = []
    full = lambda: limit is not None and len(choices) >= limit  # noqa: E731
    shipped = checkpoint_order(subfolders(checkpoints_dir()))
    for path in sorted(shipped, key=lambda p: p.name != APP_MODEL):  # stable: the rest keep their order
        if full():
            return choices
        choices += [c for c in [_shipped(path)] if c is not None]
    for run in subfolders(runs_dir(), newest_first=True):
        if full():
            break
        choices += _run_choices(run)
    return choices if limit is None else choices[:limit]


MAX_KEY_CHARS = 300  # a model key is a folder name (255 bytes at most on Linux) or run/NAME/CHECKPOINT


def find_model(key: str) -> ModelChoice | None:
    """The model a link names by its key (`ModelChoice.key`), wherever it is in the list, or None: read from its own
    folder only, and only inside checkpoints/ or the runs folder."""
    parts = key.split("/")
    if len(key) > MAX_KEY_CHARS or "\x00" in key:  # no folder has such a name: never ask the file system
        return None
    if len(parts) == 1 and parts[0] not in ("", ".", ".."):
        path = checkpoints_dir() / parts[0]
        return _shipped(path) if is_model_path(path) else None
    if len(parts) == 3 and parts[0] == "run" and parts[1] not in ("", ".", "..") and parts[2] in CHECKPOINT_NAMES:
        run = runs_dir() / parts[1]
        return next((c for c in _run_choices(run) if c.key == key), None) if is_model_path(run) else None
    return None


def checkpoint_stamp(path: str | Path) -> float:
    """Changes whenever a run rewrites the checkpoint, so a cached model is reloaded."""
    try:
        return (Path(path) / WEIGHTS_FILE).stat().st_mtime
    except OSError:
        return 0.0


LANGUAGES = {"en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
             "nl": "Dutch", "ar": "Arabic", "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "el": "Greek",
             "he": "Hebrew", "la": "Latin", "ro": "Romanian", "tr": "Turkish"}


def source_language(metadata: dict[str, Any]) -> str:
    """The name of the language a model reads ("English"), or "Source" when it is not recorded."""
    code = (languages(metadata) or ("",))[0]
    return LANGUAGES.get(code, f"Source ({code})" if code else "Source")


PURPOSES = {
    "teaching": "everyday sentences from a generated grammar, with gold word alignments: for class",
    "bible": "Bible verses: real text, biblical style",
    "debian": "modern text: software help and messages from Debian's archive",
    "tsv": "trained on a TSV file",
    "hf": "trained on a Hugging Face dataset",
}
MIX_PARTS = {"teaching": "teaching grammar", "bible": "Bible verses", "debian": "modern software text",
             "tsv": "a TSV file", "hf": "a Hugging Face dataset"}


def purpose(corpus: dict[str, Any]) -> str:
    """What a model's corpus is, in a few words; a mix names its parts ("a mix: Bible verses + modern …")."""
    if corpus.get("kind") != "mix":
        return PURPOSES.get(str(corpus.get("kind")), "")
    kinds = [str((part.get("corpus") or {}).get("kind")) for part in corpus.get("parts") or []
             if isinstance(part, dict)]
    return "a mix: " + " + ".join(MIX_PARTS.get(kind, kind) for kind in kinds) if kinds else "a mix of corpora"


def languages(metadata: dict[str, Any]) -> tuple[str, str] | None:
    """The (source, target) codes a checkpoint's metadata records (its corpus's, or an imported model's
    `languages`), or None."""
    pair = metadata.get("corpus") or metadata.get("languages") or {}
    src, tgt = str(pair.get("src") or ""), str(pair.get("tgt") or "")
    return (src, tgt) if src and tgt else None


def no_corpus(metadata: dict[str, Any]) -> str:
    """Why a view that needs the sentences of the model's corpus (its dev and test splits) has none here."""
    if metadata.get("source_model") and not metadata.get("corpus"):
        return (f"This model was imported from {metadata['source_model']} and records no training corpus, so what "
                "needs one has nothing to read: test sentences to pick, references, the dev sample of head "
                "statistics and head importance, and its own splits on the Dataset page. Every view of a sentence "
                "you type works.")
    return "The corpus this model was trained on cannot be loaded here, so there is no dev sample."


def language_pair(metadata: dict[str, Any], prefix: str = "") -> str:
    """prefix + "English → Arabic", or "" when the checkpoint does not record its languages."""
    pair = languages(metadata)
    return f"{prefix}{LANGUAGES.get(pair[0], pair[0])} → {LANGUAGES.get(pair[1], pair[1])}" if pair else ""


def translates(choices: list[ModelChoice]) -> str:
    """What the listed models translate, for the Home page: "English to French, Italian and Arabic"."""
    pairs = list(dict.fromkeys(c.languages for c in choices if c.languages))
    if not pairs:
        return "one language to another"
    sources = list(dict.fromkeys(LANGUAGES.get(src, src) for src, _ in pairs))
    targets = list(dict.fromkeys(LANGUAGES.get(tgt, tgt) for _, tgt in pairs))
    def listing(names: list[str]) -> str:
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{listing(sources)} to {listing(targets)}"


def summary(metadata: dict[str, Any]) -> str:
    """One line for the model picker: "English → French: everyday sentences …"."""
    what = purpose(metadata.get("corpus") or {})
    if not what and metadata.get("source_model"):
        what = f"imported from {metadata['source_model']} ({metadata.get('licence', 'licence unknown')})"
    return (language_pair(metadata) or "? → ?") + (f": {what}" if what else "")


def vocabulary(tokenizer) -> str:
    """The vocabulary as the Home page states it; a shared one says that the decoder may write any of its pieces."""
    if tokenizer is None:
        return "none (checkpoint has no tokenizer)"
    if tokenizer.shared:
        return (f"{tokenizer.kind}, one vocabulary of {tokenizer.tgt_vocab_size:,} pieces shared by both languages: "
                "the decoder may write a source-language piece too (sampling at temperature 1 with no top-k or "
                "top-p shows some)")
    return f"{tokenizer.kind}, {tokenizer.src_vocab_size:,} source / {tokenizer.tgt_vocab_size:,} target"


def describe(config, metadata: dict[str, Any], tokenizer) -> dict[str, str]:
    """The facts the Home page lists about a loaded model."""
    src, tgt = languages(metadata) or ("?", "?")
    facts = {
        "languages": f"{src} → {tgt}",
        "layers": f"{config.n_encoder_layers} encoder + {config.n_decoder_layers} decoder",
        "heads": str(config.n_heads),
        "d_model": str(config.d_model),
        "d_ff": str(config.d_ff),
        "parameters": f"{metadata['n_params']:,}" if "n_params" in metadata else "?",
        "vocabulary": vocabulary(tokenizer),
        "training data": metadata.get("description", "not recorded"),
        "training steps": str(metadata.get("step", "not recorded")),
    }
    if metadata.get("source_model"):
        facts["imported from"] = f"{metadata['source_model']}, licence {metadata.get('licence', 'not recorded')}"
    if metadata.get("elapsed") is not None:
        facts["training time"] = f"{float(metadata['elapsed']) / 60:.1f} min"
    if metadata.get("best_dev_bleu") is not None:
        facts["best dev BLEU (greedy, at evaluation)"] = f"{float(metadata['best_dev_bleu']):.1f}"
    if metadata.get("test_bleu") is not None:
        beam = f" (beam {metadata['test_beam']})" if metadata.get("test_beam") else ""
        facts["test BLEU" + beam] = f"{float(metadata['test_bleu']):.1f}"
    if metadata.get("test_exact") is not None:
        facts["test exact-match sentences"] = f"{float(metadata['test_exact']):.1f}%"
    best = metadata.get("test_aer_best_head")
    if isinstance(best, dict) and {"layer", "head", "aer"} <= best.keys():
        facts["best alignment head (test AER)"] = f"layer {best['layer']}, head {best['head']}: {best['aer']}%"
    return facts
