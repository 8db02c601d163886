"""The pair reader: does this sentence of the answer state a key point, or say its reverse?

The judge's other readers compare pooled sentence vectors, and a pooled vector puts a claim
and its reverse side by side ("errors compound" and "errors stay isolated" differ in two
words): the point's ``opposites`` separate a contradicted point from a present one with AUC
0.66 on the fitting answers. This reader lets the point and the sentence attend to each other.

Late fusion, so that it costs little beside the embedding pass: the point's label and the
sentence each go alone through the bottom ``FROZEN_LAYERS`` layers of the judge's
all-MiniLM-L6-v2 (unchanged; the labels' states are kept per card), their token states are
joined, each token marked by which text it came from, and the top layers (a copy of the
model's own top layers, fine-tuned) read the pair:

    h = [bottom(label) ; bottom(sentence)[1:]] + side     (the sentence's [CLS] dropped)
    P(entails), P(contradicts) = sigmoid(W mean(top(h)) + b)

For point k the reader reads the ``SENTENCES_PER_POINT`` sentences most similar to the point
or to its opposites (the judge's cosines) and keeps the highest probability of each head:
trained as multiple-instance learning, the label (present 1, partial 0.7; contradicted) is
the answer's, the score its best sentence's (Ilse, Tomczak & Welling, 2018).

Measured, not yet read by the judge (``grader.calibration.pair_probe`` repeats the measure):
cross-fitted by the sentence reader's five folds of writers on the 2,006 fitting answers, it
separates contradicted from present points with AUC 0.875 (the opposites' ``against_margin``:
0.66). As two more point features, the leave-one-card-out score of the tree reading rose
from 1.812 (the shipped reading's) to 1.819, the logistic one's from 1.755 to 1.761, and the
trees' cuts used the contradicted class for the first time; but per answer the signal is weak
(P >= 0.7 on some point in 20% of the partly wrong answers and in 6% of the passing ones),
and it is dear: on 169 answers, one thread, reading every point took a median 62.6 ms beside
42.2 ms for the whole judge as shipped; reading only the points the sentence reader credits
(P >= 0.3), with the sentences' bottom states kept from the embedding pass, still 27.0 ms,
past the judge's 50 ms budget.

One trainable layer on top (``FROZEN_LAYERS = 5``; ``pair_probe --frozen-layers 5``) was
tried to make it cheap, and not kept: pooled AUC fell to 0.829 (present against absent
0.815); per answer, some point reads P(contradicts) >= 0.5 in 35% of the partly wrong answers
and in 15% of the passing ones. As the same two point features, read on every point, it
lifted the leave-one-card-out score of the shipped trees from 1.825 to 1.834 and the
partly wrong answers graded below the pass mark from 48% to 54% (missing-core 68% to 72%),
on the same fitting rows; and it cost a median 134 ms per answer beside 87 ms for the whole
judge as shipped (AVX2 only, float32; on the calibration answers, reading the label's states
kept, each answer's sentences through the five frozen layers and every point's pairs through
the sixth). Where the offline judge stands on those answers: ``grader.calibration.frontier``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PAIR_READER_PATH = Path(__file__).resolve().parent / "models" / "pair_reader.safetensors"
#: The layers every text goes through alone; the rest read the pair.
FROZEN_LAYERS = 4
SENTENCES_PER_POINT = 2
MAX_TOKENS = 96
#: Training targets of the two heads, by the point's label.
ENTAILS = {"present": 1.0, "partial": 0.7, "absent": 0.0, "contradicted": 0.0}
#: Fitting: the share of absent points kept per epoch (most of the 11k pairs; they teach the
#: entailment head little the present and partial ones do not), the contradiction head's
#: positive weight (650 contradicted points of 11k), epochs and learning rate.
ABSENT_KEEP = 0.34
CONTRADICTION_WEIGHT = 3.0
EPOCHS = 2
LEARNING_RATE = 1e-4


def sentence_rows(units: Sequence[Any]) -> list[int]:
    """The rows of ``units`` (``grader.offline.Unit``) that are whole sentences: a sentence of
    several clauses is a unit of its own; a sentence of one clause is that clause."""
    whole = [u.span for u in units if not u.is_clause]
    return [
        row
        for row, u in enumerate(units)
        if not u.is_clause
        or not any(s.start <= u.span.start and u.span.end <= s.end for s in whole)
    ]


def chosen_sentences(analysis: Any, index: Any, n_points: int) -> list[list[str]]:
    """Per key point, the texts of the sentences the reader reads: the nearest to any of the
    point's phrasings or opposites, best first."""
    rows = sentence_rows(analysis.units)
    if not rows:
        return [[] for _ in range(n_points)]
    chosen = []
    for k in range(n_points):
        sims = np.concatenate(
            [
                analysis.point_sims[rows][:, index.points.target == k],
                analysis.opposite_sims[rows][:, index.opposites.target == k],
            ],
            axis=1,
        )
        best = sims.max(axis=1) if sims.shape[1] else np.zeros(len(rows))
        order = np.argsort(-best, kind="stable")[:SENTENCES_PER_POINT]
        chosen.append([analysis.units[rows[i]].span.text for i in order])
    return chosen


