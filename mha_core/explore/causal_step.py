"""Level 4's causal step explorer (Problem 4.2): a 2-D query q (two sliders) at a position of a causal
sequence -> the mask's row, the scores q·k_j, the scaled scores q·k_j/√d_k, the weights and the output
Σ w_j v_j, one panel each.

:func:`step_state` is the state, read from the model: a :class:`mha_core.MultiHeadAttention` block whose
head 1 is the problem's (its :meth:`~mha_core.MultiHeadAttention.trace` gives every step);
:class:`CausalStepExplorer` draws it.
"""

import functools

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..layer import MultiHeadAttention
from ..markup import render
from .base import Explorer
from .canvas import FigureImage

Q_RANGE = 3.0
STEP_CELL = "padding:2px 14px 2px 0"  # the step table's cells: columns apart, not run together


@functools.lru_cache(maxsize=4)
def step_block(d_k):
    """A block of width d_model = 2·d_k and h = 2 whose head 1 attends with the problem's q, k_j, v_j: a query
    token x_q = [q | 0] gives Q_1 = q, a key token x_kv = [k_j | v_j] gives K_1 = k_j and V_1 = v_j (head 2
    reads nothing: its projections are zero)."""
    I, Z = np.eye(d_k), np.zeros((d_k, d_k))
    W_QK = np.block([[I, Z], [Z, Z]])  # head 1's columns read x's first d_k entries
    W_V = np.block([[Z, Z], [I, Z]])  # head 1's columns read x's last d_k entries
    return MultiHeadAttention(W_QK, W_QK, W_V, np.eye(2 * d_k), h=2)


def step_state(q, position, K, V):
    """Every step of one causal query ``q`` over the keys ``K`` and values ``V`` (row j is k_j, v_j), from
    the model's trace: which keys it may see, the scores, the scaled scores, the weights, the output; the
    readout and alt text."""
    q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, K, V))
    n, d_k = K.shape
    allowed = np.arange(n) < position  # the causal mask's row for this position
    x_q = np.concatenate([q, np.zeros(d_k)])[None]  # (1, 2·d_k)
    x_kv = np.concatenate([K, V], axis=1)  # (n, 2·d_k)
    trace = step_block(d_k).trace(x_q, x_kv, mask=allowed[None])
    scores, scaled, w, out = (a[0, 0] for a in (trace.scores, trace.scaled, trace.weights, trace.heads))  # head 1
    seen = np.flatnonzero(allowed)
    top = seen[w[seen] >= w[seen].max() - 1e-12] + 1
    return {
        "q": q, "position": position, "allowed": allowed, "scores": scores, "scaled": scaled, "weights": w,
        "output": out,
        "readout": render("step_readout.html", cell=STEP_CELL, q=q, position=position, d_k=d_k, n=n,
                          scores=scores, scaled=scaled, weights=w, allowed=allowed, output=out),
        "alt": f"Query q = ({q[0]:.1f}, {q[1]:.1f}) at position {position} sees keys 1 to {position}. Scores "
               + ", ".join(f"{v:.2f}" for v in scores) + "; scaled " + ", ".join(f"{v:.2f}" for v in scaled)
               + "; weights " + ", ".join(f"{v:.2f}" for v in w)
               + f": key{'s' * (len(top) > 1)} {' and '.join(map(str, top))} highest; output "
               f"({out[0]:.2f}, {out[1]:.2f}).",
    }


