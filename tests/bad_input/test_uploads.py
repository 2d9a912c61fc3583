"""Uploads the Train page's checker used to accept but training could not use: refused, with the reason,
before a run is created; a byte-order mark never reaches the first sentence."""

import pytest

from tests.fuzz_inputs import UPLOADS
from transformer.data.corpora.base import split_sizes
from transformer.data.corpora.tsv import load_tsv
from transformer.data.load import load_corpus
from transformer.data.spec import CorpusSpec
from ui.shared.training import jobs


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", [name for name, _, _ in UPLOADS])
def test_an_upload_training_could_not_use_is_refused_before_a_run_is_created(tmp_path, monkeypatch, name):
    data, message = next((d, m) for n, d, m in UPLOADS if n == name)
    assert len(data) <= jobs.MAX_TSV_BYTES  # within the size limit: the content is what is wrong
    with pytest.raises(ValueError, match=message) as caught:
        jobs.check_tsv(data)
    assert len(str(caught.value)) < 300
    monkeypatch.setattr(jobs, "_launch", lambda root, args: pytest.fail("a run was started"))
    with pytest.raises(ValueError, match=message):
        jobs.start_run(tmp_path / "runs", "run-1", ["--corpus", "tsv"], corpus_tsv=data)
    assert not (tmp_path / "runs").exists()


def test_the_smallest_accepted_upload_gives_every_split_a_pair(tmp_path):
    smallest = next(n for n in range(1, 100) if min(split_sizes(n, *jobs.SPLIT_FRACTIONS).values()) >= 1)
    data = "".join(f"the cat {i}\tle chat {i}\n" for i in range(smallest)).encode()
    assert jobs.check_tsv(data) == smallest
    with pytest.raises(ValueError, match=f"at least {smallest} are needed"):
        jobs.check_tsv(data[: data.rindex(b"the")])
    (tmp_path / "c.tsv").write_bytes(data)
    corpus = load_corpus(CorpusSpec(kind="tsv", path=str(tmp_path / "c.tsv")))
    assert corpus.train and corpus.dev and corpus.test


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(f"hello {i}\tbonjour {i}\n" for i in range(30)).encode())
    corpus = load_tsv(path, dev_fraction=0, test_fraction=0)
    assert corpus.train[0] == ("hello 0", "bonjour 0")
    assert not any("\ufeff" in s + t for s, t in corpus.train)
