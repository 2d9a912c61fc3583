"""The Marian (opus-mt) import, checked against transformers itself, as TransformerLens checks its models.

A small MarianMTModel of opus-mt's layout (swish, post-LN, sinusoids in halves, shared embeddings, a final logits
bias, pad = the last id) with SentencePiece models trained here, briefly trained on English -> French so that its
outputs vary and end, is saved with `save_pretrained`, imported with `transformer.model.hf`, and compared: the
pieces and ids, greedy search, every token's probability, every attention map, beam search; then the refusals,
and fine-tuning the imported model with `--init-from`.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="transformers (requirements-dev.txt) is the reference the import is "
                                           "checked against")

from tests.marian_fixtures import EN, load_marian, write_marian_folder  # noqa: E402
from transformer.data.sentencepiece import SentencePieceTokenizer  # noqa: E402
from transformer.data.tokenizer import load_tokenizer  # noqa: E402
from transformer.decoding.search import SearchSettings  # noqa: E402
from transformer.decoding.translate import Translator  # noqa: E402
from transformer.model import hf  # noqa: E402
from transformer.model.checkpoint import load_checkpoint  # noqa: E402
from transformer.model.hf import card as hf_card  # noqa: E402

SENTENCES = EN[:5] + ["The dog sat in the garden.", "Where is the cat?", "  Open   the  window ,please!  "]
MAX_NEW = 24  # transformers' max_new_tokens; ours: max_len_a 0, max_len_b MAX_NEW
GREEDY = SearchSettings(max_len_a=0, max_len_b=MAX_NEW)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_marian_folder(tmp_path_factory.mktemp("marian") / "opus-mt-en-fr", train_steps=40)


@pytest.fixture(scope="module")
def imported(folder, tmp_path_factory) -> Path:
    return hf.import_marian(str(folder), tmp_path_factory.mktemp("ours") / "opus-mt-en-fr")


@pytest.fixture(scope="module")
def reference(folder):
    return load_marian(folder)


@pytest.fixture(scope="module")
def translator(imported) -> Translator:
    return Translator(imported)


def generate(model, tokenizer, texts, **kwargs):
    """transformers' generate as Marian runs it, less the </s> it forces at max_length (ours: no such rule)."""
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        return model.generate(**batch, max_new_tokens=MAX_NEW, forced_eos_token_id=None, return_dict_in_generate=True,
                              **kwargs)


def output_ids(row: torch.Tensor, eos: int = 0) -> list[int]:
    """A generated row without the decoder start, up to and with its first </s> (padding after it dropped)."""
    ids = row[1:].tolist()
    return ids[: ids.index(eos) + 1] if eos in ids else ids


# ----------------------------------------------------------------------------- the tokenizer


def test_the_pieces_and_ids_are_marian_tokenizers(translator, reference):
    _, tok = reference
    ours = translator.tokenizer
    assert isinstance(ours, SentencePieceTokenizer) and ours.kind == "sentencepiece" and ours.shared
    for text in SENTENCES + ["ÉTÉ ﬁ café, zèbre x", ">>fr<< The dog", "Quoi ? «Non»", ""]:
        ids = tok(text)["input_ids"]
        assert ours.encode_source(text) == ids, text
        assert ours.source_pieces(ids) == tok.convert_ids_to_tokens(ids), text
        assert ours.encode_target(text) == [tok.pad_token_id] + tok(text_target=text)["input_ids"], text
    for text in SENTENCES:
        assert translator.prepare(text).pieces == tok.convert_ids_to_tokens(tok(" ".join(text.split()))["input_ids"])
        assert ours.normalize(text) == ours.decode_source(ours.encode_source(text)) == " ".join(text.split())


def test_decoding_gives_the_text_back_as_marian_tokenizer_does(translator, reference):
    _, tok = reference
    ours, g = translator.tokenizer, torch.Generator().manual_seed(0)
    specials = [tok.unk_token_id, tok.pad_token_id]
    for _ in range(30):
        ids = torch.randint(2, ours.tgt_vocab_size - 1, (12,), generator=g).tolist()
        ids[int(torch.randint(0, 12, (1,), generator=g))] = specials[int(torch.randint(0, 2, (1,), generator=g))]
        assert ours.decode_target(ids + [0]) == tok.decode(ids + [0], skip_special_tokens=True)
        assert ours.decode_target(ids + [0, 5, 6]) == tok.decode(ids + [0], skip_special_tokens=True)  # </s> ends it
    for text in SENTENCES:
        assert ours.decode_target(ours.encode_target(text)) == tok.decode(tok(text_target=text)["input_ids"],
                                                                          skip_special_tokens=True)


