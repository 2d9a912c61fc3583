"""A generated set of hostile and odd inputs for every text the app, the Translator and the CLI take.

`fuzz_inputs()` returns (category, text) pairs, the same on every call: hand-picked cases of each category, then
seeded random strings and mixtures of them. `tests/test_fuzz.py` runs them everywhere; `bench/app_limits.py`
times them with the shipped model.
"""

from __future__ import annotations

import random

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
