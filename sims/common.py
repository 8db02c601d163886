"""Helpers every simulation shares: seeding, the result type, Adam, and the phone layout.

Heavy imports (torch, matplotlib) happen inside the functions, so importing a
simulation module for its metadata stays cheap.

Phone layout (issue 14): Telegram and Discord show a photo about 400 px wide, so every plot is
drawn for that. ``phone_figure`` gives panels stacked vertically on an 800 px wide canvas (8 in
at 100 dpi) with every text at least ``MIN_FONT_PT`` = 16 pt, i.e. at least 11 px once the
phone halves it. A plot reads::

    fig, (top, bottom) = phone_figure(2, title="With beta = 0 the proxy climbs while the true "
                                              "reward collapses")
    top.plot(x, y, label="proxy")
    style_panel(top, "Reward during RL", "steps", "reward")
    legend_below(top)
    ...
    return save_png(fig)

``phone_rows`` lays panels out in rows instead, two side by side where a row needs less width
(keeps a three-panel plot within 1.4 times its width, issue 39).

``save_png`` puts each ``legend_below`` legend under its panel's axis labels, grows the figure
when a panel came out too flat, and writes exactly ``PHONE_WIDTH_PX`` pixels wide. Keep at most
four series per panel (tests/sims/test_plots_phone.py checks width, fonts, series and title).
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PLOT_DPI = 100

#: Width of every phone plot in pixels: a phone shows it at about 400 px, i.e. scaled by 1/2.
PHONE_WIDTH_PX = 800
#: Width of every simulation's plot (all are laid out for a phone).
PLOT_WIDTH_PX = PHONE_WIDTH_PX
#: Width of the older side-by-side layout of ``new_figure`` (still used by bot/stats_plot.py).
WIDE_WIDTH_PX = 1000
#: Smallest text on a phone plot, in points at PLOT_DPI (16 pt = 22 px, 11 px on the phone).
MIN_FONT_PT = 16
#: The takeaway title, a little larger than the rest.
TITLE_FONT_PT = 18
#: Characters per line before a title is wrapped (18 pt bold on 8 in: about 52 fit).
TITLE_WRAP_CHARS = 48
#: Characters per line of a panel title (17 pt, panel about 6.6 in wide).
PANEL_TITLE_WRAP_CHARS = 56
#: A panel's plotting area is never flatter than this (inches); save_png grows the figure.
MIN_AXES_HEIGHT_IN = 2.3
#: matplotlib settings of every phone plot; every text size here is >= MIN_FONT_PT.
PHONE_RC = {
    "font.size": MIN_FONT_PT,
    "axes.titlesize": MIN_FONT_PT + 1,
    "axes.labelsize": MIN_FONT_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "figure.titlesize": TITLE_FONT_PT,
    "figure.titleweight": "bold",
    "lines.linewidth": 2.6,
    "lines.markersize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.framealpha": 0.9,
}
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")


@dataclass
class Result:
    """What ``run`` returns: scalar metrics (asserted in tests) and the series ``plot`` draws."""

    metrics: dict[str, float]
    series: dict[str, Any] = field(default_factory=dict)


def seeded(seed: int) -> torch.Generator:
    """Single-threaded torch and a generator seeded with ``seed``: same config, same numbers."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def new_figure(nrows: int = 1, ncols: int = 1, height_px: int = 600) -> tuple[Figure, Any]:
    """A Figure (object API, Agg canvas, no pyplot state) about 1000 px wide.

    The older desktop layout, kept for the bot's stats plot; simulations use ``phone_figure``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDE_WIDTH_PX / PLOT_DPI, height_px / PLOT_DPI), dpi=PLOT_DPI)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=True)
    return fig, axes


def style_axes(ax: Axes, title: str, xlabel: str, ylabel: str, legend: bool = True) -> None:
    """Title, labelled axes, a light grid and a legend naming the variants."""
    ax.set_title(title, fontsize=13)
    ax.set_xlabel(xlabel, fontsize=11)
    ax.set_ylabel(ylabel, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=10)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=10, framealpha=0.9)


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels read from a PNG's IHDR chunk; ValueError if not a PNG."""
    if not png.startswith(b"\x89PNG\r\n\x1a\n") or png[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def figure_png(fig: Figure, suptitle: str | None = None) -> bytes:
    """Render a figure to PNG bytes."""
    if suptitle:
        fig.suptitle(suptitle, fontsize=14, fontweight="bold")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PLOT_DPI)
    return buffer.getvalue()


