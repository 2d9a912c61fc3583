"""The Debian corpus builder on small generated fixtures: never a download (CI has no network).

Fixtures are written the way Debian ships them: a gettext .mo and a Qt .qm packed byte by byte, compiled
LibreOffice help pages, and Mallard pages with itstool's credits in the translation.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from transformer.data.corpora import debian
from transformer.data.corpora.base import CorpusError
from transformer.data.corpora.debian import (
    Manifest,
    PackageInfo,
    build_debian_corpus,
    clean_catalog_text,
    clean_pair,
    dedupe,
    has_placeholder,
    help_pairs,
    is_sentence_like,
    mallard_pairs,
    mo_pairs,
    qm_pairs,
    read_debian_corpus,
    split_of,
    split_sentences,
)
from transformer.data.corpora.debian_clean import DEV_FRACTION, TEST_FRACTION, align_sentences
from transformer.data.corpora.debian_fetch import download, licences

# --- fixture writers ---------------------------------------------------------------------------


def write_mo(path: Path, entries: dict[str, str], order: str = "<", charset: str = "UTF-8") -> Path:
    """A GNU .mo file (msgfmt's layout: header, sorted originals, then the strings)."""
    items = sorted({"": f"Content-Type: text/plain; charset={charset}\n", **entries}.items())
    encoding = "utf-8" if charset == "CHARSET" else charset  # msgfmt writes a template's header as it is
    ids, strs = [k.encode(encoding) for k, _ in items], [v.encode(encoding) for _, v in items]
    count, table = len(items), 28
    at = table + 16 * count
    id_table, str_table, blob = [], [], b""
    for data, table_out in [(d, id_table) for d in ids] + [(d, str_table) for d in strs]:
        table_out.append((len(data), at + len(blob)))
        blob += data + b"\0"
    header = struct.pack(order + "7I", 0x950412DE, 0, count, table, table + 8 * count, 0, 0)
    tables = b"".join(struct.pack(order + "2I", *e) for e in id_table + str_table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + tables + blob)
    return path


def write_qm(path: Path, messages: list[tuple[str, str]]) -> Path:
    """A Qt .qm file: magic, a Hashes section, and a Messages section of (source, translation) records."""
    body = b""
    for source, translation in messages:
        context = b"Activity"
        body += b"\x03" + struct.pack(">I", 2 * len(translation)) + translation.encode("utf-16-be")
        body += b"\x05" + struct.pack(">I", 0x1234)  # Obsolete1: a hash
        body += b"\x06" + struct.pack(">I", len(source.encode())) + source.encode()
        body += b"\x07" + struct.pack(">I", len(context)) + context + b"\x01"
    data = bytes.fromhex("3cb86418caef9c95cd211cbf60a1bddd")
    data += b"\x42" + struct.pack(">I", 8) + bytes(8) + b"\x69" + struct.pack(">I", len(body)) + body
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


HELP_PAGE = """<!DOCTYPE html><html lang="{lang}"><head><title>t</title><script>var x = "<p>";</script></head>
<body><header><p>LibreOffice 7.4 {help}</p></header>
<div id="DisplayArea" itemprop="softwareHelp">
<h1 id="hd_id3147291" dir="auto">{title}</h1>
<p id="par_id3146957" class="paragraph"><a name="x"></a><span class="avis">{para}</span></p>
<p id="par_id10" class="paragraph">{choose} <span id="sw1" class="switchinline"><span hidden="true" id="MACtext1"
class="MAC"><span class="emph">{mac}</span></span><span hidden="true" id="defaulttext1"><span
class="emph">{tools}</span></span></span> - {path}.<br></p>
<p id="par_id20" class="code">Dim i As Integer</p>
<p id="par_id30" class="paragraph">{product}</p>
{extra}
</div></body></html>"""
EN_HELP = dict(lang="en-US", help="Help", title="Load and save options for your documents",
               para="Specifies general settings for loading and saving.", choose="Choose",
               mac="LibreOffice - Preferences", tools="Tools - Options", path="Load/Save",
               product="$[officename] saves documents in the OpenDocument format.",
               extra='<p id="par_id40" class="paragraph">This paragraph was never translated at all.</p>')
FR_HELP = dict(lang="fr", help="Aide", title="Options de chargement et d'enregistrement de vos documents",
               para="Spécifie les paramètres généraux de chargement et d'enregistrement.", choose="Choisissez",
               mac="LibreOffice - Préférences", tools="Outils - Options", path="Chargement/enregistrement",
               product="$[officename] enregistre les documents au format OpenDocument.", extra="")

EN_PAGE = """<page xmlns="http://projectmallard.org/1.0/" type="topic" id="bounce">
  <info>
    <credit type="author"><name>Shaun McCance</name><email>shaunm@gnome.org</email></credit>
    <desc>Ignore quickly repeated key presses of the same key.</desc>
  </info>
  <title>Turn on bounce keys</title>
  <p>Open the <gui>Activities</gui> overview and start typing <gui>Settings</gui>.</p>
  <comment><cite>Shaun</cite><p>Check this step again.</p></comment>
  <steps>
    <item><p>Press <keyseq><key>Ctrl</key><key>Q</key></keyseq> to close the window.</p></item>
    <item><p>See <link xref="a11y"/> for more.</p></item>
  </steps>
  <code>gsettings set org.gnome.desktop bounce true</code>
</page>"""
FR_PAGE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" type="topic" id="bounce" xml:lang="fr">
  <info>
    <credit type="author"><name>Shaun McCance</name><email>shaunm@gnome.org</email></credit>
    <desc>Ignorer les appuis de touches rapides et identiques.</desc>
    <mal:credit xmlns:mal="http://projectmallard.org/1.0/" type="translator copyright">
      <mal:name>Luc Pionchon</mal:name><mal:years>2011</mal:years></mal:credit>
  </info>
  <title>Activation des touches rebond</title>
  <p>Ouvrez la vue d’ensemble des <gui>Activités</gui> et commencez à saisir <gui>Paramètres</gui>.</p>
  <comment><cite>Shaun</cite><p>Check this step again.</p></comment>
  <steps>
    <item><p>Appuyez sur <keyseq><key>Ctrl</key><key>Q</key></keyseq> pour fermer la fenêtre.</p></item>
    <item><p>Consultez <link xref="a11y"/> pour en savoir plus.</p></item>
  </steps>
  <code>gsettings set org.gnome.desktop bounce true</code>
</page>"""

MO_ENTRIES = {
    "_Save the document now": "_Enregistrer le document maintenant",
    "menu\x04Open the recent files list": "Ouvrir la liste des fichiers récents",
    "One file was deleted.\x00Many files were deleted.":
        "Un fichier a été supprimé.\x00Des fichiers ont été supprimés.",
    "<b>Warning:</b> the disk is almost full.": "<b>Attention :</b> le disque est presque plein.",
    "Deleted %d files from the disk.": "%d fichiers supprimés du disque.",
    "Keep this string as it is.": "",
    "File": "Fichier",
}


def test_mo_pairs_reads_singulars_contexts_and_skips_header_and_untranslated(tmp_path):
    path = write_mo(tmp_path / "app.mo", MO_ENTRIES)
    assert sorted(mo_pairs(path)) == sorted([
        ("_Save the document now", "_Enregistrer le document maintenant"),
        ("Open the recent files list", "Ouvrir la liste des fichiers récents"),
        ("One file was deleted.", "Un fichier a été supprimé."),
        ("<b>Warning:</b> the disk is almost full.", "<b>Attention :</b> le disque est presque plein."),
        ("Deleted %d files from the disk.", "%d fichiers supprimés du disque."),
        ("File", "Fichier"),
    ])


def test_mo_pairs_reads_big_endian_files_and_rejects_other_files(tmp_path):
    path = write_mo(tmp_path / "be.mo", {"Close the window now": "Fermer la fenêtre maintenant"}, order=">")
    assert mo_pairs(path) == [("Close the window now", "Fermer la fenêtre maintenant")]
    (tmp_path / "bad.mo").write_bytes(b"not a catalog at all")
    with pytest.raises(CorpusError, match="not a gettext .mo file"):
        mo_pairs(tmp_path / "bad.mo")
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CorpusError, match="truncated or corrupt .mo file"):
        mo_pairs(path)


def test_mo_pairs_decode_the_header_charset(tmp_path):
    path = write_mo(tmp_path / "latin1.mo", {"Open the café menu": "Ouvrir le menu café"}, charset="ISO-8859-1")
    assert "café".encode() not in path.read_bytes()
    assert mo_pairs(path) == [("Open the café menu", "Ouvrir le menu café")]
    path = write_mo(tmp_path / "template.mo", {"Open the café menu": "Ouvrir le menu café"}, charset="CHARSET")
    assert mo_pairs(path) == [("Open the café menu", "Ouvrir le menu café")]  # unknown: UTF-8


def test_qm_pairs_reads_source_and_translation(tmp_path):
    path = write_qm(tmp_path / "gcompris_fr.qm", [("Find the blue butterfly.", "Trouve le papillon bleu."),
                                                  ("Level", "")])
    assert qm_pairs(path) == [("Find the blue butterfly.", "Trouve le papillon bleu.")]
    (tmp_path / "bad.qm").write_bytes(b"\0" * 20)
    with pytest.raises(CorpusError, match="not a Qt .qm file"):
        qm_pairs(tmp_path / "bad.qm")


def write_help(root: Path, lang: str, values: dict[str, str]) -> Path:
    page = root / lang / "text/shared/optionen/01020000.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(HELP_PAGE.format(**values), encoding="utf-8")
    return root / lang


def test_help_pairs_match_ids_keep_default_variant_and_skip_code(tmp_path):
    en, fr = write_help(tmp_path, "en-US", EN_HELP), write_help(tmp_path, "fr", FR_HELP)
    (en / "text/shared/only-english.html").write_text(HELP_PAGE.format(**EN_HELP), encoding="utf-8")
    assert help_pairs(en, fr) == [
        ("Load and save options for your documents", "Options de chargement et d'enregistrement de vos documents"),
        ("Specifies general settings for loading and saving.",
         "Spécifie les paramètres généraux de chargement et d'enregistrement."),
        ("Choose Tools - Options - Load/Save.", "Choisissez Outils - Options - Chargement/enregistrement."),
        ("LibreOffice saves documents in the OpenDocument format.",
         "LibreOffice enregistre les documents au format OpenDocument."),
    ]


def test_mallard_pairs_pair_blocks_in_order(tmp_path):
    (tmp_path / "en.page").write_text(EN_PAGE, encoding="utf-8")
    (tmp_path / "fr.page").write_text(FR_PAGE, encoding="utf-8")
    assert mallard_pairs(tmp_path / "en.page", tmp_path / "fr.page") == [
        ("Ignore quickly repeated key presses of the same key.",
         "Ignorer les appuis de touches rapides et identiques."),
        ("Turn on bounce keys", "Activation des touches rebond"),
        ("Open the Activities overview and start typing Settings.",
         "Ouvrez la vue d’ensemble des Activités et commencez à saisir Paramètres."),
        ("Press Ctrl+Q to close the window.", "Appuyez sur Ctrl+Q pour fermer la fenêtre."),
    ]  # the comment, the code block and the paragraph with an empty (filled-in) link are left out


def test_mallard_pairs_skip_pages_whose_structure_differs(tmp_path):
    (tmp_path / "en.page").write_text(EN_PAGE, encoding="utf-8")
    (tmp_path / "fr.page").write_text(FR_PAGE.replace("<title>Activation des touches rebond</title>", ""),
                                      encoding="utf-8")
    (tmp_path / "broken.page").write_text("<page><p>unclosed", encoding="utf-8")
    assert mallard_pairs(tmp_path / "en.page", tmp_path / "fr.page") == []
    assert mallard_pairs(tmp_path / "en.page", tmp_path / "broken.page") == []


# --- cleaning ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Deleted %s", "%d files", "%(name)s is here", "%1$s of %2$s", "Page %1 of %2",
                                  "Hello {name}", "Item {0}", "Set $HOME now", "Use ${VAR} here", "$[officename]",
                                  "@PACKAGE@ version", "You see <npcname> here", "Width: %.2f"])
def test_placeholders_are_detected(text):
    assert has_placeholder(text)


@pytest.mark.parametrize("text", ["50 % of the disk is used.", "It is 100%.", "Tom & Jerry", "A [b] c",
                                  "Use 5 $ only"])
def test_prose_is_not_a_placeholder(text):
    assert not has_placeholder(text)


@pytest.mark.parametrize(("raw", "clean"), [
    ("_Save As", "Save As"),
    ("E_xit the game", "Exit the game"),
    ("&Open File", "Open File"),
    ("Tom && Jerry", "Tom & Jerry"),
    ("~Edit Mode", "Edit Mode"),
    ("file_name and other_name", "file_name and other_name"),
    ("<b>Warning:</b> the <i>disk</i> is full", "Warning: the disk is full"),
    ("Fish &amp; Chips &lt;3", "Fish & Chips <3"),
    ('Read the <a href="http://x.org">manual</a> first.<br/>Then start.', "Read the manual first. Then start."),
])
def test_catalog_text_loses_markup_and_accelerators(raw, clean):
    assert clean_catalog_text(raw) == clean


def test_sentence_splitting_respects_abbreviations():
    assert split_sentences("Open the file. Then close it! Done?") == ["Open the file.", "Then close it!", "Done?"]
    assert split_sentences("Use a tool, e.g. Writer. It works.") == ["Use a tool, e.g. Writer.", "It works."]
    assert split_sentences("Appelez M. Dupont demain.") == ["Appelez M. Dupont demain."]
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]
    assert split_sentences("Written by J. Smith in 2001.") == ["Written by J. Smith in 2001."]


def test_sentences_are_paired_only_when_both_sides_split_alike():
    assert align_sentences("Open it. Close it.", "Ouvrez-le. Fermez-le.") == [("Open it.", "Ouvrez-le."),
                                                                              ("Close it.", "Fermez-le.")]
    assert align_sentences("Open it. Close it.", "Ouvrez-le puis fermez-le.") == [
        ("Open it. Close it.", "Ouvrez-le puis fermez-le.")]


@pytest.mark.parametrize(("en", "keep"), [("File", False), ("Save As", False), ("Save the file", True),
                                          ("RGB TO HSV", False), ("Select three objects and", False),
                                          ("On the toolbar, click", False), (" ".join(["word"] * 41), False),
                                          ("Click OK to continue.", True)])
def test_short_label_rule(en, keep):
    assert is_sentence_like(en) is keep


def test_clean_pair_applies_every_rule():
    assert clean_pair("Open the  file.\u00a0Then close it.", "Ouvrez le fichier. Puis fermez-le.") == [
        ("Open the file.", "Ouvrez le fichier."), ("Then close it.", "Puis fermez-le.")]
    assert clean_pair("Save the file", "Save the file") == []  # untranslated
    assert clean_pair("Save the whole file now", "Enregistrer") == []  # length ratio
    assert clean_pair("Save the file now", "Enregistrer le fichier " * 4) == []
    assert clean_pair("Deleted %d files now", "%d fichiers supprimés") == []
    assert clean_pair("Visit https://example.org for help", "Visitez https://example.org") == []
    assert clean_pair("Enter =SUM(A1:A3) in the cell", "Saisissez =SOMME(A1:A3) dans la cellule") == []
    assert clean_pair("Save As", "Enregistrer sous") == []


def test_dedupe_keeps_the_first_source_of_identical_pairs():
    rows = [("a", ("Open it now.", "Ouvrez-le.")), ("b", ("Open it now.", "Ouvrez-le.")),
            ("b", ("Open it now.", "Ouvrez-le maintenant."))]
    assert dedupe(rows) == [rows[0], rows[2]]


def test_split_is_a_stable_hash_of_the_english_sentence():
    assert split_of("Click OK to continue.") == split_of("click ok to continue") == split_of("Click  OK, to continue")
    sentences = [f"Sentence number {i} of the corpus." for i in range(20_000)]
    splits = [split_of(s) for s in sentences]
    assert splits == [split_of(s) for s in sentences]
    assert splits.count("test") / len(splits) == pytest.approx(TEST_FRACTION, abs=0.005)
    assert splits.count("dev") / len(splits) == pytest.approx(DEV_FRACTION, abs=0.005)


# --- packages, the build and reading back --------------------------------------------------------

def test_licences_from_dep5_and_from_prose():
    dep5 = "Format: x\n\nFiles: *\nCopyright: A\nLicense: MPL-2.0\n\nFiles: y/*\nLicense: Apache-2.0\n text\n"
    assert licences(dep5) == ("MPL-2.0", ("MPL-2.0", "Apache-2.0"))
    prose = "under the GNU Lesser General\n Public License. See /usr/share/common-licenses/LGPL-2.1'."
    assert licences(prose) == ("LGPL-2.1", ("LGPL-2.1",))
    assert licences("under the GNU General Public License")[0] == "GPL"
    assert licences("")[0] == "unknown"


def test_download_reuses_a_cached_deb(tmp_path):
    cached = tmp_path / "gramps_5.1.5-1_all.deb"
    cached.write_bytes(b"deb")
    assert download("gramps", tmp_path) == cached


def fake_tree(root: Path) -> Path:
    """One unpacked package with every kind of source and the LibreOffice help, translated into fr and it
    (with the same French text: the builder does not look at the language)."""
    write_help(root / "usr/share/libreoffice/help", "en-US", EN_HELP)
    (root / "usr/share/help/C/bounce-doc").mkdir(parents=True)
    (root / "usr/share/help/C/bounce-doc/bounce.page").write_text(EN_PAGE, encoding="utf-8")
    for tgt in ("fr", "it"):
        write_help(root / "usr/share/libreoffice/help", tgt, FR_HELP)
        (root / "usr/share/help" / tgt / "bounce-doc").mkdir(parents=True)
        (root / "usr/share/help" / tgt / "bounce-doc/bounce.page").write_text(FR_PAGE, encoding="utf-8")
        write_mo(root / f"usr/share/locale/{tgt}/LC_MESSAGES/app.mo", MO_ENTRIES)
        write_qm(root / f"usr/share/app/translations/app_{tgt}.qm", [("Find the blue butterfly.",
                                                                       "Trouve le papillon bleu.")])
    return root


@pytest.fixture
def offline_build(monkeypatch):
    """build_debian_corpus over fake_tree: one package, no apt-get, no dpkg-deb."""
    monkeypatch.setattr(debian, "LIBREOFFICE", ())
    monkeypatch.setattr(debian, "PACKAGES", ("fake-app",))
    monkeypatch.setattr(debian, "download", lambda package, cache_dir: cache_dir / f"{package}_1.0_all.deb")
    monkeypatch.setattr(debian, "package_info", lambda name, deb, root: PackageInfo(
        name, "1.0", deb.name, 3, "0" * 64, "GPL-2+", ("GPL-2+",)))
    monkeypatch.setattr(debian, "unpack", lambda deb, dest: fake_tree(dest))


EXPECTED_PAIRS = {
    ("libreoffice-help", "Load and save options for your documents",
     "Options de chargement et d'enregistrement de vos documents"),
    ("libreoffice-help", "Specifies general settings for loading and saving.",
     "Spécifie les paramètres généraux de chargement et d'enregistrement."),
    ("libreoffice-help", "Choose Tools - Options - Load/Save.",
     "Choisissez Outils - Options - Chargement/enregistrement."),
    ("libreoffice-help", "LibreOffice saves documents in the OpenDocument format.",
     "LibreOffice enregistre les documents au format OpenDocument."),
    ("fake-app/bounce-doc", "Ignore quickly repeated key presses of the same key.",
     "Ignorer les appuis de touches rapides et identiques."),
    ("fake-app/bounce-doc", "Turn on bounce keys", "Activation des touches rebond"),
    ("fake-app/bounce-doc", "Open the Activities overview and start typing Settings.",
     "Ouvrez la vue d’ensemble des Activités et commencez à saisir Paramètres."),
    ("fake-app/bounce-doc", "Press Ctrl+Q to close the window.", "Appuyez sur Ctrl+Q pour fermer la fenêtre."),
    ("fake-app", "Save the document now", "Enregistrer le document maintenant"),
    ("fake-app", "Open the recent files list", "Ouvrir la liste des fichiers récents"),
    ("fake-app", "One file was deleted.", "Un fichier a été supprimé."),
    ("fake-app", "Warning: the disk is almost full.", "Attention : le disque est presque plein."),
    ("fake-app", "Find the blue butterfly.", "Trouve le papillon bleu."),
}


def test_build_writes_the_tsv_and_manifest_and_reads_back(tmp_path, offline_build):
    manifest = build_debian_corpus(tmp_path / "out", "fr", tmp_path / "cache")
    rows = [line.split("\t") for line in (tmp_path / "out/pairs.tsv").read_text(encoding="utf-8").splitlines()]
    assert {tuple(row[1:]) for row in rows} == EXPECTED_PAIRS and len(rows) == len(EXPECTED_PAIRS)
    assert all(row[0] == split_of(row[2]) for row in rows)
    assert manifest.sources == {"fake-app": 5, "fake-app/bounce-doc": 4, "libreoffice-help": 4}
    assert sum(manifest.splits.values()) == 13 and list(manifest.splits) == ["train", "dev", "test"]
    on_disk = Manifest.from_json((tmp_path / "out/manifest.json").read_text(encoding="utf-8"))
    assert on_disk == manifest and on_disk.packages[0].licences == ("GPL-2+",)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "pairs.tsv"]

    corpus = read_debian_corpus(tmp_path / "out")
    assert corpus.description == "Debian: 13 pairs from 2 packages (en -> fr)"
    assert {pair for split in ("train", "dev", "test") for pair in corpus.split(split)} == {
        (en, fr) for _, en, fr in EXPECTED_PAIRS}
    assert [len(corpus.split(s)) for s in ("train", "dev", "test")] == list(manifest.splits.values())


def test_build_works_for_another_target_language(tmp_path, offline_build):
    manifest = build_debian_corpus(tmp_path / "out", "it", tmp_path / "cache")
    assert manifest.tgt == "it" and sum(manifest.sources.values()) == 13


def test_a_failed_build_leaves_the_previous_corpus(tmp_path, offline_build, monkeypatch):
    build_debian_corpus(tmp_path / "out", "fr", tmp_path / "cache")
    before = (tmp_path / "out/pairs.tsv").read_bytes()

    def fail(deb: Path, dest: Path) -> Path:
        raise CorpusError("`dpkg-deb -x` failed: corrupt archive")

    monkeypatch.setattr(debian, "unpack", fail)
    assert debian.main(["--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")]) == 1
    assert (tmp_path / "out/pairs.tsv").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json", "pairs.tsv"]


def test_read_errors_are_clear(tmp_path):
    with pytest.raises(CorpusError, match="Debian corpus not found.*python -m transformer.data.corpora.debian"):
        read_debian_corpus(tmp_path / "missing")
    bad = tmp_path / "pairs.tsv"
    bad.write_text("train\tgramps\tOpen the file now.\tOuvrez le fichier.\ntrain\tgramps\tonly three\n",
                   encoding="utf-8")
    with pytest.raises(CorpusError, match=r"pairs.tsv:2: expected split<TAB>source<TAB>english<TAB>target"):
        read_debian_corpus(bad)
    bad.write_text("valid\tgramps\tOpen the file now.\tOuvrez le fichier.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="pairs.tsv:1"):
        read_debian_corpus(bad)
    bad.write_text("", encoding="utf-8")
    with pytest.raises(CorpusError, match="is empty"):
        read_debian_corpus(tmp_path)


def test_manifest_json_is_plain_data(tmp_path, offline_build):
    build_debian_corpus(tmp_path / "out", "fr", tmp_path / "cache")
    raw = json.loads((tmp_path / "out/manifest.json").read_text(encoding="utf-8"))
    assert raw["release"] == "Debian 12 (bookworm)" and raw["packages"][0]["name"] == "fake-app"
