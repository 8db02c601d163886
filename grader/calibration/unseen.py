"""The offline judge on cards it never saw: how it grades a user's own card (issue 41, item 3).

A card in a user's deck has no labelled answers. The judge then reads it with what it learnt
on other cards only: the plain point model (``grader.offline.judge.PLAIN_MODEL_PATH``, fitted
without the exemplar features) with its cut-points, and the sentence reader (which gives the
card no offset of its own). The phrasing features, the stance and the sentence reader's columns
are read as for a built-in card. The doubt margin is the same (``grader.offline.SURE_MARGIN``);
the reading is nearer its cuts more often, so the judge says it is unsure more often (a third
of the held-out answers against 14%; figures and the command in
``grader.calibration.offline_eval``).

Until December 2026 such a card was read by the main model, whose exemplar votes then saw only
the non-answers every card gets (``grader.offline.exemplars.NON_ANSWERS``, all labelled absent):
"the nearest labelled answers earned nothing", a reading it met on no fitting row.
``without_exemplars=False`` (``--with-votes``) measures that reading still.

This module measures exactly that case by folds of cards: for each fold, everything is fitted
on the fitting rows (``grader.calibration.train.training_rows``) of the other cards, with
train.py's own functions and the learner train.py chose for the shipped model (the plain one's,
or with ``--with-votes`` the main one's); the fold's cards' held-out answers (never fitted on)
are graded by the whole judge (``OfflineJudge.judge``: the screens, the negation rules, the
doubts) with the fold's model and reader. The plain model's rows are read as ``train --without-
exemplars`` reads them (``train.read_as_unseen``), by readers that never saw the fold nor the
row's card: five more reader fits per fold. The main model's rows keep train.py's reader
columns (readers fitted without each row's writer, on every card).

Fits and grades are kept under ``TRAPBOT_EVAL_CACHE`` (default ``~/.cache/trapbot-eval``),
keyed by what they depend on, so a re-run is quick.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cards.deck import default_deck
from cards.schema import Card
from grader.calibration import train
from grader.calibration.eval import MARGIN_GRID, PASS_QUALITY, Progress, heartbeat, sure_agreement
from grader.calibration.eval import quadratic_weighted_kappa as qwk
from grader.offline import OfflineJudge
from grader.offline.evidence import (
    ALL_MISCONCEPTION_FEATURES,
    ALL_POINT_FEATURES,
    EXEMPLAR_FEATURES,
    exemplar_vectors,
)
from grader.offline.exemplars import Exemplars, build_exemplars, labelled_answers
from grader.offline.judge import MODEL_PATH, PLAIN_MODEL_PATH, SURE_MARGIN, PointModel
from grader.offline.reader import SentenceReader
from grader.scoring import grade_from_judgement

CALIBRATION = Path(__file__).resolve().parent
#: The held-out sets: never fitted on, never an exemplar.
UNSEEN_SETS = ("heldout.jsonl", "heldout-2.jsonl", "newstyles.jsonl")
CACHE = Path(os.environ.get("TRAPBOT_EVAL_CACHE") or Path.home() / ".cache" / "trapbot-eval")


def shipped_learner(path: Path = MODEL_PATH) -> tuple[str, Any]:
    """The learner train.py chose for the shipped model (its kind and parameters)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    params = tuple(data["params"]) if data["learner"] == "trees" else data["params"]
    return data["learner"], params


class UnseenCardJudge(OfflineJudge):
    """The offline judge with a fold's model and reader, reading every card as a user's card:
    its only exemplars are the non-answers."""

    def __init__(self, model: PointModel, reader: SentenceReader | None):
        super().__init__(model=model, followup_model=None, plain_model=None)
        self._reader = reader
        self._exemplars: dict[str, Exemplars] = {}

    def reader(self) -> SentenceReader | None:
        return self._reader

    def exemplars(self, card: Card) -> Exemplars:
        if card.id not in self._exemplars:
            index = self.index(card)
            self._exemplars[card.id] = build_exemplars(
                labelled_answers(card, paths=()), lambda text: exemplar_vectors(card, index, text)
            )
        return self._exemplars[card.id]


