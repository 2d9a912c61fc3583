"""Translate text with a checkpoint: the `Translator` that the app and the command line share.

    python -m transformer.decoding.translate "In the beginning God created the heaven and the earth."
    python -m transformer.decoding.translate --beam 4 --nbest 3 --json < sentences.txt
    python -m transformer.decoding.translate --sample --temperature 0.8 --top-k 50 --top-p 0.9 --seed 1 \
        --num-samples 3 "..."
    python -m transformer.decoding.translate --prefix "La femme" "The man is here."   # forced: decodes on from it
    python -m transformer.decoding.translate --checkpoint checkpoints/nllb-600m --src-lang eng_Latn \
        --tgt-lang arb_Arab "..."

On stdin each line is one sentence, lines split on "\\n" only (U+2028, a form feed and the like stay inside their
line, so output line i is the translation of input line i); an empty line gives an empty line, and a byte-order
mark at the start is dropped.

Without --checkpoint, checkpoints/en-fr-bible (DEFAULT_MODEL) is used, or else the first checkpoint
directory by name under the repository's checkpoints/. Input is normalised as the training corpora are
(`data.normalize_text`), then by the tokenizer. Empty input, and text that is not valid Unicode (a lone
surrogate such as "\\ud800", which is what undecodable bytes become), raise `TranslationError`.
A source longer than the model's max_len tokens is cut to its first max_len - 1 pieces plus </s>: the
result's `warnings` says so, as it says when the output hit the length limit without </s> or when source
pieces are unknown to the vocabulary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from transformer import arguments
from transformer.data.corpora.base import normalize_text
from transformer.data.languages import with_languages
from transformer.decoding.prefix import Prefix, encode_prefix
from transformer.decoding.search import DEFAULT_SETTINGS, DecodeResult, SearchMaps, SearchSettings, search
from transformer.decoding.session import DecodingSession
from transformer.model.checkpoint import CONFIG_FILE, Checkpoint, CheckpointError, load_checkpoint
from transformer.model.checkpoint_files import DEFAULT_MODEL, checkpoint_order  # noqa: F401 (imported from here)
from transformer.progress import Counter

log = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parents[2]  # transformer/decoding/translate.py -> the checkout (or site-packages)
# the shipped models: checkpoints/ in a checkout, attention_explorer/checkpoints after `pip install .` (pyproject)
CHECKPOINTS_DIR = next((d for d in (_ROOT / "checkpoints", _ROOT / "attention_explorer" / "checkpoints") if d.is_dir()),
                       _ROOT / "checkpoints")


def find_checkpoint(root: Path = CHECKPOINTS_DIR) -> Path | None:
    """DEFAULT_MODEL under root, or else the first directory by name that holds a config.json."""
    if not root.is_dir():
        return None
    return next((p for p in checkpoint_order(root.iterdir()) if (p / CONFIG_FILE).is_file()), None)


DEFAULT_CHECKPOINT_DIR = find_checkpoint()


class TranslationError(ValueError):
    """The input cannot be translated (empty, nothing left after normalisation, or not valid Unicode)."""


def _shown(text: str, limit: int = 40) -> str:
    """text for an error message: its repr, cut so that a 10,000-character input makes a one-line message."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


def check_text(text: object) -> str:
    """text itself, or TranslationError when it is not a str or holds a lone surrogate (it cannot be encoded)."""
    if not isinstance(text, str):
        raise TranslationError(f"expected text, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise TranslationError(f"the text is not valid Unicode: a lone surrogate {text[e.start]!r} at character "
                               f"{e.start + 1} (undecodable bytes?)") from None
    return text


@dataclass
class Source:
    text: str  # normalised
    ids: list[int]  # pieces + </s>, at most max_len
    pieces: list[str]
    warnings: list[str]


@dataclass
class Alternative:
    text: str
    token_ids: list[int]
    score: float
    normalized_score: float


@dataclass
class TranslationAttention:
    """Every attention map of one sentence: as greedy search or sampling computed them, else (beam search) a
    teacher-forced pass over the source and the output; the two agree within 1e-6.

    The decoder reads start + output[:-1] (start: <s>, or pad for Marian); its query t is the one that emitted
    output token t, so row t of `cross` and `dec_self` belongs to target_pieces[t] and equals what decoding
    recorded at step t."""

    source_pieces: list[str]  # rows and columns of enc_self, columns of cross
    target_input_pieces: list[str]  # what the decoder reads: the columns of dec_self
    target_pieces: list[str]  # what it emitted: the rows of dec_self and cross
    enc_self: list[Tensor]  # n_encoder_layers x (H, S, S)
    dec_self: list[Tensor]  # n_decoder_layers x (H, T, T)
    cross: list[Tensor]  # n_decoder_layers x (H, T, S)