def wrap(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (existing newlines kept)."""
    return "\n".join(
        textwrap.fill(line, width, break_on_hyphens=False) if line else ""
        for line in text.split("\n")
    )


def phone_figure(
    nrows: int = 1,
    height_per_panel: float = 3.4,
    title: str | None = None,
    sharex: bool = False,
) -> tuple[Figure, list[Axes]]:
    """An 800 px wide Figure with ``nrows`` panels stacked vertically, styled for a phone.

    Returns ``(fig, axes)`` with ``axes`` always a list (``fig, (ax,) = phone_figure()``).
    ``height_per_panel`` is in inches and includes the panel's title, labels and legend; 3.4 in
    suits a panel with a short legend below. ``title`` is the figure's takeaway, a sentence
    ("With beta = 0 the proxy climbs while the true reward collapses"), wrapped to fit.

    The phone style (``PHONE_RC``) is applied to matplotlib's global settings: text created
    later by the plot code (titles, labels, legends, annotations) takes its size from there.
    Only simulation plots draw with matplotlib in this program, so that is all it affects.
    """
    fig = _phone_canvas(nrows * height_per_panel, title)
    axes = fig.subplots(nrows, 1, squeeze=False, sharex=sharex)[:, 0].tolist()
    for ax in axes:
        # Set on the axis itself, not only in rcParams: ticks are created lazily at draw time.
        ax.tick_params(labelsize=MIN_FONT_PT)
    return fig, axes


def phone_rows(
    rows: list[list[str]], row_heights: list[float], title: str | None = None
) -> tuple[Figure, dict[str, Axes]]:
    """Like ``phone_figure``, but a row may hold two panels side by side.

    ``rows`` names the panels as ``Figure.subplot_mosaic`` does: ``[["curve", "curve"],
    ["left", "right"]]`` is one full-width panel above two half-width ones. ``row_heights`` are
    in inches, each including its panels' titles, labels and legends. A half-width panel's
    plotting area is about 2.9 in wide (a full one 7 in): its title fits about 24 characters a
    line (wrap it by hand) and its legend one column. Returns ``(fig, {name: axes})``.
    """
    fig = _phone_canvas(sum(row_heights), title)
    # Each row is a nested grid of its own: its margins (say, long tick labels on a half panel)
    # do not shift the panels of other rows, and its height ratio covers its titles, labels
    # and legends too, so ``row_heights`` are whole rows.
    nested = [[[row]] for row in rows]
    axes = fig.subplot_mosaic(nested, height_ratios=row_heights)
    for ax in axes.values():
        ax.tick_params(labelsize=MIN_FONT_PT)
    return fig, axes


def _phone_canvas(panels_height: float, title: str | None) -> Figure:
    """An empty 800 px wide Figure in the phone style, ``panels_height`` inches plus the title."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(PHONE_RC)
    title_lines = 0 if not title else wrap(title, TITLE_WRAP_CHARS).count("\n") + 1
    height = panels_height + 0.4 * title_lines + 0.2
    fig = Figure(figsize=(PHONE_WIDTH_PX / PLOT_DPI, height), dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.get_layout_engine().set(h_pad=0.08, w_pad=0.08, hspace=0.06, wspace=0.04)
    if title:
        set_takeaway(fig, title)
    return fig


def set_takeaway(fig: Figure, text: str) -> None:
    """The figure's title: the takeaway in words, wrapped to the phone's width."""
    fig.suptitle(wrap(text, TITLE_WRAP_CHARS), fontsize=TITLE_FONT_PT, fontweight="bold")


def style_panel(
    ax: Axes, title: str | None = None, xlabel: str | None = None, ylabel: str | None = None
) -> None:
    """Panel title (wrapped), axis labels and a light grid, all at phone sizes.

    Call ``legend_below(ax)`` afterwards if the panel needs a legend.
    """
    if title:
        ax.set_title(wrap(title, PANEL_TITLE_WRAP_CHARS), fontsize=MIN_FONT_PT + 1)
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=MIN_FONT_PT)
    if ylabel:
        ax.set_ylabel(wrap(ylabel, 22), fontsize=MIN_FONT_PT)
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=MIN_FONT_PT)


