"""The pair reader: which sentences it reads, that its fit learns a reverse from a statement,
that it saves and loads, and that packing pairs for reading changes no logit."""

from __future__ import annotations

import numpy as np
import pytest

from grader import pair_reader
from grader.pair_reader import PairExample, chosen_sentences, sentence_rows


@pytest.fixture(scope="module")
def sentence_model():
    from grader.offline import load_base_model

    return load_base_model()


def test_a_sentence_of_one_clause_is_read_as_the_sentence_and_one_of_several_as_a_whole(
    offline_judge, rl08
):
    answer = "Bootstrapping feeds errors back. The target moves, because the network that is updated also computes it."
    analysis = offline_judge.analyse(rl08, answer)
    texts = [analysis.units[row].span.text for row in sentence_rows(analysis.units)]
    assert texts == [
        "Bootstrapping feeds errors back",
        "The target moves, because the network that is updated also computes it",
    ]


def test_each_point_reads_the_sentences_nearest_it_best_first(offline_judge, rl08):
    point = rl08.key_points[0]
    answer = f"I like bananas and long walks on the beach. {point.text} The weather was fine."
    analysis = offline_judge.analyse(rl08, answer)
    chosen = chosen_sentences(analysis, offline_judge.index(rl08), len(rl08.key_points))
    assert len(chosen) == len(rl08.key_points)
    assert all(len(group) == pair_reader.SENTENCES_PER_POINT for group in chosen)
    assert point.text.rstrip(".") in chosen[0][0]


def test_an_answer_of_no_sentences_gives_every_point_nothing_to_read(offline_judge, rl08):
    analysis = offline_judge.analyse(rl08, "   ")
    assert chosen_sentences(analysis, offline_judge.index(rl08), len(rl08.key_points)) == [
        [] for _ in rl08.key_points
    ]


def _examples() -> list[PairExample]:
    """A toy deck of claims, each stated, reversed or missed by a one-sentence answer."""
    claims = [
        ("errors compound over the horizon", "errors stay small and isolated over the horizon"),
        ("the target moves with the network", "the target stays fixed while the network learns"),
        ("pairs cancel each rater's offset", "pairs keep each rater's offset"),
        ("the clip bounds the policy ratio", "the clip lets the policy ratio grow without bound"),
    ]
    filler = "I would look at the logs first."
    examples = []
    for _ in range(12):
        for claim, reverse in claims:
            examples += [
                PairExample(claim, (claim, filler), "present"),
                PairExample(claim, (reverse, filler), "contradicted"),
                PairExample(claim, (filler,), "absent"),
            ]
    return examples


def test_the_fit_tells_a_claim_from_its_reverse_and_saves_and_loads(
    sentence_model, tmp_path, monkeypatch
):
    monkeypatch.setattr(pair_reader, "EPOCHS", 10)
    monkeypatch.setattr(pair_reader, "LEARNING_RATE", 3e-4)
    monkeypatch.setattr(pair_reader, "ABSENT_KEEP", 1.0)
    reader = pair_reader.fit(sentence_model, _examples())
    claim, reverse = (
        "errors compound over the horizon",
        "errors stay small and isolated over the horizon",
    )
    read = reader.read([claim, claim, claim], [[claim], [reverse], []])
    (stated_entails, stated_contradicts), (reversed_entails, reversed_contradicts), nothing = read
    assert stated_entails > reversed_entails and reversed_contradicts > stated_contradicts, read
    assert nothing == pytest.approx([1 / (1 + np.exp(8))] * 2)  # no sentence: the -8 logit
    path = tmp_path / "pair.safetensors"
    reader.save(path)
    again = pair_reader.load(sentence_model, path)
    assert again is not None
    assert np.allclose(again.read([claim, claim], [[claim], [reverse]]), read[:2], atol=0.02)


def test_no_file_means_no_reader(sentence_model, tmp_path):
    assert pair_reader.load(sentence_model, tmp_path / "missing.safetensors") is None


def test_packed_pairs_read_as_padded_ones(sentence_model):
    """Reading packs pairs end to end in a row; the fit pads them: the logits agree."""
    import torch

    top = pair_reader._top_module(sentence_model[0].auto_model).eval()
    bottom = pair_reader.Bottom(sentence_model)
    texts = [
        "errors compound",
        "the target moves with the network that is being trained",
        "ok",
        "a much longer sentence about how a clipped ratio bounds each update of the policy",
    ]
    states = bottom.states(texts)
    items = [(states[a], states[b]) for a in texts[:2] for b in texts]
    with torch.no_grad():
        padded = top(*pair_reader._padded(items))
        packed = top(*pair_reader._packed(items))
    assert torch.allclose(padded, packed, atol=1e-4), (padded - packed).abs().max()
