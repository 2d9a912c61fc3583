"""User and model text inside Streamlit's Markdown: shown as typed, never as a link, an image, HTML, LaTeX or a
Streamlit directive (`:red[...]`, `:material/...:`). No streamlit.

Every Streamlit element that draws a string (st.markdown, st.info, st.warning, st.error, st.caption, radio labels)
reads it as Markdown. Text the app did not write itself (a sentence, a link's parameters, a TSV line, a model's
output, a checkpoint's error) goes through `plain` or `code` first.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from transformer.bidi import FSI, PDI, RLI, is_rtl, piece_labels
from transformer.labels import shorten

# Every ASCII punctuation character may be backslash-escaped in CommonMark, and then is only itself.
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# GFM turns a bare URL or e-mail address into a link even with its punctuation escaped; an invisible word joiner
# inside "www", "http" and the like, and before "@", breaks those patterns without changing what the reader sees.
_AUTOLINK = re.compile(r"(?i)(?<=w)(?=ww\.)|(?<=h)(?=ttps?:)|(?<=m)(?=ailto:)|(?<=x)(?=mpp:)|(?<=f)(?=tp:)|(?=@)")
_JOINER = "\u2060"


def plain(text: object) -> str:
    """text as literal Markdown: punctuation escaped, line breaks as spaces, bare URLs and e-mails unlinkable."""
    text = _AUTOLINK.sub(_JOINER, " ".join(str(text).split()))
    return _PUNCTUATION.sub(r"\\\1", text)


def table(rows: dict[str, str], header: tuple[str, str]) -> str:
    """rows as a two-column Markdown table, each cell literal (`plain`): drawn by Streamlit's Markdown, which every
    page loads anyway, where st.table would fetch about 1 MB of Arrow's JavaScript into the page."""
    lines = [f"| {plain(header[0])} | {plain(header[1])} |", "|---|---|"]
    return "\n".join(lines + [f"| {plain(name)} | {plain(value)} |" for name, value in rows.items()])


def code(text: object) -> str:
    """text as an inline code span: a fence longer than any run of backticks in it, so it cannot close early."""
    text = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def rtl_html(text: object, tag: str = "div") -> str | None:
    """Right-to-left text (an Arabic translation) as one escaped HTML element laid out right to left, for
    st.markdown(..., unsafe_allow_html=True); None for other text, which `plain` shows. Escaped, the text cannot
    become markup, and an HTML block is not read as Markdown."""
    text = " ".join(str(text).split())
    if not is_rtl(text):
        return None
    return f'<{tag} dir="rtl" class="rtl-text" style="text-align: right">{html.escape(text)}</{tag}>'


def html_text(text: object) -> str:
    """text escaped for HTML; right-to-left text (an Arabic translation) inside a <bdi dir="rtl"> isolate, so that
    it reads right to left, its full stop on the left, inside an English line."""
    text = " ".join(str(text).split())
    return f'<bdi dir="rtl">{html.escape(text)}</bdi>' if is_rtl(text) else html.escape(text)


def score(value: float) -> str:
    """A log-probability or a search score, with the one precision the app shows them in (-4.694)."""
    return f"{value:.3f}"


def piece_line(pieces: Sequence[str], marks: Sequence[bool] | None = None, colour: str = "orange") -> str:
    """Pieces as one line of Markdown, kept apart as the heatmap's axes keep them: each piece isolated (FSI … PDI),
    so that "</s>" and "." keep their own order and a right-to-left piece its ▁ at its start, and the whole line
    isolated right to left when its pieces read so (an Arabic output starts on the right and ends with </s> on
    the left). A long piece is shortened, as on every chart. Marked pieces on a background of `colour` (one of
    Streamlit's Markdown colours); "∅" for none."""
    marks = list(marks) if marks is not None else [False] * len(pieces)
    shown = [f"{FSI}{plain(shorten(label))}{PDI}" for label in piece_labels(pieces)]
    line = " ".join(f":{colour}-background[{s}]" if m else s for s, m in zip(shown, marks))
    if not line:
        return "∅"
    return f"{RLI}{line}{PDI}" if is_rtl("".join(pieces)) else line
