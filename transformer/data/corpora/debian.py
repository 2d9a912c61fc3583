"""Modern English -> French (or Italian...) parallel text from Debian 12's translated help and catalogs.

Built offline the way OPUS built its GNOME, KDE and OpenOffice corpora: a fixed list of packages
(`LIBREOFFICE`, `PACKAGES`) is fetched with `apt-get download` into a cache folder, unpacked with
`dpkg-deb -x` (nothing is installed), and every English string paired with its translation:

- LibreOffice's help pages, paragraph by paragraph (`help_pairs`);
- GNOME's Mallard help pages (`usr/share/help/{C,<tgt>}`), block by block (`mallard_pairs`);
- gettext (`mo_pairs`) and Qt (`qm_pairs`) catalogs of the applications and games, string by string.

Each raw pair is cleaned by `debian_clean.clean_pair` (placeholders, code, sentence splitting, the
short-label rule: at least 3 English words, untranslated and badly proportioned pairs); identical pairs are
kept once; a hash of the English sentence puts 3% of them in test and 2% in dev. The result is one TSV,
`split<TAB>source<TAB>english<TAB>target` (source: the package, or package/document for help), and
`manifest.json` with each package's version, checksum and licences. See docs/debian-corpus.md.

    python -m transformer.data.corpora.debian --tgt fr --out data/debian-en-fr
    corpus = read_debian_corpus(Path("data/debian-en-fr"))   # a ParallelCorpus
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from transformer.data.corpora.base import SPLITS, CorpusError, Pair, ParallelCorpus, normalize_text
from transformer.data.corpora.debian_clean import (
    clean_catalog_text,
    clean_pair,
    dedupe,
    has_placeholder,
    is_sentence_like,
    split_of,
    split_sentences,
)
from transformer.data.corpora.debian_extract import help_pairs, mallard_pairs, mo_pairs, qm_pairs
from transformer.data.corpora.debian_fetch import PackageInfo, download, package_info, unpack
from transformer.files import OutputPathError, check_output_file, write_text_atomic

__all__ = ["LIBREOFFICE", "PACKAGES", "Manifest", "PackageInfo", "build_debian_corpus", "clean_catalog_text",
           "clean_pair", "dedupe", "has_placeholder", "help_pairs", "is_sentence_like", "mallard_pairs", "mo_pairs",
           "qm_pairs", "read_debian_corpus", "split_of", "split_sentences"]

log = logging.getLogger(__name__)

RELEASE = "Debian 12 (bookworm)"
DEFAULT_CACHE = Path("data/debian-cache")
# Unpacked together: the English help and the target language's help.
LIBREOFFICE = ("libreoffice-help-en-us", "libreoffice-help-{tgt}")
# Each is searched for Mallard help, .mo and .qm catalogs in the target language. Each adds at least 100 clean
# en-fr pairs per MB downloaded, except gcompris-qt-data (56/MB, for its simple sentences): docs/debian-corpus.md.
PACKAGES = (
    "gnome-user-docs", "evolution-common", "gnucash-common", "vlc-l10n", "gramps", "freeciv-data",
    "cataclysm-dda-data", "gcompris-qt-data", "gnome-devel-docs", "orca", "shotwell-common", "brasero-common",
    "gedit-common", "gnome-terminal-data", "seahorse", "evince-common", "eog", "gnome-system-monitor",
    "gnome-disk-utility", "gnome-software-common", "rhythmbox-data", "dconf-editor", "iagno", "gnome-boxes",
    "file-roller", "simple-scan", "pitivi", "gnome-calculator", "totem-common", "gnome-dictionary", "cheese-common",
    "gnome-maps", "gnome-chess", "gnome-sudoku", "gnome-nibbles", "gnome-robots", "gnome-mines", "gnome-clocks",
    "gnome-music", "polari", "baobab", "quadrapassel", "four-in-a-row", "gnome-photos", "gnome-tetravex",
    "gnome-contacts", "swell-foop", "accerciser", "hitori", "gnome-logs", "gnome-font-viewer",
)
LIBREOFFICE_SOURCE = "libreoffice-help"


@dataclass(frozen=True)
class Manifest:
    tgt: str
    release: str
    packages: tuple[PackageInfo, ...]
    sources: dict[str, int]  # pairs per source, after cleaning and deduplication
    splits: dict[str, int]  # pairs per split

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        raw = json.loads(text)
        packages = tuple(PackageInfo(**{**p, "licences": tuple(p["licences"])}) for p in raw.pop("packages"))
        return cls(packages=packages, **raw)


def _catalog_pair(en: str, tgt: str) -> Pair:
    return clean_catalog_text(en), clean_catalog_text(tgt)


def _help_docs(root: Path, tgt: str) -> Iterator[tuple[str, Path, Path]]:
    """(document, English folder, target folder) of the Mallard help documents translated into tgt."""
    for en_dir in sorted((root / "usr/share/help/C").glob("*/")):
        tgt_dir = root / "usr/share/help" / tgt / en_dir.name
        if tgt_dir.is_dir():
            yield en_dir.name, en_dir, tgt_dir


def unit_pairs(name: str, root: Path, tgt: str) -> Iterator[tuple[str, Pair]]:
    """(source, raw plain-text pair) of everything translated into tgt in an unpacked package tree."""
    help_root = root / "usr/share/libreoffice/help"
    if (help_root / "en-US").is_dir() and (help_root / tgt).is_dir():
        yield from ((LIBREOFFICE_SOURCE, pair) for pair in help_pairs(help_root / "en-US", help_root / tgt))
    for doc, en_dir, tgt_dir in _help_docs(root, tgt):
        for en_page in sorted(en_dir.glob("*.page")):
            if (tgt_dir / en_page.name).is_file():
                yield from ((f"{name}/{doc}", pair) for pair in mallard_pairs(en_page, tgt_dir / en_page.name))
    for catalog in sorted(root.glob(f"usr/share/locale/{tgt}/LC_MESSAGES/*.mo")):
        yield from ((name, _catalog_pair(*pair)) for pair in mo_pairs(catalog))
    for catalog in sorted(root.glob(f"usr/share/**/*_{tgt}.qm")):
        yield from ((name, _catalog_pair(*pair)) for pair in qm_pairs(catalog))


def _units(tgt: str) -> list[tuple[str, tuple[str, ...]]]:
    """(name, packages unpacked together) in build order."""
    return [(LIBREOFFICE_SOURCE, tuple(p.format(tgt=tgt) for p in LIBREOFFICE))] + [(p, (p,)) for p in PACKAGES]


def _collect(tgt: str, cache_dir: Path, scratch: Path) -> tuple[list[tuple[str, Pair]], list[PackageInfo]]:
    rows, infos = [], []
    for name, packages in _units(tgt):
        root = scratch / name
        root.mkdir()
        for package in packages:
            deb = download(package, cache_dir)
            unpack(deb, root)
            infos.append(package_info(package, deb, root))
        before = len(rows)
        rows += [(source, clean) for source, (en, t) in unit_pairs(name, root, tgt) for clean in clean_pair(en, t)]
        log.info("%s: %d clean pairs", name, len(rows) - before)
        shutil.rmtree(root)
    return rows, infos


def build_debian_corpus(out_dir: Path, tgt: str = "fr", cache_dir: Path | None = None) -> Manifest:
    """Fetches, extracts and cleans the packages; writes out_dir/pairs.tsv and out_dir/manifest.json."""
    start = time.monotonic()
    cache_dir = Path(cache_dir or DEFAULT_CACHE)
    out_dir = Path(out_dir)
    try:  # before the downloads: a folder that cannot take the files would lose them
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in ("pairs.tsv", "manifest.json"):
            check_output_file(out_dir / name, "--out")
    except (OSError, OutputPathError) as e:
        raise CorpusError(f"{e}" if isinstance(e, OutputPathError) else f"--out {out_dir}: {e.strerror}") from e
    with tempfile.TemporaryDirectory(prefix="debian-corpus-") as scratch:
        rows, infos = _collect(tgt, cache_dir, Path(scratch))
    kept = dedupe(rows)
    lines = [f"{split_of(en)}\t{source}\t{en}\t{t}\n" for source, (en, t) in kept]
    write_text_atomic(out_dir / "pairs.tsv", "".join(lines))
    splits = Counter(line.split("\t", 1)[0] for line in lines)
    manifest = Manifest(tgt, RELEASE, tuple(infos), dict(Counter(source for source, _ in kept).most_common()),
                        {name: splits[name] for name in SPLITS})
    write_text_atomic(out_dir / "manifest.json", manifest.to_json())
    log.info("%d pairs (%d before deduplication) from %d packages in %.0f s: %s", len(kept), len(rows), len(infos),
             time.monotonic() - start, manifest.splits)
    return manifest


def read_debian_corpus(path: Path, src: str = "en", tgt: str = "fr") -> ParallelCorpus:
    """The corpus build_debian_corpus wrote; path is pairs.tsv or its folder."""
    path = Path(path)
    if path.is_dir():
        path = path / "pairs.tsv"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise CorpusError(f"Debian corpus not found: {path} (build it with "
                          f"`python -m transformer.data.corpora.debian --tgt {tgt} --out {path.parent}`)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"cannot read Debian corpus {path}: {exc}") from exc
    splits: dict[str, list[Pair]] = {name: [] for name in SPLITS}
    packages = set()
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) != 4 or fields[0] not in splits or not fields[2].strip() or not fields[3].strip():
            raise CorpusError(f"{path}:{number}: expected split<TAB>source<TAB>english<TAB>target "
                              f"with split one of {', '.join(SPLITS)}")
        splits[fields[0]].append((normalize_text(fields[2]), normalize_text(fields[3])))
        packages.add(fields[1].split("/")[0])  # "gedit-common/gedit" -> "gedit-common"
    if not lines:
        raise CorpusError(f"Debian corpus {path} is empty")
    total = sum(map(len, splits.values()))
    return ParallelCorpus(src, tgt, **splits,
                          description=f"Debian: {total:,} pairs from {len(packages)} packages ({src} -> {tgt})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Debian English -> target parallel corpus.")
    parser.add_argument("--tgt", default="fr", help="target language code as Debian names it (fr, it, de...)")
    parser.add_argument("--out", type=Path, required=True, help="output folder for pairs.tsv and manifest.json")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="folder for the downloaded .deb files")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        manifest = build_debian_corpus(args.out, args.tgt, args.cache)
    except CorpusError as exc:
        log.error("%s", exc)
        return 1
    for source, count in manifest.sources.items():
        log.info("%7d  %s", count, source)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