def test_typed_control_tokens_stay_text_unlike_marian_tokenizer(translator, reference):
    _, tok = reference
    ids = translator.tokenizer.encode_source("The cat </s> <pad> sat.")
    assert ids.count(0) == 1 and ids[-1] == 0 and tok.pad_token_id not in ids
    assert tok("The cat </s> <pad> sat.")["input_ids"].count(0) == 2  # MarianTokenizer: a second </s>, and <pad>


def test_the_checkpoint_keeps_the_tokenizer_exactly_in_json(imported, translator, reference):
    _, tok = reference
    data = json.loads((imported / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["kind"] == "sentencepiece" and data["vocab"] == tok.get_vocab() | {}
    loaded = load_tokenizer(imported / "tokenizer.json")
    assert isinstance(loaded, SentencePieceTokenizer) and loaded.to_json() == translator.tokenizer.to_json()
    s = loaded.specials
    assert (s.pad, s.start, s.eos, s.unk, s.never) == (tok.pad_token_id, tok.pad_token_id, 0, 1, (tok.pad_token_id,))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d | {"source_spm": "not base64!"}, "not a valid SentencePiece tokenizer"),
    (lambda d: d | {"target_spm": "AAAA"}, "target.spm: not a SentencePiece model"),
    (lambda d: d | {"vocab": {"a": 0, "b": 2}}, "are not 0..1 each once"),
    (lambda d: d | {"specials": d["specials"] | {"never": [10_000]}}, "outside the target vocabulary"),
    (lambda d: d | {"shared": False}, "shared must be true exactly when there is no target_vocab"),
])
def test_a_damaged_tokenizer_json_is_one_clear_error(translator, edit, message):
    from transformer.data.vocabulary import TokenizerError

    damaged = json.dumps(edit(json.loads(translator.tokenizer.to_json())))
    with pytest.raises(TokenizerError, match=f"^tok.json: .*{message}"):
        SentencePieceTokenizer.from_json(damaged, "tok.json")


# ----------------------------------------------------------------------------- the model against transformers


def test_greedy_ids_and_every_probability_equal_generate(translator, reference):
    model, tok = reference
    out = generate(model, tok, SENTENCES, num_beams=1, do_sample=False, output_scores=True, output_logits=True)
    ours = translator.translate_batch(SENTENCES, GREEDY)
    assert any(t.token_ids[-1] == 0 for t in ours) and any(len(t.token_ids) >= 6 for t in ours)  # not degenerate
    for i, translation in enumerate(ours):
        assert translation.token_ids == output_ids(out.sequences[i]), SENTENCES[i]
        # generate's scores (<pad> banned, renormalised) and the model's own probabilities (ours: not renormalised;
        # the two differ by <pad>'s probability, none in a trained Marian)
        for scores in (out.scores, out.logits):
            probs = [scores[t][i].softmax(-1)[token].item() for t, token in enumerate(translation.token_ids)]
            assert translation.token_probs == pytest.approx(probs, abs=1e-4)
        assert translation.text == tok.decode(out.sequences[i], skip_special_tokens=True)


def test_every_attention_map_equals_output_attentions(translator, reference):
    model, tok = reference
    for text in SENTENCES[:4]:
        translation = translator.translate(text, GREEDY, attention=True)
        maps, start = translation.attention, translator.tokenizer.specials.start
        with torch.no_grad():
            ref = model(input_ids=torch.tensor([translation.source_ids]), output_attentions=True,
                        decoder_input_ids=torch.tensor([[start] + translation.token_ids[:-1]]))
        for ours, theirs in ((maps.enc_self, ref.encoder_attentions), (maps.dec_self, ref.decoder_attentions),
                             (maps.cross, ref.cross_attentions)):
            assert len(ours) == len(theirs) == 2
            for layer, (a, b) in enumerate(zip(ours, theirs)):
                assert a.shape == b[0].shape and torch.allclose(a, b[0], atol=1e-5), (text, layer)
        # and each step's rows as generate records them
        out = generate(model, tok, [text], num_beams=1, do_sample=False, output_attentions=True)
        for step, (self_rows, cross_rows) in enumerate(zip(out.decoder_attentions, out.cross_attentions)):
            for layer in range(2):
                assert torch.allclose(maps.dec_self[layer][:, step, : step + 1], self_rows[layer][0, :, 0], atol=1e-5)
                assert torch.allclose(maps.cross[layer][:, step], cross_rows[layer][0, :, 0], atol=1e-5)