@dataclass(frozen=True)
class FoldFit:
    """What the judge learns, fitted without the fold's cards."""

    cards: tuple[str, ...]
    model: dict[str, Any]
    reader: SentenceReader
    cut_score: float


def digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def rows_key(rows: Sequence[train.Row]) -> str:
    """What a fit depends on: every fitting row's id, labels and features."""
    h = hashlib.sha256()
    for row in rows:
        h.update(f"{row.id}|{row.label}|{row.point_labels}|{row.misc_y.tolist()}".encode())
        h.update(row.point_x.tobytes())
        h.update(row.misc_x.tobytes())
    return h.hexdigest()[:16]


def fold_reader(rows: Sequence[train.Row], held_out: Sequence[str], cache: Path) -> SentenceReader:
    """The sentence reader fitted on the rows of the cards not in ``held_out``."""
    others = [r for r in rows if r.card_id not in held_out]
    label = ", ".join(held_out)

    def reader() -> SentenceReader:
        with heartbeat(lambda: f"fitting the sentence reader without {label}"):
            return train.fit_reader(others)

    key = digest(rows_key(others), code_key(*FEATURE_CODE))
    return train.cached(cache / f"reader-{key}.pkl", reader)


def fit_fold(
    rows: Sequence[train.Row],
    held_out: Sequence[str],
    learner: tuple[str, Any],
    inner_folds: int | None,
    cache: Path,
    without_exemplars: bool = False,
    model_rows: Sequence[train.Row] | None = None,
) -> FoldFit:
    """The point model (cut-points chosen by ``inner_folds`` folds of the other cards; with
    ``without_exemplars``, on the features that do not read exemplars, as ``train
    --without-exemplars`` fits) on ``model_rows`` (default ``rows``) and the sentence reader on
    ``rows``, of the cards not in ``held_out``."""
    others = [r for r in (model_rows or rows) if r.card_id not in held_out]
    columns = tuple(
        [i for i, name in enumerate(names) if not (without_exemplars and name in EXEMPLAR_FEATURES)]
        for names in (ALL_POINT_FEATURES, ALL_MISCONCEPTION_FEATURES)
    )
    key = digest(digest(rows_key(others), code_key(*FEATURE_CODE)), learner, inner_folds, columns)

    def model() -> tuple[dict[str, Any], float]:
        cuts, score = train.choose_cuts(
            others, train.cross_fitted(others, learner, columns, inner_folds)
        )
        fitted = train.fit(others, learner, *columns)
        fitted["cuts"] = train.stored_cuts(cuts)
        return fitted, score

    fitted, score = train.cached(cache / f"model-{key}.pkl", model)
    return FoldFit(tuple(held_out), fitted, fold_reader(rows, held_out, cache), score)


# ----- grading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """One held-out answer: its set, style, label, and the judge's grade and doubt (``margin``:
    how far its reading is from turning pass/fail, None when flagged as an injection)."""

    set: str
    kind: str
    label: int
    grade: int
    unsure: bool
    margin: float | None = None
    card_id: str = ""


def held_out_rows(sets: Sequence[str], cards: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(set name, row) for every labelled answer of ``sets`` (names in this folder, or paths)
    on ``cards``."""
    found = []
    for name in sets:
        path = CALIBRATION / name if not Path(name).is_absolute() else Path(name)
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row["card_id"] in cards:
                    found.append((name, row))
    return found


def grade_rows(
    judge: OfflineJudge, items: Sequence[tuple[str, dict[str, Any]]], label: str
) -> list[Graded]:
    """The whole judge's grade of each row, with a progress line every few seconds."""
    deck = default_deck()
    progress = Progress(len(items), label)
    graded = []
    for name, row in items:
        card = deck.get(row["card_id"])
        judgement = judge.judge(card, row["answer"])
        grade = grade_from_judgement(card, judgement, row["answer"])
        graded.append(
            Graded(
                name,
                row["kind"],
                int(row["grade"]),
                grade.quality,
                bool(judgement.unsure_points),
                judgement.margin,
                card.id,
            )
        )
        progress.step()
    return graded


