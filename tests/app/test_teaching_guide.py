"""The Teacher's guide page and the guide itself (AppTest): every link of docs/teaching-guide.md names its model and
opens what its step says, on this server; the model cards and corpus notes open in the app, an unknown document
falls back to the guide; the outputs the guide quotes are the shipped models' own. In a browser:
tests/browser/test_tour.py."""

import re
import urllib.parse
from pathlib import Path

from tests.app_fixtures import app, opened, shipped
from transformer.data.corpora.base import normalize_text
from transformer.data.corpora.teaching import align
from transformer.decoding.search import SearchSettings
from transformer.decoding.translate import Translator
from transformer.model.checkpoint import load_checkpoint
from ui.teaching import guide_documents

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "checkpoints"


GUIDE_LINK = re.compile(r"http://HOST:8501/(\w+)\?([^\s)`]+)")
LINK_PAGES = {"Translate": ("pages/1_Translate.py", "tr_text"),
              "Step_by_step": ("pages/2_Step_by_step.py", "step_text"), "Learn": ("pages/4_Learn.py", "learn_sentence")}
GUIDE_TRANSLATIONS = {  # what the guide says each model writes for a sentence it links
    ("en-fr-bible-debian", "The file could not be opened."): "Le fichier ne peut pas être ouvert.",
    ("en-fr-bible", "The file could not be opened."): "Le pil ne pouvait pas se ouvrit.",
    ("en-it-bible", "And God said, Let there be light."): "DIO disse: »Sta la luce!«.",
}


def _guide_links() -> list[tuple[str, dict[str, str]]]:
    text = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    found = dict.fromkeys((page, query) for page, query in GUIDE_LINK.findall(text))
    return [(page, dict(urllib.parse.parse_qsl(query))) for page, query in found]


def _darkest_source(translation, target: str) -> set[str]:
    """The source piece each layer's mean of heads puts most weight on from the row of target."""
    row = translation.attention.target_pieces.index(target)
    return {translation.attention.source_pieces[int(layer[:, row].mean(0).argmax())]
            for layer in translation.attention.cross}


def test_every_guide_link_names_its_model_and_opens_what_its_step_says(monkeypatch, tmp_path):
    links = _guide_links()
    assert len(links) >= 12 and all("model" in params for _, params in links), links
    for page, params in links:
        path, text_key = LINK_PAGES[page]
        at = opened(shipped(monkeypatch, tmp_path), path, **params)
        assert not [w.value for w in at.warning if w.icon == ":material/link_off:"], (page, params)
        assert Path(at.session_state["model_path"]).name == params["model"]
        if "text" in params:
            assert at.text_input(key=text_key).value == params["text"]
        if page != "Translate" or "text" not in params:
            continue
        translation = at.session_state["tr_result"]
        model, text = params["model"], params["text"]
        if model == "en-fr-teaching":  # the grammar's French, so that the gold links can be read
            assert translation.text == align(normalize_text(text)).tgt, text
        elif (model, text) in GUIDE_TRANSLATIONS:
            assert translation.text == GUIDE_TRANSLATIONS[model, text]
        elif model == "en-ar-bible":  # the verb first: "and-said God"
            assert translation.text.startswith("وقال الله")
        elif text.startswith("And God said, Let there be light: and"):  # step 1: Dieu under God, lumière under light
            assert _darkest_source(translation, "▁Dieu") == {"▁God"}
            assert _darkest_source(translation, "▁lumière") == {"▁light"}
    search = [params for page, params in links if page == "Step_by_step" and params.get("search") == "beam"]
    assert search and search[0]["beam"] == "3"  # step 3's beam tree


def test_the_guide_page_opens_its_app_links_on_this_server(monkeypatch, tmp_path):
    at = opened(shipped(monkeypatch, tmp_path), "pages/5_Teaching_guide.py")
    guide = "".join(m.value for m in at.markdown)
    assert "](Translate?model=en-fr-bible&text=And+God+said" in guide and "](http://HOST" not in guide


def test_the_guides_links_open_documents_in_the_app(monkeypatch, tmp_path):
    docs = guide_documents.documents()
    text = docs[guide_documents.GUIDE].path.read_text(encoding="utf-8")
    rewritten = guide_documents.in_app_links(text, docs[guide_documents.GUIDE], docs)
    assert "[model card](?doc=card-en-fr-teaching)" in rewritten and "[the corpus](?doc=teaching-corpus)" in rewritten
    app_page = r"(?:Translate|Step_by_step|Learn|Explain_heads)\?model="  # a link into the app
    assert not re.search(rf"\]\((?!https?:|\?doc=|#|{app_page})[^)]*\)", rewritten)  # none to a repository path
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/5_Teaching_guide.py", doc="card-en-fr-teaching")
    shown = "\n".join(m.value for m in at.markdown)
    assert shown.count("# en-fr-teaching") == 1 and "(?doc=teaching-corpus)" in shown  # the card, its own link too
    assert at.query_params["doc"] == "card-en-fr-teaching"


def test_an_unknown_document_falls_back_to_the_guide(monkeypatch, tmp_path):
    at = app(monkeypatch, tmp_path, SHIPPED)
    opened(at, "pages/5_Teaching_guide.py", doc="../README")
    assert any("is not one this page shows" in w.value for w in at.warning)
    assert any(m.value.startswith("# Teaching with the Attention Explorer") for m in at.markdown)


def test_the_guides_modern_sentence_quotes_greedy_outputs():  # the app's default search is greedy
    text = " ".join((ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"greedy search, the app's default: \"(.+?)\" against \"(.+?)\"\)", text)
    assert quoted
    for name, expected in zip(("en-fr-bible-debian", "en-fr-bible"), quoted.groups()):
        translator = Translator(load_checkpoint(SHIPPED / name))
        assert translator.translate("The file could not be opened.", SearchSettings()).text == expected