@pytest.mark.parametrize("beams, alpha", [(4, 1.0), (3, 0.6)])
def test_beam_search_equals_num_beams_where_our_rule_is_theirs(translator, reference, beams, alpha):
    """Ours stops a sentence when `beams` hypotheses have ended (transformers' early_stopping=True) and divides by
    length ** alpha counting </s> (their length_penalty); their default early_stopping=False searches on."""
    model, tok = reference
    settings = SearchSettings(beam_size=beams, nbest=beams, length_penalty="length", alpha=alpha, max_len_a=0,
                              max_len_b=MAX_NEW)
    for text in SENTENCES[:5]:
        out = generate(model, tok, [text], num_beams=beams, num_return_sequences=beams, early_stopping=True,
                       length_penalty=alpha, do_sample=False, output_scores=True)
        ours = translator.translate(text, settings)
        hypotheses = [(ours.token_ids, ours.normalized_score)] + [(a.token_ids, a.normalized_score)
                                                                   for a in ours.alternatives]
        assert [ids for ids, _ in hypotheses] == [output_ids(row) for row in out.sequences], text
        assert [s for _, s in hypotheses] == pytest.approx(out.sequences_scores.tolist(), abs=1e-4)


# ----------------------------------------------------------------------------- refusals


def copy_of(folder: Path, tmp_path: Path, edit: dict | None = None, drop: str | None = None) -> Path:
    """folder copied, its config.json updated with edit, or the file drop removed."""
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("spm"))
    if edit:
        config = json.loads((copy / "config.json").read_text())
        (copy / "config.json").write_text(json.dumps(config | edit))
    if drop:
        (copy / drop).unlink()
    return copy


@pytest.mark.parametrize("edit, message", [
    ({"activation_function": "gelu_new"}, "activation_function 'gelu_new' is not implemented"),
    ({"normalize_before": True}, "normalize_before = true: pre-LN Marian"),
    ({"add_bias_logits": True}, "add_bias_logits = true"),
    ({"normalize_embedding": True}, "normalize_embedding = true"),
    ({"static_position_embeddings": False}, "learned position embeddings"),
    ({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]}, "we import MarianMTModel (opus-mt), "
                                                                             "M2M100ForConditionalGeneration"),
    ({"architectures": ["MarianForCausalLM"]}, "only Marian translation models"),
    ({"decoder_attention_heads": 2}, "encoder_attention_heads 4 and decoder_attention_heads 2 differ"),
    ({"vocab_size": 90, "decoder_vocab_size": 90}, "vocabularies of 87 (source) and 87 (target) pieces, but"),
    ({"encoder_ffn_dim": 128, "decoder_ffn_dim": 128}, "fc1.weight has shape (64, 32), but config.json makes"),
    ({"eos_token_id": 3}, "eos_token_id is 3, but the vocabulary's eos token is 0"),
], ids=["activation", "pre-LN", "bias-logits", "embedding-norm", "learned-positions", "architecture", "marian-lm",
        "heads", "vocab-size", "shape", "eos"])
def test_what_we_do_not_implement_or_what_disagrees_is_refused_by_name(folder, tmp_path, edit, message):
    with pytest.raises(hf.ImportFailed, match=message.replace("(", r"\(").replace(")", r"\)")):
        hf.import_marian(str(copy_of(folder, tmp_path, edit)), tmp_path / "out")
    assert not (tmp_path / "out").exists() and [p.name for p in tmp_path.iterdir()] == ["copy"]  # no temporary left


@pytest.mark.parametrize("drop, message", [("source.spm", "source.spm: file is missing"),
                                           ("vocab.json", "vocab.json: file is missing"),
                                           ("config.json", "config.json: file is missing")])
def test_a_missing_file_is_named(folder, tmp_path, drop, message):
    with pytest.raises(hf.ImportFailed, match=message):
        hf.import_marian(str(copy_of(folder, tmp_path, drop=drop)), tmp_path / "out")