@dataclass
class Translation:
    source: str  # the normalised input
    text: str
    source_ids: list[int]
    source_pieces: list[str]
    token_ids: list[int]  # output ids, ending with </s> unless the length limit cut it
    target_pieces: list[str]
    token_probs: list[float]  # probability of each output token when it was chosen (or forced)
    score: float  # total log-probability
    normalized_score: float  # score / length penalty
    alternatives: list[Alternative]  # the rest of the n-best list, best first
    warnings: list[str]
    attention: TranslationAttention | None = None
    forced: int = 0  # the first `forced` output tokens (of every alternative too) are forced: the tokenizer's own
    # (a target language token, transformers' forced_bos_token_id), then the forced prefix's

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the attention tensors."""
        data = dataclasses.asdict(dataclasses.replace(self, attention=None))
        del data["attention"]
        return data


class Translator:
    """A checkpoint's model and tokenizer, ready to translate; checkpoint=None takes the default one."""

    def __init__(self, checkpoint: str | Path | Checkpoint | None = None, *, device: str = "cpu",
                 batch_size: int = 32, src_lang: str | None = None, tgt_lang: str | None = None):
        if checkpoint is None:
            checkpoint = DEFAULT_CHECKPOINT_DIR
        if checkpoint is None:
            raise CheckpointError(
                f"no checkpoint under {CHECKPOINTS_DIR}: train one with "
                "`python -m transformer.training --out runs/NAME` and copy runs/NAME/checkpoints/best there, or pass "
                "the path of a checkpoint directory")
        if not isinstance(checkpoint, Checkpoint):
            checkpoint = load_checkpoint(checkpoint, device)
        if checkpoint.tokenizer is None:
            raise CheckpointError(f"{checkpoint.path}: has no tokenizer, so it cannot translate text")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.checkpoint, self.model, self.tokenizer = checkpoint, checkpoint.model, checkpoint.tokenizer
        if src_lang or tgt_lang:  # a many-to-many model's languages (LanguageError, a ValueError, for others)
            self.tokenizer = with_languages(checkpoint.tokenizer, src_lang, tgt_lang)
        self.specials = self.tokenizer.specials  # where decoding starts and stops, what it never emits
        self.batch_size = batch_size
        self.device = next(self.model.parameters()).device

    def with_languages(self, src_lang: str | None = None, tgt_lang: str | None = None) -> Translator:
        """The same model translating src_lang -> tgt_lang (None keeps a side): a many-to-many model's languages."""
        return Translator(dataclasses.replace(self.checkpoint, tokenizer=self.tokenizer), batch_size=self.batch_size,
                          src_lang=src_lang, tgt_lang=tgt_lang)

    def prepare(self, text: str) -> Source:
        """Normalise and encode one input, truncated to the model's max_len."""
        normalized = normalize_text(check_text(text))
        ids = self.tokenizer.encode_source(normalized)
        if not normalized or len(ids) < 2:
            raise TranslationError(f"nothing to translate in {_shown(text)}")
        warnings = []
        max_len = self.model.config.max_len
        if len(ids) > max_len:
            warnings.append(f"input has {len(ids)} tokens; the model reads at most {max_len}, so it was truncated "
                            f"to the first {max_len - 1} pieces")
            ids = ids[: max_len - 1] + [self.specials.eos]
        if (n_unknown := ids.count(self.specials.unk)) > 0:
            warnings.append(f"{n_unknown} source piece(s) unknown to the vocabulary (shown as <unk>)")
        for warning in warnings:
            log.warning("%s", warning)
        return Source(normalized, ids, self.tokenizer.source_pieces(ids), warnings)

    def translate(self, text: str, settings: SearchSettings = DEFAULT_SETTINGS, *, attention: bool = False,
                  prefix: Prefix | None = None) -> Translation:
        """text's translation; with a prefix (a target text, or target piece ids), one that starts with it."""
        return self.translate_batch([text], settings, attention=attention, prefix=prefix)[0]

    def prefix_ids(self, prefix: Prefix) -> list[int]:
        """A forced prefix's target ids: a text's pieces (without </s>), or the ids; ValueError when the tokenizer
        cannot make it (`transformer.decoding.prefix`; the length is checked against each source's limit)."""
        if isinstance(prefix, str):
            check_text(prefix)
        return encode_prefix(self.tokenizer, prefix)

    def translate_batch(self, texts: Sequence[str], settings: SearchSettings = DEFAULT_SETTINGS, *,
                        attention: bool = False, progress: Callable[[int, int], None] | None = None,
                        prefix: Prefix | None = None) -> list[Translation]:
        """Translate in batches of sentences of similar length; results in input order. A prefix (text or ids) is
        forced at the start of every output: decoding goes on from it.

        progress(done, total), when given, is called after each batch with the number of sentences translated.
        """
        forced = self.prefix_ids(prefix) if prefix is not None else []
        sources = []
        for i, text in enumerate(texts):
            try:
                sources.append(self.prepare(text))
            except TranslationError as e:
                raise TranslationError(f"input {i + 1}: {e}" if len(texts) > 1 else str(e)) from None
        order = sorted(range(len(sources)), key=lambda i: len(sources[i].ids))
        results: list[Translation | None] = [None] * len(sources)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            src = torch.full((len(batch), max(len(sources[i].ids) for i in batch)), self.specials.pad,
                             device=self.device)
            for row, i in enumerate(batch):
                src[row, : len(sources[i].ids)] = torch.tensor(sources[i].ids)
            settings = dataclasses.replace(settings, record_steps=False)
            # greedy search and sampling keep their maps as they go; beam search's best is known at the end only
            found = search(self.model, src, settings, specials=self.specials, prefix=forced,
                           maps=attention and settings.beam_size == 1)
            for i, decoded in zip(batch, found):
                results[i] = dataclasses.replace(self._translation(sources[i], decoded, attention),
                                                 forced=len(self.specials.forced) + len(forced))
            if progress is not None:
                progress(min(start + self.batch_size, len(order)), len(order))
        return results

    def _translation(self, source: Source, decoded: DecodeResult, attention: bool) -> Translation:
        hypotheses = decoded.hypotheses
        best, warnings = hypotheses[0], list(source.warnings)
        if not best.finished:
            warnings.append(f"the output reached the length limit ({len(best.tokens)} tokens) without </s>")
        alternatives = [Alternative(self.tokenizer.decode_target(h.tokens), h.tokens, h.score, h.normalized_score)
                        for h in hypotheses[1:]]
        return Translation(
            source=source.text,
            text=self.tokenizer.decode_target(best.tokens),
            source_ids=source.ids,
            source_pieces=source.pieces,
            token_ids=best.tokens,
            target_pieces=self.tokenizer.target_pieces(best.tokens),
            token_probs=torch.tensor(best.log_probs).exp().tolist(),
            score=best.score,
            normalized_score=best.normalized_score,
            alternatives=alternatives,
            warnings=warnings,
            attention=None if not attention else self.attention_maps(source.ids, best.tokens, decoded.maps),
        )

    @torch.inference_mode()
    def attention_maps(self, source_ids: list[int], token_ids: list[int],
                       found: SearchMaps | None = None) -> TranslationAttention:
        """All attention maps for one source and one output: those its search kept (found), or a single
        teacher-forced pass (no logits)."""
        decoder_input = [self.specials.start] + token_ids[:-1]
        if found is None:
            src = torch.tensor([source_ids], device=self.device)  # (1, S)
            tgt = torch.tensor([decoder_input], device=self.device)  # (1, T)
            maps = self.model.attention_maps(src, tgt)
            found = SearchMaps(*([w[0] for w in family] for family in (maps.enc_self, maps.dec_self, maps.cross)))
        return TranslationAttention(
            source_pieces=self.tokenizer.source_pieces(source_ids),
            target_input_pieces=self.tokenizer.target_pieces(decoder_input),
            target_pieces=self.tokenizer.target_pieces(token_ids),
            enc_self=found.enc_self,  # n_encoder_layers x (H, S, S)
            dec_self=found.dec_self,  # n_decoder_layers x (H, T, T)
            cross=found.cross,  # n_decoder_layers x (H, T, S)
        )

    def session(self, text: str, settings: SearchSettings = DEFAULT_SETTINGS, *,
                prefix: Prefix | None = None) -> DecodingSession:
        """A step-through decoding of one input (its pieces: `prepare(text).pieces`), from a forced prefix if given."""
        forced = self.prefix_ids(prefix) if prefix is not None else []
        return DecodingSession(self.model, self.prepare(text).ids, settings, specials=self.specials, prefix=forced)


