"""The tokenizer of an M2M100, NLLB-200, mBART, mBART-50 or BART folder, as a
`transformer.data.hub_tokenizer.HubTokenizer`: its pieces, its special ids checked against config.json, its language
codes and the languages it starts with.

Which tokens go where is the tokenizer class's (tokenizer_config.json's `tokenizer_class`, else the model type's
usual one); the ids are the folder's. M2M100's language codes are not in its files: they are fairseq's list, as
transformers' `M2M100Tokenizer` holds it (`M2M100_CODES`), numbered after vocab.json.
"""

from __future__ import annotations

import re
from typing import Any

from transformer.data.hub_tokenizer import HubTokenizer, Layout, SentencePieces, TokenizersPieces
from transformer.data.languages import LanguageError
from transformer.data.vocabulary import SpecialIds, TokenizerError
from transformer.model.config import ModelConfig
from transformer.model.hf.common import GENERATION_CONFIG, HF_CONFIG, TOKENIZER_CONFIG, ImportFailed, Source, read_json

TOKENIZER_JSON, SPM_MODEL, VOCAB_JSON = "tokenizer.json", "sentencepiece.bpe.model", "vocab.json"
FILES = [TOKENIZER_JSON, SPM_MODEL, VOCAB_JSON, TOKENIZER_CONFIG, "special_tokens_map.json"]
M2M100_CODES = {
    "m2m100": "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he hi hr "
              "ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or "
              "pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu".split(),
    "wmt21": "en ha is ja cs ru zh de".split(),
}
# tokenizer class -> where the source language's token goes, and what the target language's token is
CLASSES = {"M2M100Tokenizer": ("start", "forced"), "NllbTokenizer": ("start", "forced"),
           "MBart50Tokenizer": ("start", "forced"), "MBartTokenizer": ("end", "start"), "BartTokenizer": (None, None),
           "RobertaTokenizer": (None, None)}
MBART_CODE = re.compile(r"[a-z]{2}_[A-Z]{2}")
LANGUAGE_CODE = {"NllbTokenizer": re.compile(r"[a-z]{3}_[A-Z][a-z]{3}"),  # when tokenizer_config.json lists none
                 "MBartTokenizer": MBART_CODE, "MBart50Tokenizer": MBART_CODE}


def tokenizer_class(source: Source, hf: dict[str, Any], config: dict[str, Any]) -> str:
    """tokenizer_config.json's class (the slow one's name), else the model type's usual one."""
    named = config.get("tokenizer_class")
    if named is None:
        spm = (source.folder / SPM_MODEL).is_file() and not (source.folder / TOKENIZER_JSON).is_file()
        named = {"m2m_100": "M2M100Tokenizer" if spm else "NllbTokenizer", "mbart": "MBartTokenizer",
                 "bart": "BartTokenizer"}[hf["model_type"]]
    named = str(named).removesuffix("Fast")
    if named not in CLASSES:
        raise ImportFailed(f"{source.folder / TOKENIZER_CONFIG}: tokenizer_class {named!r} is not one we read "
                           f"({', '.join(CLASSES)})")
    return named


def _file(source: Source, name: str, hint: str) -> bytes:
    file = source.folder / name
    if not file.is_file():
        raise ImportFailed(f"{file}: file is missing ({hint})")
    return file.read_bytes()


