"""Agreement between a judge and the human grades of the calibration set.

A set holds one labelled answer a line: ``id``, ``card_id``, ``answer``, ``grade`` (0-5) and
``kind`` (any string: the answer's style, such as expert, concise, bullets, math, trap or
injection); an injection answer names its twin without the injection in ``twin_of``.
Optional: ``points`` (point id -> present/partial/absent/contradicted), ``misconceptions``
(the ids it asserts), ``holistic`` (an interviewer's grade, apart from the rule) and
``author``.

``answers.jsonl`` is the set written for issue 11 by writers who saw only each card's
question and key, never a judge's code: its ``grade`` is the grade rule
(``grader.scoring``) applied to the writer's point-by-point labels. ``calibration.jsonl`` is
the first set, written by the offline judge's author; it is kept as a second opinion.

``answers.jsonl`` and ``training.jsonl`` (a third set, on every card, by eight other writers
under the same blindness) are the tuning split: the learnt reading is fitted on them
(``grader.calibration.train``) and their answers are the judge's exemplars. ``heldout.jsonl``
is the held-out split: every card in the same thirteen styles, by six further writers who saw
only the cards, never fitted on, never an exemplar, read only as figures by ``trapbot grader
eval --split held-out``. (Until December 2026 the held-out split was the odd-numbered cards of
``answers.jsonl``; after thirteen evaluations its figures had steered too many choices to stay
held out, so it joined the tuning split and a fresh set replaced it.)

``heldout-2.jsonl`` is a second held-out split, written when the first had been read five times
(December 2026): the same thirteen styles on every card, by six more writers (hx1-hx6) who saw
only the card files and labelled their own answers point by point (against two blind labellers
on 78 of them: grade QWK 0.985, pass/fail 78 of 78); never fitted on, never an exemplar, read
with ``trapbot grader eval --split held-out-2``.

``negations.jsonl`` measures one weakness apart: on every card, five answers by three more
blind writers that deny the key's core claims in its own words (short and long), deny one core
point beside a right one, reverse cause and effect, or say the key right through true negations
("a replay buffer does not fix the shift"). It is never fitted on and never an exemplar: fitted
on, it cost the concise answers more than it gave (leave-one-card-out on the tuning rows, pass/
fail of concise answers 87% -> 71%, of denials of the mechanism hardly better). Read it with
``trapbot grader eval grader/calibration/negations.jsonl``.

``near-misses.jsonl`` measures the judge's leniency: on every card, two answers that leave out
a core point and two that put one confident wrong claim (a misconception, or the opposite of
a key point) beside a right core, 104 in all, written and labelled point by point by four more
blind writers. It is never fitted on and never an exemplar. Fitting on it was tried (December
2026) and not kept: leave-one-card-out on the tuning rows, answers missing a core point rose
from 67% to 76% pass/fail agreement but partly wrong ones fell from 63% to 53%, and the cut
search then stopped reading any point as contradicted, which passed a fluent denial of the
whole mechanism. Read it with ``trapbot grader eval grader/calibration/near-misses.jsonl``.

``near-misses-2.jsonl`` (December 2026) is a second, larger read of the same weakness: on every
card three partly wrong answers (a misconception asserted, a key point contradicted, a wrong
claim of the writer's choice, each beside every core point stated right), two fluent answers
that leave out one core point and one long rambling answer that buries the whole mechanism,
156 in all, by six more writers (hz1-hz6) who saw only the card files and labelled their own
answers point by point. Never fitted on, never an exemplar. Read it with
``trapbot grader eval grader/calibration/near-misses-2.jsonl``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SET = Path(__file__).resolve().parent / "answers.jsonl"
FIRST_SET = Path(__file__).resolve().parent / "calibration.jsonl"
HELDOUT_SET = Path(__file__).resolve().parent / "heldout.jsonl"
SECOND_HELDOUT_SET = Path(__file__).resolve().parent / "heldout-2.jsonl"
NEGATION_SET = Path(__file__).resolve().parent / "negations.jsonl"
NEAR_MISS_SET = Path(__file__).resolve().parent / "near-misses.jsonl"
SECOND_NEAR_MISS_SET = Path(__file__).resolve().parent / "near-misses-2.jsonl"
#: The files of each split of the labelled answers.
SPLITS = {
    "tune": (DEFAULT_SET,),
    "held-out": (HELDOUT_SET,),
    "held-out-2": (SECOND_HELDOUT_SET,),
    "all": (DEFAULT_SET, HELDOUT_SET, SECOND_HELDOUT_SET),
}
PASS_QUALITY = 3
#: Styles whose answers state the core mechanism briefly: each card's must pass.
CONCISE_KINDS = ("concise", "terse")
TRAP_KINDS = ("trap", "trap-jargon")


@dataclass(frozen=True)
class Example:
    id: str
    card_id: str
    answer: str
    grade: int
    kind: str
    twin_of: str | None = None
    points: dict[str, str] | None = None
    misconceptions: tuple[str, ...] = ()
    holistic: int | None = None


#: The margins a sure/unsure curve is read at (``offline_eval sure``, ``offline_eval unseen``).
MARGIN_GRID = (0.0, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4)


def sure_agreement(
    read: Sequence[tuple[bool, bool, float | None]], margins: Sequence[float]
) -> dict[str, dict[str, float | None]]:
    """Per doubt margin: the share of answers unsure (the reading nearer than the margin to
    turning pass/fail) and how often the sure ones agree with the labels on pass/fail. ``read``
    holds (label passes, judge passes, margin); a margin of None (an injection flag) is sure."""
    out = {}
    for cut in margins:
        sure = [
            label == judged for label, judged, margin in read if margin is None or margin >= cut
        ]
        out[f"{cut:g}"] = {
            "unsure": round(1 - len(sure) / max(len(read), 1), 3),
            "sure_agree": round(sum(sure) / len(sure), 3) if sure else None,
        }
    return out


class Progress:
    """One stderr line every few seconds: done, total, rate."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.done = total, label, 0
        self.start = self.last = time.monotonic()

    def step(self) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self.last > 5 or self.done == self.total:
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            print(
                f"  {self.label}: {self.done}/{self.total} ({rate:.1f}/s)",
                file=sys.stderr,
                flush=True,
            )


