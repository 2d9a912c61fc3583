"""Shareable links: a view's state as URL query parameters, read back with every value checked. No streamlit.

A link such as `/Translate?model=en-fr-bible&text=In+the+beginning&search=beam&beam=4&att=cross&layer=2&head=1`
opens that view. Every reader returns the values it accepts and a sentence per value it refuses; it never
raises, and a model is only ever looked up among the models the app lists, never opened from a path.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

from transformer.labels import shorten

MAX_TEXT = 1000  # characters of a sentence taken from a link
QUOTED_CHARS = 40  # characters of a link's value quoted in a message
METHODS = ("greedy", "beam", "sample")
BEAM_RANGE, ALPHA_RANGE = (2, 8), (0.0, 2.0)  # the search widgets' ranges
MEAN = "mean"  # head=mean: the mean of the heads

SEARCH = ("search", "beam", "alpha", "nbest", "temperature", "top_k", "top_p", "seed")  # ui.shared.state.search
VIEW = ("att", "layer", "head", "hide", "lens")  # lens: ui.shared.attention.lens_switch
FOIL = ("foil", "foil_word")  # a contrastive foil: a picked token's id, or a typed word (ui.explain.foil_choice)
PATCHING = ("clean", "other", "pos", "token", *FOIL)  # Explain heads' patching view: pair, position, token, foil
ATTRIBUTION = ("pos", *FOIL)  # Explain heads' attribution view: its output position and foil
# Explain heads: the parameters of one view only
VIEW_ONLY = {"search": ("ref",), "compare": ("partner",), "attribution": ATTRIBUTION, "patching": PATCHING}
PAGE_PARAMS = {"home": ("model",), "translate": ("model", "text", *SEARCH, *VIEW),
               "step": ("model", "text", *SEARCH, *VIEW, "prefix"), "train": ("model",),
               "learn": ("model", "text", "layer", "head", "query", "token", "stage"),
               "guide": ("model", "doc"),  # the parameters each page reads; page_setup drops the others
               "explain": ("model", "text", *SEARCH, "view", "partner", "ref", "lens", *PATCHING),
               "dataset": ("model", "split", "limit")}

Problems = list[str]


def _int(value: str, lo: int, hi: int) -> int | None:
    try:
        number = int(value)
    except ValueError:
        return None
    return number if lo <= number <= hi else None


def quoted(value: object) -> str:
    """A link's value as a message quotes it: in quotes, shortened to QUOTED_CHARS (anyone can write a link, and a
    5,000-character value would fill the page)."""
    return repr(shorten(str(value), QUOTED_CHARS))


def as_param(value: object) -> str:
    """A value as a link writes it: a whole number as digits (seed 1234567, never "1.23457e+06", which reads back
    as no seed at all), a float in the fewest digits that read back as the same float, text as it is."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)
    return str(value)


def linkable(text: str) -> str | None:
    """text as a link parameter, or None (left out of the link) when it is longer than a link may carry."""
    return text if len(text) <= MAX_TEXT else None


def read_text(params: Mapping[str, str], name: str = "text") -> tuple[str | None, Problems]:
    """The sentence of a link (or another text, such as `ref`), without control characters; None when absent."""
    if name not in params:
        return None, []
    text = "".join(c for c in params[name] if c.isprintable() or c == " ")
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT], [f"The link's sentence is longer than {MAX_TEXT} characters; it was cut."]
    return text, []


def read_prefix(params: Mapping[str, str]) -> tuple[str | None, Problems]:
    """A forced prefix's text (`prefix`, the step page's: the output the link makes the model start with), without
    control characters; None when absent or longer than MAX_TEXT (a cut prefix would force other pieces)."""
    if "prefix" not in params:
        return None, []
    text = "".join(c for c in params["prefix"] if c.isprintable() or c == " ")
    if len(text) > MAX_TEXT:
        return None, [f"The link's forced prefix is longer than {MAX_TEXT} characters; it was left out."]
    return text, []


def read_index(params: Mapping[str, str], name: str, count: int) -> tuple[int | None, Problems]:
    """params[name] when it is a whole number from 0 to count - 1 (a layer, a head, a token)."""
    if name not in params:
        return None, []
    value = _int(params[name], 0, count - 1)
    if value is None:
        return None, [f"{name.capitalize()} {quoted(params[name])} in the link does not exist here: use 0 to "
                      f"{count - 1}."]
    return value, []


