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
Inference is numpy; fitting needs torch (``fit``, used by ``grader.calibration.train``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

READER_PATH = Path(__file__).resolve().parents[1] / "models" / "sentence_reader.npz"
RANK = 64
#: Training targets: what share of a point's credit a label gives (``grader.offline.exemplars``'s values).
POINT_TARGET = {"present": 1.0, "partial": 0.7, "absent": 0.0, "contradicted": 0.0}
#: Units beyond this many (a very long answer) are not read by the fit; inference reads all.
MAX_UNITS = 96


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


def _members(part: ReaderPart | PartEnsemble) -> tuple[ReaderPart, ...]:
    return part.members if isinstance(part, PartEnsemble) else (part,)


@dataclass(frozen=True)
class SentenceReader:
    points: ReaderPart | PartEnsemble
    misconceptions: ReaderPart | PartEnsemble

    def save(self, path: Path = READER_PATH) -> None:
        arrays: dict[str, np.ndarray] = {}
        for name, whole in (("points", self.points), ("misconceptions", self.misconceptions)):
            members = _members(whole)
            arrays[f"{name}.members"] = np.asarray(len(members))
            for i, part in enumerate(members):
                keys = sorted(part.target_bias)
                arrays[f"{name}.{i}.w"] = part.w.astype(np.float32)
                arrays[f"{name}.{i}.scalars"] = np.asarray([part.mix, part.scale, part.bias])
                arrays[f"{name}.{i}.keys"] = np.asarray(keys, dtype=str)
                arrays[f"{name}.{i}.offsets"] = np.asarray([part.target_bias[k] for k in keys])
        np.savez_compressed(path, **arrays)

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


# ----- fitting (torch; only grader.calibration.train calls this) ------------------------------


@dataclass(frozen=True)
class Example:
    """One labelled (target, answer) pair: the target's phrasings and the answer's units."""

    key: str  # "card_id/target_id"
    phrasings: np.ndarray  # (n, 384)
    units: np.ndarray  # (m, 384)
    target: float  # 0..1
    same: np.ndarray | None = None  # (m, n): the pairs read (``ReaderPart.probabilities``)


def fit_part(examples: Sequence[Example], *, epochs: int, seed: int = 0, batch: int = 64) -> ReaderPart:
    """Adam on the binary cross-entropy of every example, in padded batches (one thread, so the
    fit is the same on every machine with the same torch)."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    keys = sorted({e.key for e in examples})
    key_index = {k: i for i, k in enumerate(keys)}
    w = torch.nn.Parameter(torch.randn(384, RANK, dtype=torch.float32) * 0.01)
    mix = torch.nn.Parameter(torch.tensor(1.0, dtype=torch.float32))
    scale = torch.nn.Parameter(torch.tensor(10.0, dtype=torch.float32))
    bias = torch.nn.Parameter(torch.tensor(-6.0, dtype=torch.float32))
    offsets = torch.nn.Parameter(torch.zeros(len(keys), dtype=torch.float32))
    optimiser = torch.optim.Adam([w, mix, scale, bias, offsets], lr=3e-3)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(examples))
        for start in range(0, len(order), batch):
            chosen = [examples[i] for i in order[start : start + batch]]
            p, p_mask = _padded([e.phrasings for e in chosen])
            u, u_mask = _padded([e.units[:MAX_UNITS] for e in chosen])
            read = u_mask[:, :, None] & p_mask[:, None, :] & _same(chosen, u.shape[1], p.shape[1])
            sims = mix * torch.einsum("bud,bpd->bup", u, p) + torch.einsum(
                "bur,bpr->bup", u @ w, p @ w
            )
            best = sims.masked_fill(~read, -1e9).flatten(1).max(dim=1).values
            # Nothing read reads as similarity 0 (as ``probabilities`` does).
            best = torch.where(read.flatten(1).any(dim=1), best, torch.zeros_like(best))
            logits = scale * best + bias + offsets[[key_index[e.key] for e in chosen]]
            target = torch.tensor([e.target for e in chosen], dtype=torch.float32)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    return ReaderPart(
        w.detach().numpy().copy(),
        float(mix.detach()),
        float(scale.detach()),
        float(bias.detach()),
        {k: float(v) for k, v in zip(keys, offsets.detach().numpy(), strict=True)},
    )


def _padded(arrays: Sequence[np.ndarray]):  # -> (torch.Tensor, torch.Tensor)
    import torch

    width = max(1, max(len(a) for a in arrays))
    out = torch.zeros(len(arrays), width, 384, dtype=torch.float32)
    mask = torch.zeros(len(arrays), width, dtype=torch.bool)
    for i, a in enumerate(arrays):
        if len(a):
            out[i, : len(a)] = torch.from_numpy(np.asarray(a, dtype=np.float32))
            mask[i, : len(a)] = True
    return out, mask


def _same(chosen: Sequence[Example], units: int, phrasings: int):  # -> torch.Tensor
    import torch

    out = torch.ones(len(chosen), units, phrasings, dtype=torch.bool)
    for i, e in enumerate(chosen):
        if e.same is not None:
            same = torch.from_numpy(np.asarray(e.same[:MAX_UNITS], dtype=bool))
            out[i, : same.shape[0], : same.shape[1]] = same
    return out
