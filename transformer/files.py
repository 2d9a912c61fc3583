"""Atomic file writes (a crash mid-write leaves the previous file intact), and reads that never block on a FIFO.

Every command that writes a file a user names (`--json`, `--out`) checks the path with `check_output_file` before
it does any work, and every write here refuses to replace anything but a regular file: run as root, a rename over
`/dev/null` once replaced the device node.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


class OutputPathError(ValueError):
    """No file can be written at a path a user named; the message says why."""


def _not_a_regular_file(path: Path) -> str | None:
    """Why writing path would replace something that is not a file of data (a link, a folder, a device, a FIFO or
    a socket), or None when path is a regular file or names nothing yet."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be inspected ({e.strerror})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link (writing would replace the link): name the file itself, or a new one"
    if stat.S_ISDIR(mode):
        return "is a folder: name a file"
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        return f"is {kind}, not a regular file (writing would replace it): name a regular file or a new one"
    return None


def check_output_file(path: str | Path, what: str = "output file") -> Path:
    """path as a Path, once a file can surely be written there: a regular file or a new name in a folder where
    files can be made. Otherwise OutputPathError, which names `what` (e.g. "--json") and says why: an empty path,
    a folder, a symbolic link, a device, a FIFO or a socket, a missing folder, or one where nothing can be made
    (read-only, /proc). Call it before the work whose result goes there, so that nothing is lost."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise OutputPathError(f"{what}: expected the path of a file, got {path!r}")
    path = Path(path)
    if problem := _not_a_regular_file(path):
        raise OutputPathError(f"{what} {path} {problem}")
    folder = path.parent
    if not folder.is_dir():
        raise OutputPathError(f"{what} {path}: the folder {folder} does not exist")
    try:  # the only sure test that a file can be made there (os.access says yes to root, even in /proc)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{path.name[:64]}.", suffix=".check")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputPathError(f"{what} {path}: no file can be written in {folder} ({e.strerror})") from None
    return path


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text to a temporary file beside path, then rename it over path; OutputPathError (nothing written)
    when path is a link, a folder, a device, a FIFO or a socket.

    The file gets the mode any new file gets under the umask (0644 usually), as checkpoints do, not
    mkstemp's owner-only 0600: run.json, status.json and tokenizer.json are read by other users too.
    """
    path = Path(path)
    if problem := _not_a_regular_file(path):
        raise OutputPathError(f"{path} {problem}")
    tmp = _temporary_beside(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _temporary_beside(path: Path, text: str) -> Path:
    """A complete temporary file holding text in path's folder, readable as the umask allows (not mkstemp's 0600)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file beside path, then rename it over path."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False))


def create_json(path: str | Path, data: Any) -> bool:
    """Write JSON to path only when nothing is there yet: False, and nothing written, when path exists. Of two
    writers at once exactly one creates it (a claim), and readers never see it half-written: a complete temporary
    file is hard-linked to path, which fails when the name is taken (O_EXCL where links are not supported)."""
    path = Path(path)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    tmp = _temporary_beside(path, text)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links (FAT, some network ones): exclusive, though not atomic
            try:
                created = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                return False
            with os.fdopen(created, "w", encoding="utf-8") as f:
                f.write(text)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def read_small_text(path: str | Path, max_bytes: int | None = None) -> str | None:
    """The text of a regular file of at most max_bytes, or None: missing, not a regular file (opening a FIFO would
    wait for a writer forever), larger than max_bytes, or unreadable. Undecodable bytes become U+FFFD."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or (max_bytes is not None and info.st_size > max_bytes):
            return None
        # O_NONBLOCK: should a FIFO take the file's place after the check, opening it does not wait either
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError:
        return None
    if max_bytes is not None and len(data) > max_bytes:
        return None
    return data.decode("utf-8", errors="replace")


def read_json_object(path: str | Path, max_bytes: int = 1 << 20) -> dict[str, Any]:
    """A small JSON object from a file, or {} when it is missing, not a regular file, too large, half-written,
    nested too deeply or not an object."""
    text = read_small_text(path, max_bytes)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