def test_a_folder_with_only_pytorch_model_bin_is_refused_and_never_unpickled(folder, tmp_path, monkeypatch):
    copy = copy_of(folder, tmp_path, drop="model.safetensors")
    (copy / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": 1}))

    def never(*args, **kwargs):
        raise AssertionError("the import unpickled pytorch_model.bin")

    monkeypatch.setattr(torch, "load", never)
    monkeypatch.setattr(pickle, "load", never)
    monkeypatch.setattr(pickle, "Unpickler", never)
    with pytest.raises(hf.ImportFailed, match="has only pytorch_model.bin, a pickle, which this import never opens") \
            as failure:
        hf.import_marian(str(copy), tmp_path / "out")
    assert "save_pretrained" in str(failure.value)  # how to convert it


def test_a_failed_import_leaves_an_existing_checkpoint_untouched(folder, imported, tmp_path):
    out = tmp_path / "kept"
    shutil.copytree(imported, out)
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()}
    with pytest.raises(hf.ImportFailed, match="already exists; pass --force"):
        hf.import_marian(str(folder), out)
    with pytest.raises(hf.ImportFailed, match="activation_function"):
        hf.import_marian(str(copy_of(folder, tmp_path, {"activation_function": "tanh"})), out, force=True)
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "kept"]


# ----------------------------------------------------------------------------- the command and the checkpoint


def test_the_command_imports_a_folder_and_says_in_one_line_when_it_cannot_download(folder, tmp_path, capsys,
                                                                                    monkeypatch):
    assert hf.main([str(folder), "--out", str(tmp_path / "a"), "--half"]) == 0
    assert capsys.readouterr().out.strip() == f"imported {folder} into {tmp_path / 'a'}"
    checkpoint = load_checkpoint(tmp_path / "a")  # checksums, shapes and the tokenizer's sizes checked
    assert checkpoint.config.activation == "swish" and not checkpoint.config.norm_first
    from safetensors import safe_open

    with safe_open(str(tmp_path / "a" / "model.safetensors"), "pt") as weights:
        assert {weights.get_tensor(k).dtype for k in weights.keys()} == {torch.float16}

    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hf.main(["Helsinki-NLP/opus-mt-en-fr", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "offline" in err and "--local-dir DIR" in err, err
    assert not (tmp_path / "b").exists()
    assert hf.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "c")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_the_checkpoint_says_where_it_came_from(folder, imported):
    metadata = json.loads((imported / "metadata.json").read_text())
    assert metadata["source_model"] == str(folder) and metadata["languages"] == {"src": "en", "tgt": "fr"}
    assert metadata["n_params"] == sum(p.numel() for p in load_checkpoint(imported).model.parameters())
    assert metadata["hf_generation"]["num_beams"] == 4
    card = (imported / "MODEL_CARD.md").read_text()
    assert str(folder) in card and "swish" in card and "en -> fr" in card
    assert hf_card.licence_of("Helsinki-NLP/opus-mt-en-fr", folder, None) == "CC-BY-4.0"
    assert hf_card.licence_of(str(folder), folder, "MIT") == "MIT"


def test_separate_vocabularies_import_and_decode_as_transformers(tmp_path):
    folder = write_marian_folder(tmp_path / "separate", separate=True)
    model, tok = load_marian(folder)
    translator = Translator(hf.import_marian(str(folder), tmp_path / "ours"))
    assert not translator.tokenizer.shared and not translator.model.config.share_embeddings
    for text in SENTENCES[:4]:
        assert translator.tokenizer.encode_target(text)[1:] == tok(text_target=text)["input_ids"]
    out = generate(model, tok, SENTENCES[:4], num_beams=1, do_sample=False)
    for i, translation in enumerate(translator.translate_batch(SENTENCES[:4], GREEDY)):
        assert translation.token_ids == output_ids(out.sequences[i])
        assert translation.text == tok.decode(out.sequences[i], skip_special_tokens=True)


# ----------------------------------------------------------------------------- fine-tuning


def test_an_imported_model_fine_tunes_with_its_own_tokenizer_and_special_ids(imported, tmp_path):
    from tests.marian_fixtures import FR
    from transformer.runs import read_metrics
    from transformer.training import cli as train

    pairs = list(zip(EN, FR)) * 3  # 48 pairs: the default dev and test fractions (2%) leave one pair each; one batch
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("".join(f"{en}\t{fr}\n" for en, fr in pairs), encoding="utf-8")
    run = tmp_path / "run"
    assert train.main(["--out", str(run), "--init-from", str(imported), "--corpus", "tsv", "--path", str(corpus),
                       "--max-steps", "8", "--lr", "3e-3", "--warmup-steps", "1", "--max-tokens", "4000",
                       "--log-every", "1", "--eval-every", "100", "--save-every", "100", "--eval-sentences", "2",
                       "--threads", "1"]) == 0
    losses = [r["train_loss"] for r in read_metrics(run / "metrics.jsonl") if "train_loss" in r]
    assert len(losses) == 8 and sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.2, losses
    assert (run / "tokenizer.json").read_text() == (imported / "tokenizer.json").read_text()  # none trained
    tuned, original = load_checkpoint(run / "checkpoints" / "latest"), load_checkpoint(imported)
    assert tuned.config == original.config and tuned.tokenizer.specials == original.tokenizer.specials
    assert {k: tuned.metadata[k] for k in ("source_model", "licence", "credit", "languages")} == \
        {k: original.metadata[k] for k in ("source_model", "licence", "credit", "languages")}
    translation = Translator(tuned).translate(EN[0], GREEDY)
    assert translation.token_ids and all(t != original.tokenizer.specials.pad for t in translation.token_ids)


def test_a_hub_name_is_downloaded_and_recorded_with_opus_mt_licence(folder, tmp_path, monkeypatch):
    import huggingface_hub

    asked = []

    def snapshot(name, allow_patterns):  # the Hub, offline: the folder a download would have written
        asked.append((name, allow_patterns))
        return str(copy_of(folder, tmp_path / name.replace("/", "--")))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    out = hf.import_marian("Helsinki-NLP/opus-mt-en-fr", tmp_path / "ours")
    assert asked[0][0] == "Helsinki-NLP/opus-mt-en-fr" and "pytorch_model.bin" not in asked[0][1]
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["source_model"] == "Helsinki-NLP/opus-mt-en-fr" and metadata["licence"] == "CC-BY-4.0"
    assert "Tiedemann & Thottingal" in metadata["credit"] and "CC-BY-4.0" in (out / "MODEL_CARD.md").read_text()
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda name, allow_patterns: str(copy_of(folder, tmp_path / "it", drop="model.safetensors")))
    with pytest.raises(hf.ImportFailed, match="has no model.safetensors on the Hub"):
        hf.import_marian("Helsinki-NLP/opus-mt-en-it", tmp_path / "it-ours")