# ----------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m transformer.decoding.translate",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("text", nargs="?", help="the sentence to translate; without it, one sentence per stdin line")
    parser.add_argument("--checkpoint", help=f"checkpoint directory (default: the first under {CHECKPOINTS_DIR})")
    parser.add_argument("--beam", type=int, default=1, help="beam size; 1 is greedy search")
    parser.add_argument("--nbest", type=int, default=1, help="hypotheses to output per sentence (at most --beam)")
    parser.add_argument("--alpha", type=float, default=SearchSettings.alpha, help="length penalty exponent")
    parser.add_argument("--length-penalty", choices=["gnmt", "length"], default=SearchSettings.length_penalty)
    sampling = parser.add_argument_group("sampling (the names of Hugging Face's generate)")
    sampling.add_argument("--sample", action="store_true", help="draw each token instead of searching (do_sample)")
    sampling.add_argument("--temperature", type=float, default=1.0, help="< 1 sharpens, > 1 flattens (default 1)")
    sampling.add_argument("--top-k", type=int, default=0, help="draw from the k most probable tokens (default 0: all)")
    sampling.add_argument("--top-p", type=float, default=1.0,
                          help="draw from the smallest set of most probable tokens of mass >= p (default 1: all)")
    sampling.add_argument("--seed", type=int, default=0, help="the same seed draws the same samples (default 0)")
    sampling.add_argument("--num-samples", type=int, default=1, help="samples per sentence (num_return_sequences)")
    parser.add_argument("--prefix", help="target text every output starts with: decoding goes on from it")
    parser.add_argument("--src-lang", help="a many-to-many model's source language (en, eng_Latn, en_XX, ...)")
    parser.add_argument("--tgt-lang", help="its target language (fr, fra_Latn, fr_XX, ...): default, the import's")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences decoded together")
    parser.add_argument("--json", action="store_true", help="one JSON object per sentence (JSON Lines)")
    return arguments.parse_args(parser, argv)  # "--temperature -inf" reaches the range check


