"""The rank bottleneck (beyond the sheet, Level 3): n and d_k -> the singular values of one head's score
matrix Q_i K_i^T. Q_i and K_i are n × d_k, so the n × n scores have rank at most d_k: a head of width
d_k can express no more than d_k independent "directions of looking".

:func:`rank_state` is the state (no widget, no figure); :class:`RankExplorer` draws it as bars, log scale.
"""

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..markup import render
from .base import Explorer
from .canvas import FigureImage

D_MODEL = 32  # the width of the random tokens the head projects
MAX_N, MAX_D_K = 16, 32
TOLERANCE = 1e-10  # relative to the largest singular value: below it, a singular value counts as zero
FLOOR = 1e-17  # where the bars of (numerically) zero singular values are drawn on the log scale


def score_matrix(n, d_k, d_model=D_MODEL, seed=0):
    """One head's scores Q_i K_i^T (n × n) for random tokens X (n × d_model) and random W_i^Q, W_i^K (d_model × d_k)."""
    n, d_k, d_model = (check.positive_int(k, v) for k, v in (("n", n), ("d_k", d_k), ("d_model", d_model)))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model))
    W_Q, W_K = rng.standard_normal((2, d_model, d_k)) / np.sqrt(d_model)
    return (X @ W_Q) @ (X @ W_K).T


def rank_state(n, d_k, seed=0):
    """The singular values of :func:`score_matrix`, how many are not zero, the readout and alt text."""
    values = np.linalg.svd(score_matrix(n, d_k, seed=seed), compute_uv=False)  # descending
    rank = int(np.sum(values > TOLERANCE * values[0]))
    return {
        "n": n, "d_k": d_k, "singular_values": values, "rank": rank, "tolerance": TOLERANCE,
        "readout": render("rank_readout.html", n=n, d_k=d_k, rank=rank, tolerance=TOLERANCE),
        "alt": f"Bars of the {n} singular values of one head's {n} by {n} score matrix, d_k = {d_k}, log scale: "
               f"{rank} bars stand high, {n - rank} are at the floor (zero up to rounding).",
    }


def draw_rank(ax, state):
    """Bars of ``state``'s singular values on a log scale, the zero ones drawn at the floor and hatched."""
    from ..figures.base import PALETTE

    values = np.maximum(state["singular_values"], FLOOR)
    zero = state["singular_values"] <= TOLERANCE * state["singular_values"][0]
    positions = np.arange(1, len(values) + 1)
    ax.bar(positions[~zero], values[~zero], color=PALETTE[0], label="not zero")
    ax.bar(positions[zero], values[zero], color="white", edgecolor=PALETTE[5], hatch="//", label="zero (rounding)")
    ax.set_yscale("log")
    ax.set_ylim(FLOOR / 3, max(10.0, values.max() * 3))
    ax.set_xticks(positions)
    ax.set_xlabel("singular value number (largest first)")
    ax.set_ylabel("singular value (log scale)")
    ax.set_title(f"Q_i K_i^T for n = {state['n']}, d_k = {state['d_k']} (random (untrained) weights)", fontsize=11)
    ax.legend(loc="upper right", fontsize=9)


class RankExplorer(Explorer):
    """n and d_k -> the singular values of one head's score matrix (the rank bottleneck)."""

    def __init__(self, n=12, d_k=2, dpi=80):
        n, d_k = check.positive_int("n", n), check.positive_int("d_k", d_k)
        if n > MAX_N or d_k > MAX_D_K:
            raise ValueError(f"n must be at most {MAX_N} and d_k at most {MAX_D_K}, got n={n}, d_k={d_k}")
        controls = {
            "n": widgets.IntSlider(value=n, min=2, max=MAX_N, description="n (tokens)", continuous_update=False,
                                   style={"description_width": "initial"}),
            "d_k": widgets.IntSlider(value=d_k, min=1, max=MAX_D_K, description="d_k", continuous_update=False),
        }
        self.dpi = dpi
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        state = rank_state(self.controls["n"].value, self.controls["d_k"].value)
        if self.canvas.drawing:
            from ..figures.base import WorkbookFigure

            figure = WorkbookFigure(figsize=(7, 3.8), dpi=self.dpi)
            draw_rank(figure.add_subplot(), state)
            self.canvas.show(figure, [])  # a small figure: laid out again at each change
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}


def rank_explorer(n=12, d_k=2, dpi=80):
    """Beyond the sheet: n and d_k sliders; the singular values of one head's n × n score matrix,
    at most d_k of them not zero."""
    return RankExplorer(n, d_k, dpi)