def read_model(params: Mapping[str, str], keys: Sequence[str]) -> tuple[str | None, Problems]:
    """The model key of a link if it is one of `keys` (the models the app lists)."""
    if "model" not in params:
        return None, []
    if params["model"] in keys:
        return params["model"], []
    return None, [f"The link's model {quoted(params['model'])} is not on this server; showing another one."]


def read_search(params: Mapping[str, str]) -> tuple[dict[str, object], Problems]:
    """{"method", "beam", "alpha", "nbest"}: those the link gives and that are valid."""
    values: dict[str, object] = {}
    problems: Problems = []
    if "search" in params:
        if params["search"] in METHODS:
            values["method"] = params["search"]
        else:
            problems.append(f"Unknown search {quoted(params['search'])} in the link (use greedy, beam or sample).")
    if "beam" in params:
        beam = _int(params["beam"], *BEAM_RANGE)
        if beam is None:
            problems.append(f"Beam size {quoted(params['beam'])} in the link is not between {BEAM_RANGE[0]} and "
                            f"{BEAM_RANGE[1]}.")
        else:
            values["beam"] = beam
    if "alpha" in params:
        try:
            alpha = round(float(params["alpha"]), 1)
        except ValueError:
            alpha = -1.0
        if ALPHA_RANGE[0] <= alpha <= ALPHA_RANGE[1]:
            values["alpha"] = alpha
        else:
            problems.append(f"Length penalty {quoted(params['alpha'])} in the link is not between 0 and 2.")
    if "nbest" in params:
        nbest = _int(params["nbest"], 1, int(values.get("beam", BEAM_RANGE[1])))
        if nbest is None:
            problems.append(f"n-best {quoted(params['nbest'])} in the link is not between 1 and the beam size.")
        else:
            values["nbest"] = nbest
    return values, problems


def read_view(params: Mapping[str, str], n_layers: Mapping[str, int], n_heads: int, headless: bool = False
              ) -> tuple[dict[str, object], Problems]:
    """{"family", "layer", "head", "hide"} of an attention view; head None is the mean of the heads. headless: the
    maps are a layer-level lens's (one map per layer), so a head in the link is ignored, with a note."""
    values: dict[str, object] = {}
    problems: Problems = []
    family = params.get("att")
    if family is not None:
        if family in n_layers:
            values["family"] = family
        else:
            problems.append(f"Unknown attention {quoted(family)} in the link (use {', '.join(n_layers)}).")
    layers = n_layers.get(str(values.get("family", next(iter(n_layers)))), 1)
    if "layer" in params:
        layer = _int(params["layer"], 0, layers - 1)
        if layer is None:
            problems.append(f"Layer {quoted(params['layer'])} in the link does not exist: this model has layers 0 to "
                            f"{layers - 1}.")
        else:
            values["layer"] = layer
    if headless and params.get("head", MEAN) not in (MEAN, "0"):
        problems.append(f"Head {quoted(params['head'])} in the link is ignored: this lens gives one map per layer, "
                        "of all heads together.")
    elif "head" in params:
        head = None if params["head"] == MEAN else _int(params["head"], 0, n_heads - 1)
        if head is None and params["head"] != MEAN:
            problems.append(f"Head {quoted(params['head'])} in the link does not exist: this model has heads 0 to "
                            f"{n_heads - 1} (or {MEAN}).")
        else:
            values["head"] = head
    if "hide" in params:
        values["hide"] = params["hide"] == "1"
    return values, problems


def search_params(method: str, beam: int = 0, alpha: float = 0.0, nbest: int = 0) -> dict[str, str | None]:
    """The parameters of a search (None: not part of it, so removed from the link)."""
    no_sampling = dict.fromkeys(SEARCH[4:])
    if method == "greedy":
        return {"search": "greedy", "beam": None, "alpha": None, "nbest": None, **no_sampling}
    return {"search": "beam", "beam": str(beam), "alpha": f"{alpha:.1f}", "nbest": str(nbest), **no_sampling}


def view_params(family: str, layer: int, head: int | None, hide: bool) -> dict[str, str | None]:
    return {"att": family, "layer": str(layer), "head": MEAN if head is None else str(head),
            "hide": "1" if hide else None}