def _mask(mask: Any) -> Any:
    """A boolean mask (True: may attend) as the additive one BERT's layers take."""
    import torch

    return torch.where(mask, 0.0, torch.finfo(torch.float32).min)


def _top_module(bert: Any) -> Any:
    import torch

    class Top(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(copy.deepcopy(bert.encoder.layer[FROZEN_LAYERS:]))
            self.side = torch.nn.Parameter(torch.zeros(2, bert.config.hidden_size))
            self.head = torch.nn.Linear(bert.config.hidden_size, 2)

        def forward(self, h: Any, side: Any, attend: Any, owner: Any) -> Any:
            """(pairs, 2) logits. ``h``: (rows, tokens, d) joined states; ``side``: which text
            each token is from; ``attend``: the additive attention mask; ``owner``: the pair
            each token belongs to (-1: padding); a pair's vector is the mean of its tokens'."""
            h = h + self.side[side]
            for layer in self.layers:
                h = layer(h, attend)
            flat, real = owner.reshape(-1), owner.reshape(-1) >= 0
            pairs = int(flat.max()) + 1
            sums = torch.zeros(pairs, h.shape[-1]).index_add(
                0, flat[real], h.reshape(-1, h.shape[-1])[real]
            )
            counts = torch.zeros(pairs, 1).index_add(0, flat[real], torch.ones(int(real.sum()), 1))
            return self.head(sums / counts)

    return Top()


class Bottom:
    """The frozen bottom of the judge's model: a text's token states after ``FROZEN_LAYERS``."""

    def __init__(self, sentence_model: Any):
        self.tokenizer = sentence_model.tokenizer
        self.bert = sentence_model[0].auto_model
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def states(self, texts: Sequence[str], *, keep: bool = False) -> dict[str, Any]:
        """Each distinct text's (tokens, hidden) states; ``keep`` remembers them (card labels)."""
        import torch

        with self._lock:
            out = {t: self._cache[t] for t in texts if t in self._cache}
        todo = sorted({t for t in texts if t not in out})
        with torch.no_grad():
            for start in range(0, len(todo), 64):
                chunk = todo[start : start + 64]
                enc = self.tokenizer(
                    chunk, truncation=True, max_length=MAX_TOKENS, padding=True, return_tensors="pt"
                )
                mask = enc["attention_mask"].bool()
                h = self.bert.embeddings(
                    input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"]
                )
                additive = _mask(mask[:, None, None, :])
                for layer in self.bert.encoder.layer[:FROZEN_LAYERS]:
                    h = layer(h, additive)
                for i, text in enumerate(chunk):
                    out[text] = h[i, : int(mask[i].sum())].clone()
        if keep:
            with self._lock:
                self._cache.update({t: out[t] for t in todo})
        return out


def _padded(items: Sequence[tuple[Any, Any]]) -> tuple[Any, Any, Any, Any]:
    """One (label ; sentence) pair per row, padded to the longest (the fit's batches)."""
    import torch

    joined = [torch.cat([a, b[1:]]) for a, b in items]  # the sentence's [CLS] dropped
    width = max(len(j) for j in joined)
    x = torch.zeros(len(items), width, joined[0].shape[1])
    side = torch.zeros(len(items), width, dtype=torch.long)
    owner = torch.full((len(items), width), -1, dtype=torch.long)
    for i, ((a, _), j) in enumerate(zip(items, joined, strict=True)):
        x[i, : len(j)] = j.float()
        side[i, len(a) : len(j)] = 1
        owner[i, : len(j)] = i
    return x, side, _mask((owner >= 0)[:, None, None, :]), owner


def _packed(items: Sequence[tuple[Any, Any]]) -> tuple[Any, Any, Any, Any]:
    """The pairs end to end in rows (``grader.offline.pack_rows``), each attending only to its
    own tokens (padding to padding), as ``grader.offline.embed`` packs clauses: the same
    logits as ``_padded`` without multiplying the padding (a third of the tokens there)."""
    import torch

    from grader.offline import pack_rows

    joined = [torch.cat([a, b[1:]]) for a, b in items]
    rows = pack_rows([len(j) for j in joined])
    width = max(sum(len(joined[i]) for i in row) for row in rows)
    x = torch.zeros(len(rows), width, joined[0].shape[1])
    side = torch.zeros(len(rows), width, dtype=torch.long)
    owner = torch.full((len(rows), width), -1, dtype=torch.long)
    for r, row in enumerate(rows):
        offset = 0
        for i in row:
            a, j = items[i][0], joined[i]
            x[r, offset : offset + len(j)] = j.float()
            side[r, offset + len(a) : offset + len(j)] = 1
            owner[r, offset : offset + len(j)] = i
            offset += len(j)
    return x, side, _mask((owner[:, :, None] == owner[:, None, :])[:, None]), owner


def _best(top: Any, examples: Sequence[tuple[Any, Sequence[Any]]], layout: Any = _padded) -> Any:
    """(examples, 2) logits, each the highest over its sentences (-8, P ~ 0, when it has none)."""
    import torch

    items = [(label, sentence) for label, sentences in examples for sentence in sentences]
    owner = torch.tensor(
        [k for k, (_, sentences) in enumerate(examples) for _ in sentences], dtype=torch.long
    )
    best = torch.full((len(examples), 2), -1e9)
    if items:
        best = best.scatter_reduce(
            0, owner[:, None].expand(-1, 2), top(*layout(items)), reduce="amax"
        )
    return torch.where(best < -1e8, torch.full_like(best, -8.0), best)


@dataclass
class PairReader:
    bottom: Bottom
    top: Any

    def read(self, labels: Sequence[str], chosen: Sequence[Sequence[str]]) -> np.ndarray:
        """(points, 2): P(some chosen sentence states the point), P(... says its reverse)."""
        import torch

        if not labels:
            return np.zeros((0, 2))
        label_states = self.bottom.states(labels, keep=True)
        sentence_states = self.bottom.states([s for group in chosen for s in group])
        examples = [
            (label_states[label], [sentence_states[s] for s in group])
            for label, group in zip(labels, chosen, strict=True)
        ]
        with torch.no_grad():
            return torch.sigmoid(_best(self.top, examples, _packed)).numpy().astype(float)

    def save(self, path: Path = PAIR_READER_PATH) -> None:
        """The fine-tuned top, in half precision (7 MB; the outputs move by < 1e-3)."""
        import torch
        from safetensors.torch import save_file

        save_file(
            {
                k: v.detach().to(torch.float16).contiguous()
                for k, v in self.top.state_dict().items()
            },
            str(path),
        )


def load(sentence_model: Any, path: Path = PAIR_READER_PATH) -> PairReader | None:
    """The shipped reader on top of the judge's model; None when none is shipped."""
    if not path.exists():
        return None
    from safetensors.torch import load_file

    top = _top_module(sentence_model[0].auto_model)
    weights = load_file(str(path))
    state = top.state_dict()
    top.load_state_dict({k: weights[k].to(state[k].dtype) for k in state})
    top.eval()
    return PairReader(Bottom(sentence_model), top)


@dataclass(frozen=True)
class PairExample:
    """One labelled (point, answer) pair as the fit reads it."""

    label: str  # the point's label text
    sentences: tuple[str, ...]
    verdict: str  # present, partial, absent or contradicted


def fit(
    sentence_model: Any, examples: Sequence[PairExample], *, seed: int = 0, progress: Any = None
) -> PairReader:
    """AdamW on both heads' binary cross-entropy (two threads; every text's bottom states are
    computed once, the bottom stays frozen)."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    bottom = Bottom(sentence_model)
    states = bottom.states([e.label for e in examples] + [s for e in examples for s in e.sentences])
    top = _top_module(bottom.bert)
    top.train()
    optimiser = torch.optim.AdamW(top.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    entails = torch.tensor([ENTAILS[e.verdict] for e in examples])
    contradicts = torch.tensor([float(e.verdict == "contradicted") for e in examples])
    for epoch in range(EPOCHS):
        kept = [
            i for i, e in enumerate(examples) if e.verdict != "absent" or rng.random() < ABSENT_KEEP
        ]
        order = rng.permutation(np.asarray(kept))
        for start in range(0, len(order), 32):
            batch = order[start : start + 32]
            logits = _best(
                top,
                [
                    (states[examples[i].label], [states[s] for s in examples[i].sentences])
                    for i in batch
                ],
            )
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits[:, 0], entails[batch]
            ) + torch.nn.functional.binary_cross_entropy_with_logits(
                logits[:, 1], contradicts[batch], pos_weight=torch.tensor(CONTRADICTION_WEIGHT)
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        if progress:
            progress(f"pair reader epoch {epoch + 1}/{EPOCHS}")
    top.eval()
    return PairReader(bottom, top)