def figures(graded: Sequence[Graded]) -> dict[str, Any]:
    """QWK, pass/fail agreement at ``PASS_QUALITY``, the share unsure and the sure ones'
    pass/fail agreement."""
    n = len(graded)
    agree = [(g.label >= PASS_QUALITY) == (g.grade >= PASS_QUALITY) for g in graded]
    sure = [a for a, g in zip(agree, graded, strict=True) if not g.unsure]
    labels, grades = [g.label for g in graded], [g.grade for g in graded]
    return {
        "answers": n,
        "qwk": round(qwk(labels, grades), 3) if len({*labels, *grades}) > 1 else None,
        "agree": round(sum(agree) / n, 3) if n else None,
        "unsure": round(1 - len(sure) / n, 3) if n else None,
        "sure_agree": round(sum(sure) / len(sure), 3) if sure else None,
    }


def curve(graded: Sequence[Graded], margins: Sequence[float]) -> dict[str, Any]:
    """Per doubt margin (``grader.offline.SURE_MARGIN`` is the shipped one): the share unsure
    and the sure ones' pass/fail agreement, were the judge to doubt every reading nearer than
    that margin to turning pass/fail (an answer flagged as an injection is always sure)."""
    read = [(g.label >= PASS_QUALITY, g.grade >= PASS_QUALITY, g.margin) for g in graded]
    return sure_agreement(read, margins)