# ----------------------------------------------------------------------------- the language pair


def anonymous_copy(folder: Path, tmp_path: Path) -> Path:
    """folder as save_pretrained writes a MarianMTModel anywhere: a name that is not opus-mt-SRC-TGT and a
    tokenizer_config.json without source_lang and target_lang."""
    copy = shutil.copytree(folder, tmp_path / "my-model", ignore=shutil.ignore_patterns("spm"))
    config = json.loads((copy / "tokenizer_config.json").read_text())
    (copy / "tokenizer_config.json").write_text(json.dumps({k: v for k, v in config.items()
                                                            if k not in ("source_lang", "target_lang")}))
    return copy


def test_a_folder_that_names_no_languages_is_refused_until_src_and_tgt_are_given(folder, tmp_path, capsys):
    copy = anonymous_copy(folder, tmp_path)
    assert hf.main([str(copy), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "which language is the source?" in err and "pass --src CODE" in err and err.count("\n") == 1, err
    with pytest.raises(hf.ImportFailed, match="which language is the target.*pass --tgt CODE"):
        hf.import_marian(str(copy), tmp_path / "out", src_lang="en")
    with pytest.raises(hf.ImportFailed, match=r"--src 'e n' is not a language code"):
        hf.import_marian(str(copy), tmp_path / "out", src_lang="e n", tgt_lang="fr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-model"]  # nothing written, no temporary left
    assert hf.main([str(copy), "--out", str(tmp_path / "out"), "--src", "en", "--tgt", "fr"]) == 0
    assert load_checkpoint(tmp_path / "out").metadata["languages"] == {"src": "en", "tgt": "fr"}
    # given codes win over the folder's own
    out = hf.import_marian(str(folder), tmp_path / "given", src_lang="eng", tgt_lang="fra")
    assert load_checkpoint(out).metadata["languages"] == {"src": "eng", "tgt": "fra"}


@pytest.mark.parametrize("variant", ["opus-mt name", "anonymous with --src --tgt", "separate vocabularies", "half"])
def test_every_import_loads_back_and_translates(folder, tmp_path, variant):
    """The round trip for each kind of folder: what the import writes, the loader accepts."""
    source, options = folder, {}
    if variant == "anonymous with --src --tgt":
        source, options = anonymous_copy(folder, tmp_path), {"src_lang": "en", "tgt_lang": "fr"}
    elif variant == "separate vocabularies":
        source = write_marian_folder(tmp_path / "separate", separate=True)
    elif variant == "half":
        options = {"dtype": torch.float16}
    out = hf.import_marian(str(source), tmp_path / "ours", **options)
    translation = Translator(load_checkpoint(out)).translate(EN[0], GREEDY)
    assert translation.token_ids and translation.text == Translator(out).translate(EN[0], GREEDY).text