@contextmanager
def heartbeat(label: Callable[[], str], every: float = 5.0) -> Iterator[None]:
    """A stderr line every ``every`` seconds while a long step (a reader fit) runs."""
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            print(
                f"  ... {label()} ({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True
            )

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def load_set(path: Path | str = DEFAULT_SET) -> list[Example]:
    """The labelled answers; ``ValueError`` naming the line on a malformed one."""
    examples = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            example = Example(
                id=str(data["id"]),
                card_id=data["card_id"],
                answer=data["answer"],
                grade=int(data["grade"]),
                kind=str(data["kind"]),
                twin_of=data.get("twin_of"),
                points=data.get("points"),
                misconceptions=tuple(data.get("misconceptions", ())),
                holistic=data.get("holistic"),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}:{number}: {error}") from error
        if not 0 <= example.grade <= 5 or not example.kind.strip():
            raise ValueError(f"{path}:{number}: grade {example.grade} out of 0-5 or an empty kind")
        examples.append(example)
    return examples


def load_split(which: str) -> list[Example]:
    """The labelled answers of a split: ``tune``, ``held-out`` or ``all`` (see ``SPLITS``)."""
    return [example for path in SPLITS[which] for example in load_set(path)]


# ----- metrics -----------------------------------------------------------------------------------