def table(graded: Sequence[Graded]) -> dict[str, Any]:
    """``figures`` per set, pooled and per style."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(g.set for g in graded):
        mine = [g for g in graded if g.set == name]
        kinds = sorted({g.kind for g in mine})
        out[name] = {
            "all": figures(mine),
            **{k: figures([g for g in mine if g.kind == k]) for k in kinds},
        }
    return out


def unseen(
    folds: int = 5,
    inner_folds: int | None = 5,
    sets: Sequence[str] = UNSEEN_SETS,
    cards: Sequence[str] | None = None,
    rows: Sequence[train.Row] | None = None,
    learner: tuple[str, Any] | None = None,
    cache: Path = CACHE,
    shipped: bool = True,
    without_exemplars: bool = True,
) -> dict[str, Any]:
    """Grade ``sets`` card fold by card fold with everything fitted without the fold (the
    unseen-card judge), and, with ``shipped``, with the shipped judge, side by side. The fold's
    point model is fitted ``without_exemplars`` as the shipped plain model is (False: the main
    model's reading, which on a user's card sees votes of non-answers only)."""
    deck = default_deck()
    cards = sorted(cards or [card.id for card in deck])
    if rows is None:
        rows = train.fitting_rows(cache=cache / f"fitting-rows-{fitting_key()}.pkl")
    learner = learner or shipped_learner(PLAIN_MODEL_PATH if without_exemplars else MODEL_PATH)
    items = held_out_rows(sets, set(cards))
    graded: list[Graded] = []
    groups = train.card_folds(cards, folds)
    for number, group in enumerate(groups, 1):
        print(
            f"[{number}/{len(groups)}] fold without {', '.join(group)}", file=sys.stderr, flush=True
        )
        model_rows = None
        if without_exemplars:
            # The plain model's rows read as unseen, by readers that never saw this fold either.
            others = [r for r in rows if r.card_id not in group]
            model_rows = train.read_as_unseen(
                others, folds, lambda inner, o=others: fold_reader(o, inner, cache)
            )
        fold = fit_fold(rows, group, learner, inner_folds, cache, without_exemplars, model_rows)
        mine = [(name, row) for name, row in items if row["card_id"] in group]
        key = digest(code_key(), fold.cards, json.dumps(fold.model), [r["id"] for _, r in mine])
        judge = UnseenCardJudge(PointModel(fold.model), fold.reader)
        graded += train.cached(
            cache / f"graded-{key}.pkl",
            lambda j=judge, m=mine, n=number: grade_rows(j, m, f"fold {n}"),
        )
    result: dict[str, Any] = {
        "folds": len(groups),
        "inner_folds": inner_folds,
        "learner": list(learner),
        "without_exemplars": without_exemplars,
        "unseen": table(graded),
        "curve": {"unseen": curves(graded)},
    }
    if shipped:
        judge = OfflineJudge()
        key = digest("shipped", code_key(), [r["id"] for _, r in items])
        built_in = train.cached(
            cache / f"graded-{key}.pkl", lambda: grade_rows(judge, items, "shipped")
        )
        result["shipped"] = table(built_in)
        result["curve"]["shipped"] = curves(built_in)
    return result


def curves(graded: Sequence[Graded]) -> dict[str, Any]:
    """``curve`` per set, over ``MARGIN_GRID`` and the shipped margin."""
    margins = sorted({*MARGIN_GRID, SURE_MARGIN})
    names = dict.fromkeys(g.set for g in graded)
    return {name: curve([g for g in graded if g.set == name], margins) for name in names}


def code_key(*names: str) -> str:
    """The bytes of the judge's files ``names`` (relative to ``grader/``; none: its code, its
    shipped model files and this module): a change to any of them makes a cached value stale."""
    grader = CALIBRATION.parent
    if names:
        files = [grader / name for name in names]
    else:
        files = [
            *grader.glob("*.py"),
            *grader.glob("offline/*.py"),
            *grader.glob("*.json"),
            *grader.glob("models/*"),
            Path(__file__),
        ]
    return digest([(str(f.relative_to(grader)), f.read_bytes()) for f in sorted(files)])


#: The code a fitting row's features come from (``train.read_rows``), and what fits them.
FEATURE_CODE = (
    "offline/evidence.py",
    "offline/exemplars.py",
    "offline/text.py",
    "textnorm.py",
    "offline/vectors.py",
    "injection.py",
    "offline/reader.py",
    "calibration/train.py",
)


def fitting_key() -> str:
    """What the fitting rows depend on: the fitting sets, the deck and the code of the features."""
    texts = [path.read_bytes() for path in (train.TRAINING_SET, train.DEFAULT_SET)]
    versions = [(card.id, card.version) for card in default_deck()]
    return digest(texts, versions, code_key(*FEATURE_CODE))


def print_table(result: dict[str, Any]) -> str:
    """The figures as a text table: per set and style, the unseen-card judge beside the shipped."""
    names = ("qwk", "agree", "unsure", "sure_agree")

    def cells(f: dict[str, Any] | None) -> str:
        if not f:
            return " ".join(f"{'-':>6}" for _ in names)
        return " ".join(f"{'-' if f[n] is None else f'{f[n]:.3f}':>6}" for n in names)

    inner = result["inner_folds"]
    cut_folds = f"{inner} folds of the other cards" if inner else "leaving one other card out"
    head = f"{'set / style':<28} {'n':>4}  unseen card: {' '.join(f'{n:>6}' for n in names)}"
    lines = [
        f"{result['folds']} folds of cards; cut-points chosen by {cut_folds}; learner "
        + str(result["learner"]),
        head + (f"  shipped: {' '.join(f'{n:>6}' for n in names)}" if "shipped" in result else ""),
    ]
    for name, styles in result["unseen"].items():
        for style, f in styles.items():
            shipped = result.get("shipped", {}).get(name, {}).get(style)
            label = name if style == "all" else f"  {style}"
            row = f"{label:<28} {f['answers']:>4}  {'':13} {cells(f)}"
            lines.append(row + (f"  {'':8} {cells(shipped)}" if "shipped" in result else ""))
    for judge, sets in result["curve"].items():
        for name, points in sets.items():
            read = ", ".join(
                f"{m}: {f['unsure']:.0%} unsure, {f['sure_agree'] or 0:.1%}"
                for m, f in points.items()
            )
            lines.append(f"curve ({judge}, {name}; margin: unsure, sure agree): {read}")
    return "\n".join(lines)
