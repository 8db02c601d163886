"""Fitting the sentence reader (``grader.offline.reader``) with torch: only
``grader.calibration.train`` calls this; the judge reads the saved parameters with numpy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader.offline.reader import RANK, READER_PATH, PartEnsemble, ReaderPart, SentenceReader

#: Training targets: what share of a point's credit a label gives.
POINT_TARGET = {"present": 1.0, "partial": 0.7, "absent": 0.0, "contradicted": 0.0}
#: Units beyond this many (a very long answer) are not read by the fit; inference reads all.
MAX_UNITS = 96


def save(reader: SentenceReader, path: Path = READER_PATH) -> None:
    """Write ``reader`` where ``SentenceReader.load`` reads it."""
    arrays: dict[str, np.ndarray] = {}
    for name, whole in (("points", reader.points), ("misconceptions", reader.misconceptions)):
        members = whole.members if isinstance(whole, PartEnsemble) else (whole,)
        arrays[f"{name}.members"] = np.asarray(len(members))
        for i, part in enumerate(members):
            keys = sorted(part.target_bias)
            arrays[f"{name}.{i}.w"] = part.w.astype(np.float32)
            arrays[f"{name}.{i}.scalars"] = np.asarray([part.mix, part.scale, part.bias])
            arrays[f"{name}.{i}.keys"] = np.asarray(keys, dtype=str)
            arrays[f"{name}.{i}.offsets"] = np.asarray([part.target_bias[k] for k in keys])
    np.savez_compressed(path, **arrays)


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
