"""The sentence reader: does one sentence of the answer state this key point (or misconception)?

The learnt reading's other features credit a point from the answer as a whole: the exemplar
votes ask what the nearest labelled answers got, and a long answer that covers the rest of the
key sits near complete answers even when it leaves one core point out. This reader asks of
each point separately whether some sentence of the answer states it, and is trained to say so
on the labelled answers of the deck (multiple-instance learning: a label belongs to the whole
answer, the reader's score to its best sentence).

For a target t (a key point or a misconception) with phrasings p (``CardIndex``) and the
answer's units u (sentences and clauses, already embedded by the judge, unit length):

    s(u, p) = a * (u . p) + (u W) . (p W)          W: 384 x RANK, shared by the whole deck
    P(t stated) = sigmoid(c * max_{u, p} s(u, p) + b + b_t)

The cosine term starts the reader where the plain similarity is; W learns which directions
tell one point of a card from its neighbours; b_t is the target's own offset (zero for a card
or point the reader was not trained on). Points and misconceptions have a parameter set each;
the points' reading is the mean of two sets fitted from different seeds (``PartEnsemble``), and
its fit reads the core point a missing-core answer leaves out three times, as the hardest
negative (``grader.calibration.train.HARD_ABSENT_REPEAT``).
Inference is numpy; ``grader.calibration.reader_fit`` fits it with torch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

READER_PATH = Path(__file__).resolve().parents[1] / "models" / "sentence_reader.npz"
RANK = 64


@dataclass(frozen=True)
class ReaderPart:
    """One parameter set: for key points or for misconceptions."""

    w: np.ndarray  # (384, RANK)
    mix: float
    scale: float
    bias: float
    target_bias: dict[str, float]  # "card_id/target_id" -> offset

    def probabilities(
        self,
        card_id: str,
        target_ids: Sequence[str],
        phrasings: np.ndarray,
        owner: np.ndarray,
        units: np.ndarray,
        same: np.ndarray | None = None,
    ) -> np.ndarray:
        """P(stated) per target, from the ``units``' vectors (rows) and the card's ``phrasings``
        (rows, each belonging to the target ``owner`` names). ``same`` (units, phrasings): the
        pairs whose shared words are negated on the same side; only those are read, so "the
        TD target does not read the value network" does not state that it does."""
        offsets = np.asarray([self.target_bias.get(f"{card_id}/{t}", 0.0) for t in target_ids])
        best = np.zeros(len(target_ids))  # nothing read: similarity 0
        if len(units):
            sims = self.mix * (units @ phrasings.T) + (units @ self.w) @ (phrasings @ self.w).T
            allowed = np.ones(sims.shape, dtype=bool) if same is None else same
            for k in range(len(target_ids)):
                mask = allowed[:, owner == k]
                if mask.any():
                    best[k] = sims[:, owner == k][mask].max()
        return 1.0 / (1.0 + np.exp(-(self.scale * best + self.bias + offsets)))


@dataclass(frozen=True)
class PartEnsemble:
    """Parameter sets fitted alike from different seeds; P(stated) is their mean. Leave-one-card-out
    (logistic, C 0.3) with the readers of seeds 0 and 1 alone: 1.7551 and 1.7589, their mean
    1.7639; with the hard negatives 1.7718 and 1.7637, their mean 1.7726. The mean is never
    worse than the better seed and removes a seed's luck; it costs a second (units x RANK) product."""

    members: tuple[ReaderPart, ...]

    @property
    def target_bias(self) -> dict[str, float]:
        return self.members[0].target_bias

    def probabilities(
        self,
        card_id: str,
        target_ids: Sequence[str],
        phrasings: np.ndarray,
        owner: np.ndarray,
        units: np.ndarray,
        same: np.ndarray | None = None,
    ) -> np.ndarray:
        """The members' mean (``ReaderPart.probabilities``)."""
        return np.mean([m.probabilities(card_id, target_ids, phrasings, owner, units, same) for m in self.members], axis=0)


@dataclass(frozen=True)
class SentenceReader:
    points: ReaderPart | PartEnsemble
    misconceptions: ReaderPart | PartEnsemble


    @classmethod
    def load(cls, path: Path = READER_PATH) -> SentenceReader | None:
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as data:

            def member(prefix: str) -> ReaderPart:
                mix, scale, bias = (float(v) for v in data[f"{prefix}.scalars"])
                offsets = dict(zip(data[f"{prefix}.keys"].tolist(), data[f"{prefix}.offsets"].tolist(), strict=True))
                return ReaderPart(data[f"{prefix}.w"].astype(np.float64), mix, scale, bias, offsets)

            def part(name: str) -> ReaderPart | PartEnsemble:
                members = tuple(member(f"{name}.{i}") for i in range(int(data[f"{name}.members"])))
                return members[0] if len(members) == 1 else PartEnsemble(members)

            return cls(part("points"), part("misconceptions"))


_LOCK = threading.Lock()
_SHIPPED: dict[Path, SentenceReader | None] = {}


def shipped_reader(path: Path = READER_PATH) -> SentenceReader | None:
    """The reader shipped with the package, read once per process; None when there is none."""
    with _LOCK:
        if path not in _SHIPPED:
            _SHIPPED[path] = SentenceReader.load(path)
        return _SHIPPED[path]
