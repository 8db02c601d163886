"""The /stats plot: reviews due this week and mastery per mechanism family.

It takes plain data (dates, counts, fractions), so it knows nothing of the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date

from sims.common import PALETTE, figure_png, new_figure, style_axes


def render_stats(
    due_forecast: Sequence[tuple[date, int]],
    mastery: Mapping[str, float],
    *,
    streak_days: int,
    reviews_done: int,
) -> bytes:
    """A two-panel PNG, about 1000 px wide: traps due per day, and mastery (0-1) per tag."""
    fig, (due_ax, mastery_ax) = new_figure(1, 2, height_px=500)
    days = [day.strftime("%a\n%d %b") for day, _ in due_forecast]
    counts = [count for _, count in due_forecast]
    due_ax.bar(days, counts, color=PALETTE[0])
    style_axes(due_ax, "Reviews due this week", "day", "traps due", legend=False)
    due_ax.yaxis.get_major_locator().set_params(integer=True)
    tags = sorted(mastery, key=mastery.__getitem__)
    values = [100 * mastery[tag] for tag in tags]
    colors = [PALETTE[1] if v < 60 else PALETTE[2] for v in values]
    mastery_ax.barh(tags or ["(none yet)"], values or [0], color=colors or [PALETTE[0]])
    mastery_ax.set_xlim(0, 100)
    style_axes(mastery_ax, "Mastery per mechanism", "latest grade (% of 5)", "", legend=False)
    return figure_png(fig, suptitle=f"Streak {streak_days} days · {reviews_done} reviews")
