"""The offline judge's reading of an answer to a follow-up: one key point, asked about directly.

A follow-up answer is short and about one point, so the whole-answer readings misjudge it both
ways: the rules' "one sentence proves one thing" can hand a right answer to a neighbouring
point, and a wrong answer on the probe's topic shares enough words with the point to look like
partial credit. This reading is a logistic regression (``grader.calibration.train_followups``,
fitted on ``followups.jsonl``; ``followups-heldout.jsonl`` measures it) over the whole-answer
features of the probed point, the strongest misconception signals, the rules' own verdict,
and how much closer the answer is to the labelled answers to the same probe that reached the
point than to those that did not (the tuning set's, embedded once per card on first use). It
says only whether the answer reached the point; the other points keep the rules' verdicts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from grader.base import Judgement, PointJudgement, PointVerdict
from grader.offline.evidence import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    CardIndex,
    OfflineParams,
    analyse,
    decide,
    evidence,
    features,
)
from grader.offline.exemplars import Exemplars
from grader.offline.vectors import embed

if TYPE_CHECKING:
    from cards.schema import Card

FOLLOWUP_MODEL_PATH = Path(__file__).resolve().parents[1] / "followup_model.json"
#: The labelled answers' vectors, stored ahead by ``grader.calibration.train_followups``.
FOLLOWUP_VECTORS_PATH = Path(__file__).resolve().parents[1] / "models" / "followup_exemplars.npz"
#: Misconception features that carry over to one point: the strongest over the card's misconceptions.
MISC_SIGNALS = ("misc_any", "misc_margin", "misc_said", "misc_nearest_negated", "misc_rejected")
RULE_VERDICTS = ("present", "partial", "contradicted")


_EXEMPLARS: dict[str, dict[str, tuple[list[str], np.ndarray, np.ndarray]]] = {}
_EXEMPLARS_LOCK = threading.Lock()


def _answers_key(answers: list) -> str:
    material = json.dumps([(a.id, a.answer) for a in answers], ensure_ascii=False)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


@functools.cache
def _tuning_set() -> tuple:
    """The tuning set, parsed once per process (every card reads its own answers from it)."""
    from grader.calibration.followups import FOLLOWUP_SET, load_followups

    return tuple(load_followups(FOLLOWUP_SET))


def _labelled(card_id: str) -> list:
    return [a for a in _tuning_set() if a.card_id == card_id]


def _stored_vectors(card_id: str, key: str) -> np.ndarray | None:
    try:
        with np.load(FOLLOWUP_VECTORS_PATH, allow_pickle=False) as data:
            if f"{card_id}/key" in data.files and str(data[f"{card_id}/key"]) == key:
                return data[f"{card_id}/vectors"].astype(np.float32)
    except (OSError, ValueError):
        pass
    return None


def probe_exemplars(card_id: str) -> dict[str, tuple[list[str], np.ndarray, np.ndarray]]:
    """Per point of ``card_id``: the tuning set's answers to its probe (their authors, unit
    vectors, whether each reached the point), read from the store when it matches the set,
    else embedded; once per process."""
    with _EXEMPLARS_LOCK:
        found = _EXEMPLARS.get(card_id)
    if found is not None:
        return found
    answers = _labelled(card_id)
    vectors = _stored_vectors(card_id, _answers_key(answers))
    if vectors is None:
        vectors = embed([a.answer for a in answers])
    built = {}
    for point_id in sorted({a.point_id for a in answers}):
        rows = [i for i, a in enumerate(answers) if a.point_id == point_id]
        built[point_id] = (
            [answers[i].author for i in rows],
            vectors[rows],
            np.asarray([answers[i].should_credit for i in rows], dtype=bool),
        )
    with _EXEMPLARS_LOCK:
        _EXEMPLARS[card_id] = built
    return built


def store_vectors(card_ids: list[str], path: Path = FOLLOWUP_VECTORS_PATH) -> None:
    """Embed every card's labelled follow-up answers and write them to ``path``."""
    arrays: dict[str, np.ndarray] = {}
    for card_id in card_ids:
        answers = _labelled(card_id)
        arrays[f"{card_id}/key"] = np.asarray(_answers_key(answers))
        # Half precision: cosines move by about 1e-3, the file is half the size.
        arrays[f"{card_id}/vectors"] = embed([a.answer for a in answers]).astype(np.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def exemplar_margin(card_id: str, point_id: str, answer: str, leave_out: str | None = None) -> float:
    """Nearest labelled answer that reached the point minus nearest that did not (cosine);
    0 when the probe has no labelled answers of both kinds. ``leave_out``: an author whose
    answers to ignore (the answer's own, when fitting: a new learner has none there)."""
    authors, vectors, credited = probe_exemplars(card_id).get(point_id, ([], np.zeros((0, 384)), np.zeros(0, bool)))
    keep = np.asarray([a != leave_out for a in authors], dtype=bool)
    if not (credited & keep).any() or not (~credited & keep).any():
        return 0.0
    sims = vectors @ embed([answer])[0]
    return float(sims[credited & keep].max() - sims[~credited & keep].max())


def feature_names() -> list[str]:
    return [
        *ALL_POINT_FEATURES,
        *(f"max_{name}" for name in MISC_SIGNALS),
        *(f"rules_{name}" for name in RULE_VERDICTS),
        "rules_asserts",
        "exemplar_margin",
    ]


class CardReader(Protocol):
    """What the follow-up reading needs of a judge (``grader.offline.OfflineJudge`` has it)."""

    params: OfflineParams

    def index(self, card: Card) -> CardIndex: ...

    def exemplars(self, card: Card) -> Exemplars: ...


def followup_features(
    judge: CardReader, card: Card, point_id: str, answer: str, leave_out: str | None = None
) -> tuple[np.ndarray, Judgement]:
    """The feature row of ``answer`` read against ``point_id``, and the rules' judgement."""
    index = judge.index(card)
    analysis = analyse(card, index, answer)
    rules = decide(card, index, analysis, judge.params)
    ev = evidence(card, index, analysis, judge.params)
    point_x, misc_x = features(card, index, analysis, judge.params, rules, ev, judge.exemplars(card))
    k = [p.id for p in card.key_points].index(point_id)
    columns = [ALL_MISCONCEPTION_FEATURES.index(name) for name in MISC_SIGNALS]
    misc = misc_x[:, columns].max(axis=0) if len(misc_x) else np.full(len(columns), -1.0)
    verdict = rules.verdict_for(point_id).value
    row = np.concatenate(
        [
            point_x[k],
            misc,
            [float(verdict == name) for name in RULE_VERDICTS],
            [float(any(m.asserted for m in rules.misconceptions))],
            [exemplar_margin(card.id, point_id, answer, leave_out)],
        ]
    )
    return row, rules


class FollowUpModel:
    """Weights, standardisation and the credit cut, applied with numpy."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        names = feature_names()
        self.columns = [names.index(name) for name in data["features"]]
        self.cut = float(data["cut"])

    @classmethod
    def load(cls, path: Path | None = None) -> FollowUpModel | None:
        path = path or Path(os.environ.get("TRAPBOT_FOLLOWUP_MODEL") or FOLLOWUP_MODEL_PATH)
        if not path.exists():
            return None
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def probability(self, rows: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(rows)[:, self.columns]
        z = (rows - np.asarray(self.data["mean"])) / np.asarray(self.data["scale"])
        logits = z @ np.asarray(self.data["coef"]) + float(self.data["intercept"])
        return 1.0 / (1.0 + np.exp(-logits))

    def judgement(self, card: Card, point_id: str, row: np.ndarray, rules: Judgement, quote: str) -> Judgement:
        """The rules' judgement with the probed point's verdict from this model: present when
        it reached the point; otherwise contradicted if the rules read it so, else absent."""
        reached = bool(self.probability(row)[0] >= self.cut)
        before = rules.verdict_for(point_id)
        verdict = (
            PointVerdict.PRESENT
            if reached
            else PointVerdict.CONTRADICTED
            if before is PointVerdict.CONTRADICTED
            else PointVerdict.ABSENT
        )
        points = tuple(
            PointJudgement(p.point_id, verdict, quote if reached else p.quote) if p.point_id == point_id else p
            for p in rules.points
        )
        return replace(rules, points=points)
