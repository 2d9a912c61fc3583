"""The Train page's form: the corpus and model choices that build a training command (ui.train.live_run shows
the run it starts)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from transformer.arguments import max_threads
from transformer.data.corpora.bible import BIBLE_TRANSLATIONS, DEFAULT_BIBLE_TRANSLATION
from transformer.data.corpora.mix import format_mix_arg
from transformer.data.corpora.tsv import tsv_kind
from transformer.training.presets import PRESETS
from ui.shared.models.catalog import ModelChoice, find_models
from ui.shared.text.plain import code, plain
from ui.shared.training import jobs

TEACHING = "Teaching (generated, en → fr)"
MIX = "Mix of corpora"


@dataclass(frozen=True)
class Corpus:
    args: list[str]  # the training CLI's corpus flags
    upload: bytes | None = None  # an uploaded TSV (checked): start_run saves it into the run, adds --path

    @property
    def languages(self) -> tuple[str, str]:
        """(source, target) codes the flags ask for (the CLI's defaults: en, fr)."""
        flags = dict(zip(self.args, self.args[1:]))
        return flags.get("--src", "en"), flags.get("--tgt", "fr")


def _checked(check, *values: str) -> bool:
    """check(*values), or False after showing its message."""
    try:
        check(*values)
    except ValueError as e:
        st.error(plain(e))
        return False
    return True


def _file_args(path) -> list[str]:
    """--corpus and --path for a file: the Debian corpus's four columns, or source<TAB>target."""
    return ["--corpus", tsv_kind(path), "--path", str(path)]


def _tsv(src: str, tgt: str) -> Corpus | None:
    """An upload, a file of the data folder, or (EXPLORER_ANY_TSV_PATH=1 only) any path on this machine."""
    base = ["--src", src, "--tgt", tgt]
    upload = st.file_uploader("Sentence pairs, one `source<TAB>target` per line (UTF-8)", type=["tsv", "txt"],
                              key="train_upload", help=f"At most {jobs.MAX_TSV_BYTES // 2**20} MB and "
                              f"{jobs.MAX_TSV_LINES:,} lines; checked before anything is written.")
    if upload is not None:
        data = upload.getvalue()
        if not _checked(jobs.check_tsv, data):
            return None
        st.caption(f"{jobs.check_tsv(data):,} sentence pairs; saved into the run when it starts.")
        return Corpus(["--corpus", "tsv", *base], data)
    files = jobs.data_files()
    if files:
        name = st.selectbox(f"…or a file of the data folder {code(jobs.data_dir())}", ["", *files],
                            key="train_data_file", format_func=lambda f: f or "—")
        if name:
            return Corpus([*base, *_file_args(jobs.data_file(name))])
    else:
        st.caption(f"Files put into {code(jobs.data_dir())} (.tsv or .txt) can be picked here too.")
    if jobs.any_tsv_path():  # a trusted single user: see README, "Limits and security"
        path = st.text_input("…or a TSV path on this machine", key="train_tsv_path")
        if path:
            return Corpus([*base, "--corpus", "tsv", "--path", path])
    return None


def _languages(key: str) -> tuple[str, str]:
    langs = sorted(DEFAULT_BIBLE_TRANSLATION)
    c1, c2 = st.columns(2)
    return (c1.selectbox("Source language", langs, index=langs.index("en"), key=f"{key}_src"),
            c2.selectbox("Target language", langs, index=langs.index("fr"), key=f"{key}_tgt"))


def _translations(container, lang: str, side: str, key: str) -> str | None:
    """The chosen Bible translations of `lang`, comma-separated ("k,2"), or None when none is chosen."""
    codes = [c for c, (language, _) in BIBLE_TRANSLATIONS.items() if language == lang]
    chosen = container.multiselect(f"{side} translations", codes, default=[DEFAULT_BIBLE_TRANSLATION[lang]],
                                   key=f"{key}_{lang}", format_func=lambda c: BIBLE_TRANSLATIONS[c][1],
                                   help="Train pairs every chosen source version with every chosen target version "
                                   "of a verse; dev and test use the first of each, in the order chosen.")
    return ",".join(chosen) or None


def _bible(src: str, tgt: str, key: str) -> tuple[str, str] | None:
    """The chosen (source, target) Bible translation codes, or None after a warning when a side has none."""
    c1, c2 = st.columns(2)
    codes = _translations(c1, src, "Source", f"{key}_src"), _translations(c2, tgt, "Target", f"{key}_tgt")
    if None in codes:
        st.warning("Choose at least one Bible translation on each side.")
        return None
    return codes


def _weighted(label: str, key: str, value: bool = True) -> float | None:
    """A part of the mix: a checkbox and its weight; the weight, or None when the part is left out."""
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    if not c1.checkbox(label, value=value, key=f"{key}_on"):
        return None
    return c2.number_input(f"Weight of {label}", 0.1, 100.0, 1.0, step=0.5, key=f"{key}_weight")


def _mix() -> Corpus | None:
    """Corpora of one language pair, each with a weight: its share of every epoch's training pairs."""
    src, tgt = _languages("train_mix")
    parts: list[tuple[str, str, float]] = []  # (shown name, --mix argument, weight)
    weight = _weighted("Bible", "train_mix_bible")
    codes = _bible(src, tgt, "train_mix_bible") if weight else None
    if weight and codes:
        parts.append(("Bible", format_mix_arg("bible", "/".join(codes), weight), weight))
    if (src, tgt) == ("en", "fr"):
        weight = _weighted("Teaching corpus", "train_mix_teaching", value=False)
        if weight:
            parts.append(("teaching", format_mix_arg("teaching", weight=weight), weight))
    files = jobs.data_files()
    chosen = st.multiselect(f"Files of the data folder {code(jobs.data_dir())}", files, key="train_mix_files",
                            help="source<TAB>target files, or the Debian corpus's (its own dev and test)") \
        if files else []
    for name in chosen:
        path = jobs.data_file(name)
        weight = st.number_input(f"Weight of {name}", 0.1, 100.0, 1.0, step=0.5, key=f"train_mix_file_{name}")
        parts.append((name, format_mix_arg(tsv_kind(path), str(path), weight), weight))
    if not parts:
        st.warning("Choose at least one part of the mix.")
        return None
    total = sum(w for _, _, w in parts)
    st.caption("Shares of each epoch's training pairs: " + ", ".join(f"{plain(name)} {w / total:.0%}"
                                                                    for name, _, w in parts) +
               ". Dev mixes up to 1,000 pairs of all parts; each part's test is scored apart "
               "(`python -m transformer.decoding.evaluate --part`).")
    return Corpus(["--src", src, "--tgt", tgt, *(a for _, arg, _ in parts for a in ("--mix", arg))])


def corpus_args() -> Corpus | None:
    """Corpus widgets; the CLI flags for the choice, or None (after a message where one is due) when incomplete."""
    kind = st.radio("Corpus", [TEACHING, "Bible", MIX, "TSV file", "Hugging Face dataset"], horizontal=True,
                    key="train_corpus", help="Teaching: everyday English -> French sentences from a generated grammar "
                    "with gold word alignments, so the charts show how well each head aligns (AER). Mix: several "
                    "corpora of one language pair, each with a weight.")
    if kind == TEACHING:
        return Corpus(["--corpus", "teaching"])
    if kind == "Bible":
        src, tgt = _languages("train_bible")
        codes = _bible(src, tgt, "train_bible")
        return None if codes is None else Corpus(["--corpus", "bible", "--src", src, "--tgt", tgt,
                                                  "--src-translation", codes[0], "--tgt-translation", codes[1]])
    if kind == MIX:
        return _mix()
    c1, c2, c3 = st.columns(3)
    src = c1.text_input("Source language code", "en", key="train_src")
    tgt = c2.text_input("Target language code", "fr", key="train_tgt")
    if not (_checked(jobs.check_language_code, src) and _checked(jobs.check_language_code, tgt)):
        return None
    if kind == "TSV file":
        return _tsv(src, tgt)
    hf_name = c3.text_input("Dataset name", "opus_books", key="train_hf_name",
                            help="A dataset of the Hugging Face Hub, downloaded by the server.")
    hf_config = c3.text_input("Config", "en-fr", key="train_hf_config")
    if not _checked(jobs.check_hf_name, hf_name, hf_config):
        return None
    return Corpus(["--corpus", "hf", "--src", src, "--tgt", tgt, "--hf-name", hf_name] + (
        ["--hf-config", hf_config] if hf_config else []))


def _start_from(corpus: Corpus | None) -> ModelChoice | None:
    """A trained model to fine-tune (--init-from), or None for a new one with random weights."""
    choices = {c.path: c for c in find_models()}
    path = st.selectbox("Start from", ["", *choices], key="train_init",
                        format_func=lambda p: choices[p].label if p else "a new model (random weights)",
                        help="Fine-tune a trained model on the corpus above: it keeps its weights, architecture "
                        "and vocabulary, so only the training settings below apply.")
    if not path:
        return None
    pair = choices[path].languages
    if corpus is not None and pair is not None and pair != corpus.languages:
        st.warning(f"{plain(choices[path].label)} translates {pair[0]} → {pair[1]}, the corpus "
                   f"{corpus.languages[0]} → {corpus.languages[1]}: its vocabulary was not made for that pair.")
    return choices[path]


def model_args(corpus: Corpus | None = None) -> list[str]:
    """Start from (a new model or a trained one), preset and main hyperparameters; each preset keeps its own widget
    values (its defaults differ). A fine-tuned model keeps its architecture and vocabulary: no fields for them."""
    start = _start_from(corpus)
    preset = st.selectbox("Preset", list(PRESETS), key="train_preset",
                          help="tiny: minutes on a CPU; small: the shipped model's size, about 70 minutes on 2 CPU "
                               "cores; base: the paper's base model.")
    p = PRESETS[preset]
    c1, c2, c3, c4 = st.columns(4)
    values = {
        "--max-steps": c1.number_input("Steps", 1, 1_000_000, p["train"]["max_steps"], key=f"train_steps_{preset}"),
        "--lr": c2.number_input("Peak learning rate", 1e-5, 1e-1, p["train"]["lr"], format="%.4f",
                                key=f"train_lr_{preset}"),
        "--d-model": c3.number_input("d_model", 16, 2048, p["model"]["d_model"], step=16, key=f"train_d_{preset}",
                                     disabled=start is not None),
        "--layers": c4.number_input("Layers (each stack)", 1, 12, p["model"]["n_encoder_layers"],
                                    key=f"train_l_{preset}", disabled=start is not None),
        "--vocab-size": c1.number_input("Vocabulary size", 100, 64_000, p["tokenizer"]["vocab_size"],
                                        key=f"train_v_{preset}", disabled=start is not None),
        "--max-tokens": c2.number_input("Tokens per batch", 64, 100_000, p["train"]["max_tokens"],
                                        key=f"train_t_{preset}"),
        "--eval-every": c3.number_input("Evaluate every (steps)", 1, 100_000, p["train"]["eval_every"],
                                        key=f"train_e_{preset}"),
    }
    device = c4.radio("Device", ["auto", "cpu", "cuda"], horizontal=True, key="train_device",
                      format_func={"auto": "auto", "cpu": "CPU", "cuda": "GPU"}.get)
    values["--save-every"] = values["--eval-every"]
    values["--log-every"] = max(1, min(p["train"]["log_every"], values["--eval-every"]))
    args = ["--preset", preset, "--device", device]
    if start is not None:
        args += ["--init-from", start.path]
        for flag in ("--d-model", "--layers", "--vocab-size"):
            del values[flag]
    for flag, value in values.items():
        args += [flag, str(value)]
    threads = st.number_input("CPU threads (0: all)", 0, max_threads(), 0, key="train_threads")
    return args + (["--threads", str(threads)] if threads else [])