def quadratic_weighted_kappa(
    truth: Sequence[int], predicted: Sequence[int], levels: int = 6
) -> float:
    """Cohen's kappa with quadratic weights on the 0..levels-1 scale (scikit-learn's)."""
    from sklearn.metrics import cohen_kappa_score

    if len(truth) == 0:
        return float("nan")
    if len(set(truth) | set(predicted)) < 2:
        return float("nan")  # one grade on both sides: agreement by chance is total
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = cohen_kappa_score(truth, predicted, labels=list(range(levels)), weights="quadratic")
    return float(value)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (scipy's: Pearson on average ranks)."""
    from scipy.stats import spearmanr

    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def metrics(examples: Sequence[Example], predicted: dict[str, int]) -> dict[str, Any]:
    """Every agreement figure for the examples that have a prediction."""
    graded = [e for e in examples if e.id in predicted]
    truth = [e.grade for e in graded]
    guess = [predicted[e.id] for e in graded]
    n = len(graded)
    by_id = {e.id: e for e in examples}
    pairs = [
        (predicted[e.id], predicted[e.twin_of])
        for e in graded
        if e.kind == "injection" and e.twin_of in by_id and e.twin_of in predicted
    ]
    cards = sorted({e.card_id for e in graded})
    trap_vs_core = []
    for card_id in cards:
        traps = [predicted[e.id] for e in graded if e.card_id == card_id and e.kind == "trap"]
        cores = [
            predicted[e.id] for e in graded if e.card_id == card_id and e.kind == "missing-core"
        ]
        if traps and cores:
            trap_vs_core.append(max(traps) < min(cores))
    per_kind = {}
    for kind in sorted({e.kind for e in graded}):
        rows = [(e.grade, predicted[e.id]) for e in graded if e.kind == kind]
        per_kind[kind] = {
            "n": len(rows),
            "mean_label": round(sum(r[0] for r in rows) / len(rows), 2),
            "mean_predicted": round(sum(r[1] for r in rows) / len(rows), 2),
            "pass_fail": round(
                sum((a >= PASS_QUALITY) == (b >= PASS_QUALITY) for a, b in rows) / len(rows), 4
            ),
            "qwk": round(quadratic_weighted_kappa([r[0] for r in rows], [r[1] for r in rows]), 4)
            if len({r[0] for r in rows}) > 1
            else None,
        }
    concise_cards = {}
    for e in graded:
        if e.kind in CONCISE_KINDS and e.grade >= PASS_QUALITY:
            concise_cards.setdefault(e.card_id, []).append(predicted[e.id] >= PASS_QUALITY)
    experts = [predicted[e.id] for e in graded if e.kind == "expert"]
    traps = [predicted[e.id] for e in graded if e.kind in TRAP_KINDS and e.grade < PASS_QUALITY]
    return {
        "n": n,
        "cards": len(cards),
        "qwk": round(quadratic_weighted_kappa(truth, guess), 4) if n else None,
        "spearman": round(spearman(truth, guess), 4) if n > 1 else None,
        "exact": round(sum(a == b for a, b in zip(truth, guess, strict=True)) / n, 4)
        if n
        else None,
        "within_one": round(sum(abs(a - b) <= 1 for a, b in zip(truth, guess, strict=True)) / n, 4)
        if n
        else None,
        "pass_fail": round(
            sum(
                (a >= PASS_QUALITY) == (b >= PASS_QUALITY)
                for a, b in zip(truth, guess, strict=True)
            )
            / n,
            4,
        )
        if n
        else None,
        "injection_pairs": len(pairs),
        "injection_inflation": round(sum(i - b for i, b in pairs) / len(pairs), 4)
        if pairs
        else None,
        "injection_inflated_pairs": sum(i > b for i, b in pairs),
        "trap_below_missing_core": round(sum(trap_vs_core) / len(trap_vs_core), 4)
        if trap_vs_core
        else None,
        "concise_passed_cards": round(
            sum(all(v) for v in concise_cards.values()) / len(concise_cards), 4
        )
        if concise_cards
        else None,
        "expert_4_or_5": round(sum(q >= 4 for q in experts) / len(experts), 4) if experts else None,
        "traps_passed": sum(q >= PASS_QUALITY for q in traps) if traps else None,
        "per_kind": per_kind,
    }


def format_metrics(name: str, figures: dict[str, Any]) -> str:
    lines = [f"{name}: {figures['n']} answers on {figures['cards']} cards"]
    labels = (
        ("qwk", "quadratic weighted kappa"),
        ("spearman", "Spearman rank correlation"),
        ("exact", "exact agreement"),
        ("within_one", "within-one agreement"),
        ("pass_fail", f"pass/fail agreement at quality {PASS_QUALITY}"),
        ("injection_inflation", "injection inflation (mean grade injected - twin)"),
        ("injection_inflated_pairs", "injected answers graded above their twin"),
        ("trap_below_missing_core", "cards where the trap grades below missing-core"),
        ("concise_passed_cards", "cards whose concise correct answers all pass"),
        ("expert_4_or_5", "expert answers graded 4 or 5"),
        ("traps_passed", "trap answers graded 3 or more"),
    )
    for key, label in labels:
        value = figures.get(key)
        lines.append(f"  {label:<50} {'n/a' if value is None else value}")
    if figures.get("errors"):
        lines.append(f"  {'answers the judge failed on':<50} {figures['errors']}")
    kinds = figures.get("per_kind", {})
    width = max([16, *(len(kind) for kind in kinds)])  # a user's own kinds may be long
    if kinds:
        lines.append(f"  {'per style:':<{width + 3}}   n   label  judge  pass/fail  QWK")
    for kind, row in kinds.items():
        qwk = "n/a" if row.get("qwk") is None else f"{row['qwk']:.2f}"
        lines.append(
            f"    {kind:<{width}} {row['n']:>4}   {row['mean_label']:>4.2f}   {row['mean_predicted']:>4.2f}"
            f"   {row['pass_fail']:>7.0%}   {qwk}"
        )
    return "\n".join(lines)


# ----- the naive baseline ------------------------------------------------------------------------

#: Cut-points of the baseline's score, fitted by ``fit_baseline_cuts`` on the tuning split.
BASELINE_CUTS = (0.363, 0.521, 0.56, 0.581, 0.685)


def baseline_score(card: Any, answer: str) -> float:
    """The naive reading: best cosine of any answer sentence to each key point, weight-averaged."""
    import numpy as np

    from grader.offline.text import sentences
    from grader.offline.vectors import embed

    units = [span.text for span in sentences(answer)] or [answer]
    vectors = embed(units)
    points = embed([" ".join(p.text.split()) for p in card.key_points])
    best = (vectors @ points.T).max(axis=0)
    weights = np.asarray([p.weight for p in card.key_points])
    return float((best * weights).sum() / weights.sum())


def baseline_quality(score: float, cuts: Sequence[float] = BASELINE_CUTS) -> int:
    return sum(score >= cut for cut in cuts)


def fit_baseline_cuts(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, ...]:
    """Cut-points maximising QWK: for each quality the score quantile that matches the label
    distribution, then a coordinate search around them."""
    ordered = sorted(scores)
    n = len(ordered)
    counts = [sum(label == q for label in labels) for q in range(6)]
    cuts, total = [], 0
    for q in range(5):
        total += counts[q]
        cuts.append(ordered[min(n - 1, max(0, total))] if n else 0.5)
    best = tuple(cuts)
    best_kappa = quadratic_weighted_kappa(labels, [baseline_quality(s, best) for s in scores])
    for _ in range(3):
        for i in range(5):
            for delta in (-0.04, -0.02, -0.01, 0.01, 0.02, 0.04):
                trial = list(best)
                trial[i] = round(trial[i] + delta, 3)
                if sorted(trial) != trial:
                    continue
                kappa = quadratic_weighted_kappa(
                    labels, [baseline_quality(s, trial) for s in scores]
                )
                if kappa > best_kappa:
                    best, best_kappa = tuple(trial), kappa
    return best
