"""A generated set of hostile and odd inputs for every text the app, the Translator and the CLI take.

`fuzz_inputs()` returns (category, text) pairs, the same on every call: hand-picked cases of each category, then
seeded random strings and mixtures of them. `tests/bad_input/test_fuzz.py` runs them everywhere; `bench/app_limits.py`
times them with the shipped model. HOSTILE_CHECKPOINTS damages a checkpoint directory in one way each, with the
error load_checkpoint must give; STDIN_LINES, SEARCH_FLAGS, RUN_NAMES and UPLOADS are the other entry points'
hostile inputs.
"""

from __future__ import annotations

import json
import os
import random

from safetensors.torch import load_file, save_file

LINK = "https://evil.example/x"
CATEGORIES: dict[str, list[str]] = {
    "empty": ["", " ", "\t", "\n", "\r\n", "   \t \n ", "\u00a0", "\u3000", "\u2003\u2009", "\u200b", "\ufeff"],
    "long": ["a" * 10_000, "the cat sleeps . " * 600, "x" * 1_001, "the " * 250, "word " * 199 + "end",
             ("In the beginning God created the heaven and the earth. " * 180)[:10_000], "é" * 10_000,
             "🙂" * 2_500, "the cat " * 49 + "sleeps"],
    "emoji": ["😀", "👨\u200d👩\u200d👧\u200d👦 family", "🇫🇷🇬🇧", "the cat 🐱 sleeps .", "👍🏽👍🏿", "❤️\ufe0f",
              "🏳️\u200d🌈", "\U0001f600" * 40, "🐈‍⬛ is a black cat", "🧑🏻\u200d🚀 in space"],
    "rtl and mixed scripts": ["مرحبا بالعالم", "שלום עולם", "the cat שלום sleeps", "\u202eevil\u202c text",
                              "abc \u202dxyz\u202c \u2066isolate\u2069", "日本語のテキスト", "中文 and English",
                              "हिन्दी पाठ", "ภาษาไทย", "Ελληνικά κείμενο", "Русский текст", "한국어 문장",
                              "e\u0301 vs é", "Z\u0334\u0321\u0327a\u0337\u0336l\u0335g\u0338o" * 20,
                              "а" + "pple (Cyrillic a)", "\u0627\u0644\u0652\u0643\u0650\u062a\u064e\u0627\u0628"],
    "zero-width and control": ["\u200b\u200c\u200d\u2060", "the\u200bcat", "\u00ad soft hyphen", "\x01\x02\x03",
                               "\x1b[31mred\x1b[0m", "\x7f\x80\x85\x9f", "line\rbreak", "\x0b\x0c", "a\u2028b\u2029c",
                               "\ufff9\ufffa\ufffb", "\ufffe\uffff", "tab\there", "\x08\x08\x08bell\x07",
                               "\U000e0001\U000e0041 tag characters", "\U0010ffff", "\uf8ff private use"],
    "NUL": ["\x00", "the\x00cat", "\x00" * 100, "\x00<script>", "sleeps\x00\x00."],
    "invalid surrogates": ["\ud800 x", "x \udfff", "\udc80\udc81", "\ud83d", "the cat \ude00 sleeps",
                           "\ud800\ud800", "\udfff\ud800"],
    "html and script": ["<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "<b>bold</b> <i>it</i>",
                        "&lt;&amp;&#x3C;&#60;", "<iframe src=javascript:alert(1)>", "</s> <pad> <unk> <s>",
                        "<a href='" + LINK + "'>click</a>", "<svg onload=alert(1)>", "<!-- comment -->",
                        "<style>body{display:none}</style>", "\"'><script>alert(document.cookie)</script>",
                        "<br><hr><table>", "<details open ontoggle=alert(1)>"],
    "markdown": ["[click](" + LINK + ")", "![img](" + LINK + ".png)", "**bold** _it_ ~~strike~~", "# heading",
                 "`code` ``more``", "$x^2$ and $$\\sum$$", ":red[hi] :blue-background[x]", ":material/home: :smile:",
                 "www.evil.example", "user@evil.example", "> quote", "- list\n- item", "|a|b|\n|-|-|",
                 "<" + LINK + ">", "[x]: " + LINK, "javascript:alert(1)", LINK, "[x][1]\n\n[1]: " + LINK,
                 "***", "\\", "\\\\[x\\]", "`", "```python\nprint(1)\n```", "[[x]]", "^[note]", "- [ ] task"],
    "format strings": ["%s %d %n %x", "{0} {__class__} {}", "%(x)s", "${HOME}", "$(rm -rf /)", "`id`",
                       "\\N{LATIN SMALL LETTER A}", "{{}}", "%x" * 50, "{0:>10000}", "%999999999s", "\\x00\\n",
                       "'; DROP TABLE runs; --", "../../etc/passwd", "C:\\Windows\\system32", "/dev/zero",
                       "NaN", "1e309", "-1", "0"],
    "long single token": ["a" * 500, "x" * 999, "supercalifragilistic" * 40, "ab" * 450,
                          "https://example.com/" + "p" * 900, "▁" * 300, "_" * 800, "ü" * 700, "9" * 900],
}
RANDOM_RANGES = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x6ff), (0x900, 0x97f),
                 (0x2000, 0x206f), (0x3040, 0x30ff), (0x4e00, 0x4e80), (0xfe00, 0xfe0f), (0x1f300, 0x1f64f), (0, 0x1f)]