class CausalStepExplorer(Explorer):
    """A 2-D query q (two sliders) at a position of a causal sequence: the mask, the scores q·k_j,
    the scaled scores q·k_j/√d_k, the weights and the output Σ w_j v_j, one panel each."""

    def __init__(self, q=(0.0, 1.0), K=None, V=None, position=None, dpi=80):
        for name, given in (("K", K), ("V", V)):
            if given is None:
                raise ValueError(f"{name} must be given: one 2-D row per key, e.g. {name}=((1, 0), (0, 1), (1, 1))")
        K = check.array("K", K, ndim=2)
        if K.shape[1] != 2:
            raise ValueError(f"K must have d_k = 2 columns (the query is moved by two sliders), got shape {K.shape}")
        V = check.array("V", V, ndim=2)
        if V.shape != K.shape:
            raise ValueError(f"V must have the shape of K {K.shape} (one 2-D value per key), got {V.shape}")
        q = check.array("q", q, ndim=1)
        if q.shape != (2,) or np.abs(q).max() > Q_RANGE:
            raise ValueError(f"q must hold 2 numbers between -{Q_RANGE:g} and {Q_RANGE:g}, got {q.tolist()}")
        n = len(K)
        position = n if position is None else check.positive_int("position", position)
        if position > n:
            raise ValueError(f"position must be at most n = {n}, got {position}")
        self.K, self.V, self.n, self.dpi = K, V, n, dpi
        slider = dict(min=-Q_RANGE, max=Q_RANGE, step=0.1, readout_format=".1f", continuous_update=True,
                      style={"description_width": "initial"})
        controls = {
            "q1": widgets.FloatSlider(value=float(q[0]), description="q₁ (first entry of q)", **slider),
            "q2": widgets.FloatSlider(value=float(q[1]), description="q₂ (second entry of q)", **slider),
            "position": widgets.IntSlider(value=position, min=1, max=n, description="query position",
                                          continuous_update=False, style={"description_width": "initial"}),
        }
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        state = step_state((self.controls["q1"].value, self.controls["q2"].value), self.controls["position"].value,
                           self.K, self.V)
        if self.canvas.drawing:
            if self.canvas.figure is None:
                self._build()
            self._set(*(state[k] for k in ("position", "allowed", "scores", "scaled", "weights", "output")))
            self.canvas.refresh()
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}

    def _build(self):
        from matplotlib.patches import Rectangle

        from ..attention import causal_mask
        from ..figures.base import PALETTE, WorkbookFigure, draw_bars, draw_heatmap

        n = self.n
        figure = WorkbookFigure(figsize=(10.5, 3.6), dpi=self.dpi)  # 840 px at 80 dpi: JupyterLab shows it unscaled
        axes = figure.subplots(1, 5, width_ratios=[1, 1.1, 1.1, 1.1, 1.2])
        mask_ax, *bar_axes, out_ax = axes
        image, _ = draw_heatmap(mask_ax, causal_mask(n).astype(float), causal_mask(n),
                                norm=matplotlib_norm(0, 1))
        names = [str(j + 1) for j in range(n)]
        mask_ax.set_xticks(range(n), names)
        mask_ax.set_yticks(range(n), names)
        mask_ax.set_xlabel("key j", fontsize=10)
        mask_ax.set_ylabel("query position", fontsize=10)
        mask_ax.set_title("causal mask\n(hatched: may not attend)", fontsize=10)
        self.row = Rectangle((-0.5, -0.5), n, 1, fill=False, edgecolor=PALETTE[5], lw=2.5, zorder=3)
        mask_ax.add_patch(self.row)
        bound = Q_RANGE * np.abs(self.K).sum(axis=1).max()
        self.bars, self.texts = [], []
        titles = ["1. scores q·k_j", "2. scaled:\nq·k_j / √d_k", "3. weights\n(softmax)"]
        for ax, title, limit in zip(bar_axes, titles, [bound, bound / np.sqrt(self.K.shape[1]), None]):
            bars, texts = draw_bars(ax, np.zeros(n), [f"k{j + 1}" for j in range(n)])
            for text in texts:
                text.set_fontsize(9)
            if limit is not None:
                ax.set_ylim(-limit * 1.15, limit * 1.15)
                ax.axhline(0, color="0.5", lw=0.8)
                ax.set_ylabel("")
            ax.set_title(title, fontsize=10)
            self.bars.append(list(bars.patches))
            self.texts.append(texts)
        lo, hi = self.V.min(axis=0), self.V.max(axis=0)
        pad = 0.15 * np.maximum(hi - lo, 1)
        out_ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
        out_ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
        out_ax.scatter(self.V[:, 0], self.V[:, 1], color=PALETTE[0], zorder=2)
        for j, v in enumerate(self.V):
            out_ax.annotate(f"v{j + 1}", v, textcoords="offset points", xytext=(5, 4), fontsize=9)
        self.links = [out_ax.plot([0, 0], [0, 0], color=PALETTE[1], lw=1)[0] for _ in range(n)]
        (self.star,) = out_ax.plot([0], [0], marker="*", ms=16, color=PALETTE[5], ls="none", zorder=3)
        out_ax.set_title("4. output\nΣ w_j v_j (star)", fontsize=10)
        out_ax.set_aspect("equal", adjustable="box")
        out_ax.spines[["top", "right"]].set_visible(False)
        from ..figures.screen import readable_in_lab

        readable_in_lab(figure)
        self.label_points = max(t.get_fontsize() for ts in self.texts for t in ts)  # "masked" as large as a number
        dynamic = [self.row, *[b for bars in self.bars for b in bars], *[t for ts in self.texts for t in ts],
                   *self.links, self.star]
        self.canvas.show(figure, dynamic)

    def _set(self, position, allowed, scores, scaled, w, out):
        from ..figures.base import PALETTE

        self.row.set_y(position - 1.5)
        for values, bars, texts in zip((scores, scaled, w), self.bars, self.texts):
            for j, (bar, text, v) in enumerate(zip(bars, texts, values)):
                shown = v if allowed[j] or values is scores else 0.0
                bar.set_height(shown)
                bar.set_facecolor(PALETTE[0] if allowed[j] else "0.8")
                bar.set_hatch(None if allowed[j] else "///")
                masked = not allowed[j] and values is not scores
                text.set_text("masked" if masked else f"{v:.2f}")
                text.set_fontsize(self.label_points)
                text.set_rotation(90 if masked else 0)  # upright, as large as a number, beside its neighbour's
                text.set_y(max(shown, 0) + 0.02 * (1 if values is w else abs(bars[0].axes.get_ylim()[1])))
        for link, v, weight in zip(self.links, self.V, w):
            link.set_data([out[0], v[0]], [out[1], v[1]])
            link.set_linewidth(0.3 + 4 * weight)
            link.set_alpha(0.2 + 0.8 * weight)
        self.star.set_data([out[0]], [out[1]])


def matplotlib_norm(vmin, vmax):
    from matplotlib import colors

    return colors.Normalize(vmin, vmax)


def causal_step_explorer(q=(0.0, 1.0), K=None, V=None, position=None, dpi=80):
    """Level 4, Problem 4.2: move a 2-D query q with two sliders (it starts at (0, 1)) and the
    query's position; see the causal mask, the scores q·k_j, the scaled scores q·k_j/√d_k, the
    weights and the output Σ w_j v_j. ``K`` and ``V`` are the keys and values (row j is k_j, v_j;
    the problem's are the workbook's to give); ``position`` defaults to the last (n)."""
    return CausalStepExplorer(q, K, V, position, dpi)