def format_plain(translation: Translation, nbest: int) -> str:
    """The translation; with --nbest (or --num-samples) > 1, `rank<TAB>normalised score<TAB>text` lines and a blank
    line (samples in the order drawn)."""
    if nbest == 1:
        return translation.text
    ranked = [(translation.normalized_score, translation.text)]
    ranked += [(a.normalized_score, a.text) for a in translation.alternatives]
    return "\n".join(f"{rank}\t{score:.4f}\t{text}" for rank, (score, text) in enumerate(ranked, 1)) + "\n"


def _stdin_text() -> str:
    return sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if hasattr(sys.stdin, "buffer") \
        else sys.stdin.read()


def stdin_lines(text: str) -> list[str]:
    """The sentences of stdin: split on "\\n" only (str.splitlines would also split at U+2028, U+0085, a form feed
    and more, and output lines would stop matching input lines), a line's trailing "\\r" (CRLF) and a leading
    byte-order mark dropped."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":  # the newline that ends the last line starts no new one
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def blank(text: str, translator: Translator | None = None) -> bool:
    """Nothing to translate in text: only whitespace, characters normalisation removes, or (given the translator)
    nothing its tokenizer reads (what `Translator.prepare` refuses)."""
    normalized = normalize_text(text)
    if not normalized.strip():
        return True
    return translator is not None and len(translator.tokenizer.encode_source(normalized)) < 2


EMPTY = Translation(source="", text="", source_ids=[], source_pieces=[], token_ids=[], target_pieces=[],
                    token_probs=[], score=0.0, normalized_score=0.0, alternatives=[],
                    warnings=["empty line: nothing to translate"])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    # undecodable bytes on stdin become lone surrogates (as in argv), which the Translator refuses by line
    texts = [args.text] if args.text is not None else stdin_lines(_stdin_text())
    try:
        if not texts:
            raise TranslationError("no input: give a sentence, or sentences on stdin")
        settings = SearchSettings(beam_size=args.beam, nbest=args.nbest, alpha=args.alpha,
                                  length_penalty=args.length_penalty, do_sample=args.sample,
                                  temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
                                  num_samples=args.num_samples)
        translator = Translator(args.checkpoint, device=args.device, batch_size=args.batch_size,
                                src_lang=args.src_lang, tgt_lang=args.tgt_lang)
        for number, text in enumerate(texts, 1):
            try:
                check_text(text)
            except TranslationError as e:
                raise TranslationError(f"line {number}: {e}" if len(texts) > 1 else str(e)) from None
        # stdin's empty lines come back empty; the others are translated in input order
        lines = [i for i, text in enumerate(texts) if args.text is not None or not blank(text, translator)]
        # a file of more than one batch shows its progress on stderr (stdout is the translations)
        log.setLevel(logging.INFO)
        with Counter("translating", log) as counter:
            progress = counter if len(lines) > args.batch_size else None
            done = translator.translate_batch([texts[i] for i in lines], settings, progress=progress,
                                              prefix=args.prefix)
    except (CheckpointError, ValueError) as e:  # TranslationError, bad settings or device, unreadable tokenizer
        print(f"error: {e}", file=sys.stderr)
        return 2
    translations = [EMPTY] * len(texts)
    for i, translation in zip(lines, done):
        translations[i] = translation
    for translation in translations:
        if translation is EMPTY and not args.json:
            print("")
        elif args.json:
            print(json.dumps(translation.to_dict(), ensure_ascii=False))
        else:
            print(format_plain(translation, args.num_samples if args.sample else args.nbest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