def _pieces(source: Source, named: str, config: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """The pieces' backend and the language codes (code -> id)."""
    if named == "M2M100Tokenizer":
        model = _file(source, SPM_MODEL, "M2M100's SentencePiece model")
        vocab = read_json(source.folder / VOCAB_JSON)
        codes = M2M100_CODES.get(config.get("language_codes", "m2m100"))
        if codes is None:
            raise ImportFailed(f"{source.folder / TOKENIZER_CONFIG}: language_codes {config['language_codes']!r}: "
                               f"expected one of {', '.join(M2M100_CODES)}")
        languages = {code: len(vocab) + i for i, code in enumerate(codes)}
        added = {f"__{code}__": i for code, i in languages.items()}
        added |= {f"madeupword{i:04d}": len(vocab) + len(codes) + i for i in range(int(config.get("num_madeup_words",
                                                                                                    8)))}
        unk = vocab.get(config.get("unk_token", "<unk>"))
        if unk is None:
            raise ImportFailed(f"{source.folder / VOCAB_JSON}: has no <unk>")
        return SentencePieces(model, vocab, added, unk), languages
    text = _file(source, TOKENIZER_JSON, f"transformers writes it for a {named}: AutoTokenizer.from_pretrained(DIR)"
                                         ".save_pretrained(DIR) where transformers is installed").decode("utf-8")
    pieces = TokenizersPieces(text)
    listed = config.get("extra_special_tokens") or config.get("additional_special_tokens") or []
    listed = [t if isinstance(t, str) else t.get("content") for t in listed] if isinstance(listed, list) else []
    pattern = LANGUAGE_CODE.get(named)
    codes = [t for t in listed if t in pieces.tokens] or (
        [t for t in pieces.tokens if pattern.fullmatch(t)] if pattern else [])
    if pattern and not codes:
        raise ImportFailed(f"{source.folder / TOKENIZER_JSON}: a {named} without language codes")
    return pieces, {code: pieces.tokens[code] for code in sorted(codes, key=pieces.tokens.get)} if pattern else {}


def read_tokenizer(source: Source, hf: dict[str, Any], generation: dict[str, Any], config: ModelConfig,
                   src_lang: str | None, tgt_lang: str | None) -> HubTokenizer:
    """The folder's tokenizer for the model of config, translating src_lang -> tgt_lang (default: the folder's own
    choice); ImportFailed for a missing or inconsistent file, or a many-to-many model without languages."""
    folder = source.folder
    tconf = read_json(folder / TOKENIZER_CONFIG, required=False)
    named = tokenizer_class(source, hf, tconf)
    try:
        pieces, languages = _pieces(source, named, tconf)
    except TokenizerError as exc:
        raise ImportFailed(f"{folder}: {exc}") from exc
    ids = {}
    for name, default in (("pad", "<pad>"), ("eos", "</s>"), ("unk", "<unk>"), ("bos", "<s>")):
        token = tconf.get(f"{name}_token", default)
        token = token.get("content") if isinstance(token, dict) else token
        if token not in pieces.tokens:
            raise ImportFailed(f"{folder}: the tokenizer has no {name} token {token!r}")
        ids[name] = pieces.tokens[token]
    rules = {**hf, **generation}  # generation_config.json wins, as in transformers' generate
    for file, values in ((HF_CONFIG, hf), (GENERATION_CONFIG, generation)):
        for key in ("pad", "eos"):
            if values.get(f"{key}_token_id", ids[key]) != ids[key]:
                raise ImportFailed(f"{folder / file}: {key}_token_id is {values[f'{key}_token_id']}, but the "
                                   f"tokenizer's {key} token is {ids[key]}")
    bad = rules.get("bad_words_ids") or []
    if not isinstance(bad, list) or any(not isinstance(w, list) or len(w) != 1 for w in bad):
        raise ImportFailed(f"{folder}: bad_words_ids {bad}: only single tokens can be banned (ours: never)")
    source_at, target_as = CLASSES[named]
    if named == "NllbTokenizer" and tconf.get("legacy_behaviour"):
        source_at = "end"  # NLLB's first releases: pieces </s> [src_lang]
    start, forced = rules.get("decoder_start_token_id", ids["eos"]), rules.get("forced_bos_token_id")
    by_id = {i: code for code, i in languages.items()}
    src_lang = src_lang or tconf.get("src_lang")
    tgt_lang = tgt_lang or tconf.get("tgt_lang") or by_id.get(start if target_as == "start" else forced)
    if languages and not (src_lang and tgt_lang):
        example = " ".join(list(languages)[:2])
        raise ImportFailed(f"{source.name}: a many-to-many model ({len(languages)} languages): pass --src-lang CODE "
                           f"--tgt-lang CODE, e.g. {example} (translate and the app can change them later)")
    try:
        specials = SpecialIds(pad=ids["pad"], start=start, eos=ids["eos"], unk=ids["unk"],
                              never=tuple(sorted({ids["pad"], *(w[0] for w in bad)})),
                              forced=(forced,) if forced is not None and target_as is None else ())
        layout = Layout((ids["bos"],) if named in ("BartTokenizer", "RobertaTokenizer") else (), (ids["eos"],),
                        source_at, target_as)
        tokenizer = HubTokenizer(pieces, specials, layout, languages, special_ids={ids["bos"]}, src_lang=src_lang,
                                 tgt_lang=tgt_lang, clean_up_spaces=bool(tconf.get("clean_up_tokenization_spaces")))
    except LanguageError as exc:
        raise ImportFailed(f"{source.name}: {exc} (--src-lang, --tgt-lang)") from exc
    except TokenizerError as exc:
        raise ImportFailed(f"{folder}: special ids: {exc}") from exc
    if tokenizer.src_vocab_size != config.src_vocab_size:
        raise ImportFailed(f"{folder}: the tokenizer has {tokenizer.src_vocab_size:,} tokens, but {HF_CONFIG} has "
                           f"embeddings of {config.src_vocab_size:,} rows")
    return tokenizer