def legend_below(ax: Axes, ncol: int = 1, handles=None, labels=None, **kwargs):
    """The panel's legend outside its data, centred under its x-axis label.

    ``save_png`` measures the tick labels and axis label and moves the legend just below them,
    so it never covers the axis label whatever the panel's height. ``ncol=2`` suits four short
    labels; long labels read better in one column.
    """
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    legend = ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=ncol,
        fontsize=MIN_FONT_PT,
        frameon=False,
        borderaxespad=0.0,
        handlelength=1.8,
        columnspacing=1.2,
        **kwargs,
    )
    legend._trapbot_below = True  # placed by save_png
    return legend


def _place_legends_below(fig: Figure) -> None:
    """Move every ``legend_below`` legend under its axes' tick and axis labels (measured)."""
    from matplotlib.transforms import ScaledTranslation

    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or not getattr(legend, "_trapbot_below", False):
            continue
        # Only the x axis (tick labels and axis label) sits under the panel: measuring it alone
        # is much cheaper than the whole axes' tight box.
        below = ax.xaxis.get_tightbbox(renderer)  # display pixels
        bottom = ax.bbox.y0 if below is None else min(below.y0, ax.bbox.y0)
        gap_in = (ax.bbox.y0 - bottom) / fig.dpi + 0.08
        legend.set_bbox_to_anchor(
            (0.5, 0.0),
            transform=ax.transAxes + ScaledTranslation(0, -gap_in, fig.dpi_scale_trans),
        )


def save_png(fig: Figure) -> bytes:
    """Lay the figure out and render it to PNG bytes exactly ``PHONE_WIDTH_PX`` wide.

    Places the legends below their panels and lays the figure out; if constrained layout had to
    squash a panel's plotting area under ``MIN_AXES_HEIGHT_IN``, makes the figure taller and
    lays out again. The width never changes.
    """
    fig.set_size_inches(PHONE_WIDTH_PX / PLOT_DPI, fig.get_figheight(), forward=False)
    engine = fig.get_layout_engine()
    for _ in range(3):
        # The gap under a panel (tick labels, axis label) does not depend on the panel's size,
        # so the legends are placed first and one layout pass follows; it measures text without
        # rasterising anything.
        _place_legends_below(fig)
        engine.execute(fig)
        flattest = min((ax.bbox.height / fig.dpi for ax in fig.axes), default=MIN_AXES_HEIGHT_IN)
        if flattest >= MIN_AXES_HEIGHT_IN - 0.01:
            break
        rows = max(1, len({round(ax.get_position().y0, 3) for ax in fig.axes}))
        fig.set_size_inches(
            PHONE_WIDTH_PX / PLOT_DPI,
            fig.get_figheight() + rows * (MIN_AXES_HEIGHT_IN - flattest) + 0.05,
            forward=False,
        )
    fig.set_layout_engine("none")  # laid out above; savefig need not do it again
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PLOT_DPI)
    png = buffer.getvalue()
    width = png_size(png)[0]
    if width != PHONE_WIDTH_PX:  # pragma: no cover (savefig with a fixed size and dpi)
        raise RuntimeError(f"plot rendered {width} px wide, expected {PHONE_WIDTH_PX}")
    return png


class Adam:
    """Adam (Kingma & Ba 2014, arXiv 1412.6980) over (parameters, learning rate) groups.

    torch.optim's first use imports torch._dynamo (~1.2 s here), longer than these sims train;
    this is the same update rule without that import.
    """

    def __init__(self, groups, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        import torch

        self.groups = [(list(params), lr) for params, lr in groups]
        self.betas, self.eps, self.steps = betas, eps, 0
        self.weight_decay = weight_decay
        """L2 penalty added to the gradient, as torch.optim.Adam's weight_decay (not AdamW)."""
        self.moments = [
            [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
            for params, _ in self.groups
        ]

    def zero_grad(self) -> None:
        for params, _ in self.groups:
            for param in params:
                param.grad = None

    def step(self, lr_scale: float = 1.0) -> None:
        """One update; lr_scale multiplies every group's learning rate (for schedules)."""
        import torch

        self.steps += 1
        beta1, beta2 = self.betas
        correction1, correction2 = 1 - beta1**self.steps, 1 - beta2**self.steps
        with torch.no_grad():
            for (params, lr), moments in zip(self.groups, self.moments):
                for param, (mean, square) in zip(params, moments):
                    if param.grad is None:
                        continue
                    grad = param.grad
                    if self.weight_decay:
                        grad = grad.add(param, alpha=self.weight_decay)
                    mean.mul_(beta1).add_(grad, alpha=1 - beta1)
                    square.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    denominator = (square / correction2).sqrt_().add_(self.eps)
                    param.addcdiv_(mean, denominator, value=-lr * lr_scale / correction1)
