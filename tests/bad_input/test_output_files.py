"""A file a command writes never replaces a device, a FIFO, a link or a folder, and a path where
no file can be written is refused before any work is done."""

import os
import stat
from pathlib import Path

import pytest

from transformer.files import OutputPathError, check_output_file, write_json_atomic, write_text_atomic


def special_files(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a symbolic link to a regular file, a folder and (as root) a character device like /dev/null."""
    made = {"fifo": tmp_path / "fifo", "link": tmp_path / "link", "folder": tmp_path / "folder"}
    os.mkfifo(made["fifo"])
    (tmp_path / "target.json").write_text("kept", encoding="utf-8")
    made["link"].symlink_to(tmp_path / "target.json")
    made["folder"].mkdir()
    if os.geteuid() == 0:
        made["device"] = tmp_path / "null"
        os.mknod(made["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    return made


def kinds(tmp_path: Path) -> dict[str, int]:
    return {p.name: stat.S_IFMT(os.lstat(p).st_mode) for p in tmp_path.iterdir()}


def test_writes_never_replace_a_device_a_fifo_a_link_or_a_folder(tmp_path):
    made = special_files(tmp_path)
    before = kinds(tmp_path)
    for path in made.values():
        with pytest.raises(OutputPathError, match=str(path)):
            write_text_atomic(path, "{}")
        with pytest.raises(OutputPathError, match=str(path)):
            write_json_atomic(path, {})
        with pytest.raises(OutputPathError, match="--json"):
            check_output_file(path, "--json")
    assert kinds(tmp_path) == before  # no temporary file left either
    assert (tmp_path / "target.json").read_text(encoding="utf-8") == "kept"


@pytest.mark.parametrize("kind, expected", [("fifo", "FIFO"), ("link", "symbolic link"), ("folder", "folder"),
                                            ("device", "device")])
def test_the_message_says_what_is_in_the_way(tmp_path, kind, expected):
    made = special_files(tmp_path)
    if kind not in made:
        pytest.skip("only root can make a device node")
    with pytest.raises(OutputPathError, match=expected):
        check_output_file(made[kind])


def test_a_missing_folder_an_empty_path_and_proc_are_refused_and_a_regular_or_new_file_is_fine(tmp_path):
    with pytest.raises(OutputPathError, match="does not exist"):
        check_output_file(tmp_path / "missing" / "out.json")
    for empty in ("", "  ", None):
        with pytest.raises(OutputPathError, match="expected the path of a file"):
            check_output_file(empty, "--out")
    if Path("/proc/self/status").is_file():  # a regular file by its mode, in a folder where nothing can be made
        with pytest.raises(OutputPathError, match="no file can be written"):
            check_output_file("/proc/self/status")
    (tmp_path / "old.json").write_text("old", encoding="utf-8")
    assert check_output_file(tmp_path / "old.json") == tmp_path / "old.json"
    assert check_output_file(str(tmp_path / "new.json")) == tmp_path / "new.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # the check leaves nothing behind
    write_text_atomic(tmp_path / "old.json", "new")
    assert (tmp_path / "old.json").read_text(encoding="utf-8") == "new"


def test_evaluate_refuses_its_out_path_before_translating(tmp_path, monkeypatch, capsys):
    from transformer.decoding import evaluate

    def never(*args, **kwargs):
        raise AssertionError("translated before the output path was checked")

    monkeypatch.setattr(evaluate, "evaluate_checkpoint", never)
    made = special_files(tmp_path)
    before = kinds(tmp_path)
    for out in [*made.values(), tmp_path / "missing" / "scores.json", ""]:
        assert evaluate.main(["--checkpoint", str(tmp_path), "--out", str(out)]) == 2
        assert "error: --out" in capsys.readouterr().err
    assert kinds(tmp_path) == before


def test_the_debian_corpus_builder_checks_its_folder_before_downloading(tmp_path, monkeypatch):
    from transformer.data.corpora import debian
    from transformer.data.corpora.base import CorpusError

    monkeypatch.setattr(debian, "_collect", lambda *args: pytest.fail("downloaded before the output was checked"))
    os.mkfifo(tmp_path / "pairs.tsv")
    with pytest.raises(CorpusError, match="--out .*pairs.tsv is a FIFO"):
        debian.build_debian_corpus(tmp_path)
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(CorpusError, match="--out"):
        debian.build_debian_corpus(tmp_path / "file" / "corpus")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pairs.tsv").st_mode)
