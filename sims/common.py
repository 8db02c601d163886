"""Helpers every simulation shares: seeding, the result type, and plot styling.

Heavy imports (torch, matplotlib) happen inside the functions, so importing a
simulation module for its metadata stays cheap.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Width of every plot in pixels: readable on a phone, sharp on a desktop.
PLOT_WIDTH_PX = 1000
PLOT_DPI = 100
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
    """A Figure (object API, Agg canvas, no pyplot state) about 1000 px wide."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PLOT_WIDTH_PX / PLOT_DPI, height_px / PLOT_DPI), dpi=PLOT_DPI)
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


class Adam:
    """Adam (Kingma & Ba 2014, arXiv 1412.6980) over (parameters, learning rate) groups.

    torch.optim's first use imports torch._dynamo (~1.2 s here), longer than these sims train;
    this is the same update rule without that import.
    """

    def __init__(self, groups, betas=(0.9, 0.999), eps=1e-8):
        import torch

        self.groups = [(list(params), lr) for params, lr in groups]
        self.betas, self.eps, self.steps = betas, eps, 0
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
                    mean.mul_(beta1).add_(param.grad, alpha=1 - beta1)
                    square.mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
                    denominator = (square / correction2).sqrt_().add_(self.eps)
                    param.addcdiv_(mean, denominator, value=-lr * lr_scale / correction1)