def _random_text(rng: random.Random) -> str:
    length = rng.choice([1, 2, 5, 20, 80, 300, 1_200])
    ranges = rng.sample(RANDOM_RANGES, rng.randint(1, 4))
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(length))


def fuzz_inputs(n_random: int = 60, n_mixed: int = 30, seed: int = 12) -> list[tuple[str, str]]:
    """(category, text): every hand-picked case, n_random random strings and n_mixed mixtures of cases."""
    cases = [(category, text) for category, texts in CATEGORIES.items() for text in texts]
    rng = random.Random(seed)
    cases += [("random", _random_text(rng)) for _ in range(n_random)]
    pool = [text for _, text in cases if len(text) < 200]
    cases += [("mixed", " ".join(rng.sample(pool, rng.randint(2, 4)))) for _ in range(n_mixed)]
    return cases


# ----------------------------------------------------------------------------- hostile checkpoints

def _config_value(name: str, raw: str):
    """Set one config.json field to raw JSON text (so that 1e400 and NaN reach the parser as written)."""
    def damage(path):
        text = (path / "config.json").read_text()
        data = json.loads(text)
        data[name] = "@@"
        (path / "config.json").write_text(json.dumps(data).replace('"@@"', raw))
    return damage


def _write(name: str, content: bytes | str):
    def damage(path):
        (path / name).unlink()
        (path / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return damage


def _fifo(name: str):
    def damage(path):
        (path / name).unlink()
        os.mkfifo(path / name)
    return damage


def _sparse(name: str, size: int):
    def damage(path):
        with open(path / name, "r+b") as f:
            f.truncate(size)  # a hole: no disk space, no time, but stat says size bytes
    return damage


def _weights(change):
    def damage(path):
        weights = load_file(path / "model.safetensors")
        first = sorted(weights)[0]
        weights[first] = change(weights[first].clone())
        save_file(weights, path / "model.safetensors")
    return damage


def _metadata(**fields):
    def damage(path):
        data = json.loads((path / "metadata.json").read_text())
        (path / "metadata.json").write_text(json.dumps({**data, **fields}))
    return damage


def _at(index: int, value: float):
    def change(t):
        t.view(-1)[index] = value
        return t
    return change


# name -> (damage of an unchecksummed checkpoint directory, what the CheckpointError says)
HOSTILE_CHECKPOINTS: dict[str, tuple] = {
    **{f"config {name}={raw}": (_config_value(name, raw), message) for name, raw, message in [
        ("n_encoder_layers", "1000000000", "n_encoder_layers must be between 1 and 64"),
        ("n_decoder_layers", "1000000000", "n_decoder_layers must be between 1 and 64"),
        ("d_model", "1000000000", "d_model must be between 1 and 8,192"),
        ("d_ff", "1000000", "d_ff must be between 1 and 65,536"),
        ("d_ff", "60000", "describes a model of at least"),
        ("n_encoder_layers", "60", "describes a model of at least"),
        ("src_vocab_size", "900000", "(describes a model of at least|do not match the embeddings)"),
        ("n_encoder_layers", "2.0", "n_encoder_layers must be an integer, got float"),
        ("n_decoder_layers", "true", "n_decoder_layers must be an integer, got bool"),
        ("n_heads", "0", "n_heads must be between 1 and 256"),
        ("n_heads", "-4", "n_heads must be between 1 and 256"),
        ("n_heads", "5", "divisible"),
        ("max_len", "1e400", "max_len must be an integer, got float inf"),
        ("max_len", "1000000000", "max_len must be between 1 and 16,384"),
        ("max_len", "NaN", "max_len must be an integer"),
        ("d_model", '"32"', "d_model must be an integer, got str"),
        ("src_vocab_size", "null", "src_vocab_size must be an integer, got NoneType"),
        ("dropout", '"0.1"', "dropout must be a number, got str"),
        ("dropout", "NaN", "dropout must be in"),
        ("dropout", "1e400", "dropout must be in"),
        ("norm_first", '"no"', "norm_first must be true or false"),
        ("norm_first", "0", "norm_first must be true or false"),
        ("share_embeddings", '"yes"', "share_embeddings must be true or false"),
        ("tie_output", "[]", "tie_output must be true or false"),
        ("activation", "1", "activation must be one of"),
        ("activation", '"mish"', "activation must be one of"),
        ("scale_embedding", '"yes"', "scale_embedding must be true or false"),
        ("final_logits_bias", "1", "final_logits_bias must be true or false"),
        ("final_norm", "null", "final_norm must be true or false"),
        ("positional_layout", '"sines first"', "positional_layout must be one of"),
        ("positional_layout", "2", "positional_layout must be one of"),
        ("layer_norm_eps", "0", "layer_norm_eps must be a number in"),
        ("layer_norm_eps", "NaN", "layer_norm_eps must be a number in"),
        ("layer_norm_eps", '"1e-5"', "layer_norm_eps must be a number in"),
        ("pad_id", "-1", "pad_id must be an integer id"),
        ("pad_id", "1000000", "pad_id must be an integer id"),
        ("pad_id", "0.0", "pad_id must be an integer id"),
    ]},
    "config nested 100,000 deep": (_write("config.json", "[" * 50_000), "config.json: (not valid JSON|JSON nested)"),
    "config nested 10,000 objects": (_write("config.json", '{"a":' * 10_000 + "1" + "}" * 10_000),
                                     "config.json: (JSON nested too deeply|unknown ModelConfig keys)"),
    "config is a list": (_write("config.json", "[1, 2]"), "expects a JSON object"),
    "config of 1 MB": (_write("config.json", " " * (1 << 20) + "{}"), "config.json: 1,048,578 bytes"),
    "config a FIFO": (_fifo("config.json"), "config.json: not a regular file"),
    "weights a FIFO": (_fifo("model.safetensors"), "model.safetensors: not a regular file"),
    "tokenizer a FIFO": (_fifo("tokenizer.json"), "tokenizer.json: not a regular file"),
    "metadata a FIFO": (_fifo("metadata.json"), "metadata.json: not a regular file"),
    "tokenizer of 200 MB": (_sparse("tokenizer.json", 200 << 20), "tokenizer.json: 209,715,200 bytes"),
    "metadata of 2 MB": (_sparse("metadata.json", 2 << 20), "metadata.json: 2,097,152 bytes"),
    "metadata nested 100,000 deep": (_write("metadata.json", "[" * 100_000 + "]" * 100_000),
                                     "metadata.json: (JSON nested too deeply|.*bytes)"),
    "metadata nested 5,000 deep": (_write("metadata.json", "[" * 5_000 + "]" * 5_000),
                                   "metadata.json: (JSON nested too deeply|expected a JSON object)"),
    "a NaN weight": (_weights(_at(3, float("nan"))), "holds NaN or infinite values"),
    "an infinite weight": (_weights(_at(0, float("inf"))), "holds NaN or infinite values"),
    "a -inf weight": (_weights(_at(-1, float("-inf"))), "holds NaN or infinite values"),
    "every weight NaN": (_weights(lambda t: t.fill_(float("nan"))), "holds NaN or infinite values"),
    'metadata "corpus": "bible"': (_metadata(corpus="bible"), "corpus should be an object"),
    'metadata "n_params": "many"': (_metadata(n_params="many"), "n_params should be int"),
    'metadata "step": 1.5': (_metadata(step=1.5), "step should be int"),
    'metadata "best_dev_bleu": "high"': (_metadata(best_dev_bleu="high"), "best_dev_bleu should be"),
    'metadata "elapsed": true': (_metadata(elapsed=True), "elapsed should be"),
    'metadata "description": 3': (_metadata(description=3), "description should be text"),
    "metadata src an image": (_metadata(corpus={"kind": "tsv", "src": "![x](https://evil.example/x.png)",
                                                "tgt": "fr"}), "corpus.src should be a language code"),
    "metadata tgt a link": (_metadata(corpus={"kind": "bible", "src": "en", "tgt": "[fr](https://evil.example)"}),
                            "corpus.tgt should be a language code"),
    "metadata path a number": (_metadata(corpus={"kind": "tsv", "src": "en", "tgt": "fr", "path": 3}),
                               "corpus.path should be text"),
    "metadata parts a string": (_metadata(corpus={"kind": "mix", "src": "en", "tgt": "fr", "parts": "all"}),
                                "corpus.parts should be a list"),
    "metadata part not an object": (_metadata(corpus={"kind": "mix", "src": "en", "tgt": "fr", "parts": [1]}),
                                    r"corpus.parts\[0\] should be an object"),
}


# ----------------------------------------------------------------------------- other entry points

# run names a runs folder copied to Windows could not hold
RUN_NAMES = ["con", "CON", "nul", "Nul", "aux", "prn", "com1", "COM9", "lpt1", "LPT9", "con.txt", "nul.tar.gz",
             "aux.json", "run.", "run..x.", "a.", "lpt3.log", "com0"]

# stdin for `translate`: each line is one sentence, split on "\n" only; the other line breaks stay inside a line
STDIN_LINES = ["the cat", "", "  ", "\t", "a\u2028b", "a\u2029b", "a\x0cb", "a\x0bb", "a\x1cb\x1db\x1eb", "a\x85b",
               "\r", "the dog\r", "\ufeff", "x\u2028\u2028y", "", "the end"]

# translate CLI flags that must be one line of error, never a traceback or a machine filled up
SEARCH_FLAGS = [["--beam", "100000"], ["--beam", "65"], ["--beam", "0"], ["--beam", "-3"],
                ["--beam", "4", "--nbest", "5"], ["--nbest", "100000", "--beam", "100000"],
                ["--alpha", "1e308"], ["--alpha", "inf"], ["--alpha", "nan"], ["--alpha", "-1"], ["--alpha", "11"],
                ["--device", "cuda"], ["--device", "meta"], ["--device", "xyz"], ["--device", "cuda:7"],
                ["--device", "mps"], ["--device", ""], ["--device", "cpu:x"], ["--batch-size", "0"]]


def _pairs(n: int, src: str = "the cat", tgt: str = "le chat") -> bytes:
    return "".join(f"{src} {i}\t{tgt} {i}\n" for i in range(n)).encode()


# uploads the Train page must refuse before a run is created: (name, TSV bytes, what the message says)
UPLOADS = [
    ("30 pairs of 3,000-character words", ("a" * 3000 + "\t" + "b" * 3000 + "\n").encode() * 30, "characters"),
    ("a 15 MB single-line pair", b"a" * (15 << 20) + b"\tb\n" + _pairs(60), "characters"),
    ("10 pairs: no dev split", _pairs(10), "dev"),
    ("24 pairs: no dev split", _pairs(24), "dev"),
    ("one long target", _pairs(60) + ("x\t" + "y " * 1000 + "\n").encode(), "characters"),
]
