"""Fetching and unpacking Debian packages with apt-get and dpkg-deb, and reading their licences.

Nothing is installed: `apt-get download` puts the .deb in the cache folder (a file already there is
reused), `dpkg-deb -x` unpacks it into a scratch folder.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from transformer.data.corpora.base import CorpusError

log = logging.getLogger(__name__)

# Prose names of licences for copyright files that are not machine-readable (DEP-5), tried in order.
_LICENCE_NAMES = (("gnu lesser general public license", "LGPL"), ("gnu library general public license", "LGPL"),
                  ("gnu general public license", "GPL"), ("gnu free documentation license", "GFDL"),
                  ("creative commons attribution-sharealike", "CC-BY-SA"), ("mozilla public license", "MPL"))


@dataclass(frozen=True)
class PackageInfo:
    name: str
    version: str
    filename: str  # the .deb in the cache folder
    size_bytes: int
    sha256: str
    licence: str  # of the copyright file's `Files: *` paragraph, e.g. "MPL-2.0", "GPL-2+"
    licences: tuple[str, ...]  # every licence the copyright file names, for its other files


def _run(command: list[str], cwd: Path | None = None) -> str:
    if shutil.which(command[0]) is None:
        raise CorpusError(f"`{command[0]}` not found: the Debian corpus is built on Debian or Ubuntu")
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise CorpusError(f"`{' '.join(command)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def download(package: str, cache_dir: Path) -> Path:
    """The package's .deb in cache_dir, fetched with `apt-get download` unless a version is already there."""
    cached = sorted(cache_dir.glob(f"{package}_*.deb"))
    if cached:
        return cached[-1]
    cache_dir.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", "-q", package], cwd=cache_dir)
    fetched = sorted(cache_dir.glob(f"{package}_*.deb"))
    if not fetched:
        raise CorpusError(f"apt-get download {package} left no .deb in {cache_dir}")
    log.info("downloaded %s (%.1f MB)", fetched[-1].name, fetched[-1].stat().st_size / 1e6)
    return fetched[-1]


def unpack(deb: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    _run(["dpkg-deb", "-x", str(deb), str(dest)])
    return dest


_LICENSE_FIELD = re.compile(r"^License:[ \t]*(\S[^\n]*)", re.MULTILINE)
_COMMON_LICENSE = re.compile(r"/usr/share/common-licenses/([\w.+-]*\w)")
_ALL_FILES = re.compile(r"^Files:\s*\*\s*$", re.MULTILINE)


def licences(copyright_text: str) -> tuple[str, tuple[str, ...]]:
    """(main licence, all licences) of a Debian copyright file; DEP-5 fields where present, else prose names."""
    named = [found.strip() for found in _LICENSE_FIELD.findall(copyright_text)]
    if not named:  # not DEP-5: the file Debian points to ("/usr/share/common-licenses/LGPL-2.1"), or the prose
        prose = " ".join(copyright_text.split()).lower()
        named = _COMMON_LICENSE.findall(copyright_text) or [short for name, short in _LICENCE_NAMES if name in prose]
    everything = tuple(dict.fromkeys(named))
    main = next((field.group(1).strip() for paragraph in re.split(r"\n\s*\n", copyright_text)
                 if _ALL_FILES.search(paragraph) and (field := _LICENSE_FIELD.search(paragraph))), None)
    return main or (everything[0] if everything else "unknown"), everything


def package_info(name: str, deb: Path, root: Path) -> PackageInfo:
    """Version from the .deb's control file, licences from the unpacked usr/share/doc/<name>/copyright."""
    version = _run(["dpkg-deb", "-f", str(deb), "Version"]).strip()
    copyright_file = root / "usr/share/doc" / name / "copyright"
    text = copyright_file.read_text(encoding="utf-8", errors="replace") if copyright_file.is_file() else ""
    main, everything = licences(text)
    return PackageInfo(name, version, deb.name, deb.stat().st_size,
                       hashlib.sha256(deb.read_bytes()).hexdigest(), main, everything)
