"""What every figure of the workbook is drawn with: the figure class (Agg, shown as PNG, one line of
text when drawing is off), the colours, the input checks, and the heatmap and bar building blocks
that figures and explorers share.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_model / h``, ``n`` (or ``n_q`` query
rows, ``n_k`` key columns). Masks say True where a query *may attend*, as in :mod:`mha_core.attention`.
"""

import base64
import io

import matplotlib
import numpy as np
from matplotlib import colors, ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .. import drawing
from ..examples import PATTERN_TITLES, UNTRAINED, example_embeddings, head_options  # noqa: F401
from ..markup import render

CMAP = "viridis"  # colour-blind safe and readable in greyscale
MASKED_NOTE = "hatched = masked: may not attend"
WEIGHT_LABEL = "attention weight, 0 to 1\n(each row sums to 1)"
# Okabe-Ito: colour-blind safe categorical colours
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]
ANNOTATE_MAX = 12  # annotate=None writes values in the cells up to this many rows and columns


def headless():
    """True when drawing is switched off (:func:`mha_core.drawing`, ``MHA_CORE_DRAW=0``): the
    grading side switches it off wherever it executes a notebook (autograde, Validate,
    the re-check), where nobody looks at the pictures and no figure depends on an answer."""
    return not drawing()


class WorkbookFigure(Figure):
    """A Figure with its own Agg canvas that shows itself as PNG in a notebook,
    whether or not pyplot (and an inline backend) was ever imported.

    Under nbgrader (:func:`headless`) the builders below check their arguments as
    always but return an empty figure with only its title, shown as one line of
    text: laying out and drawing cost a graded notebook about a second of CPU."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("layout", "constrained")
        super().__init__(*args, **kwargs)
        FigureCanvasAgg(self)
        self.alt = ""  # what the figure shows, from its data: set by the builders below

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The PNG, and the same PNG as an <img> with its alt text (JupyterLab shows a PNG output
        without one): drawn once for both (IPython asks this before ``_repr_html_``, ``_repr_png_``)."""
        if headless():
            return None
        png = png_bytes(self)
        bundle = {"image/png": png}
        if self.alt:
            bundle["text/html"] = self._img(png)
        return bundle

    def _repr_html_(self):
        png = self._repr_png_() if self.alt else None  # without alt text, the PNG alone
        return None if png is None else self._img(png)

    def _repr_png_(self):
        return None if headless() else png_bytes(self)

    def _img(self, png):
        return render("figure_img.html", data=base64.b64encode(png).decode("ascii"), alt=self.alt)

    def _repr_pretty_(self, printer, cycle):
        titles = [self.get_suptitle()] + [ax.get_title() for ax in self.axes]
        title = next((t for t in titles if t), "")
        named = f"figure: {title}" if title else "figure"
        printer.text(f"[{named}]\n(drawn when you run the notebook, not when it is graded)" if headless()
                     else f"<{named}>")


def png_bytes(figure):
    """``figure`` as the PNG a notebook shows: cut to what it draws (``bbox_inches="tight"``)."""
    buf = io.BytesIO()
    figure.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def unseen_figure(title):
    """What a figure builder returns under nbgrader: an empty figure that names itself."""
    fig = WorkbookFigure()
    fig.suptitle(title)
    return fig


def checked_labels(name, labels, size, axis_name):
    if labels is None:
        return [str(i + 1) for i in range(size)]
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a sequence of {size} labels, one per {axis_name}, got a string")
    labels = [str(t) for t in labels]
    if len(labels) != size:
        raise ValueError(f"{name} must hold {size} labels, one per {axis_name}, got {len(labels)}")
    return labels


def checked_matrix(name, matrix, mask, ndim):
    """``matrix`` as float64 with ``ndim`` dimensions and the mask as a boolean array (or None).

    Values under a False mask entry may be anything (e.g. -inf); the rest must be finite.
    """
    try:
        a = np.array(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if a.ndim != ndim:
        what = "(n_q, n_k)" if ndim == 2 else "(h, n_q, n_k)"
        raise ValueError(f"{name} must be {ndim}-D {what}, got shape {a.shape}")
    if 0 in a.shape:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
        try:
            mask = np.broadcast_to(mask, a.shape)
        except ValueError:
            raise ValueError(f"mask must have shape {a.shape[-2:]} = (n_q, n_k), got {mask.shape}") from None
    allowed = a if mask is None else a[mask]
    if not np.isfinite(allowed).all():
        raise ValueError(f"{name} must be finite (no NaN or inf) where the mask allows attention")
    return a, mask


def checked_kind(kind):
    if kind not in ("weights", "scores"):
        raise ValueError(f"kind must be 'weights' or 'scores', got {kind!r}")
    return kind


def weights_norm():
    """The colour scale of attention weights: linear from 0 to 1, so that colour compares like the numbers."""
    return colors.Normalize(vmin=0.0, vmax=1.0)


def untrained_title(title, untrained):
    """``title``, followed by :data:`UNTRAINED` when the weights come from random projections."""
    if not isinstance(untrained, (bool, np.bool_)):
        raise ValueError(f"untrained must be True or False, got {untrained!r}")
    return f"{title}\n{UNTRAINED}" if untrained and UNTRAINED not in title else title


def _cmap():
    return matplotlib.colormaps[CMAP].with_extremes(bad=(0, 0, 0, 0))  # masked: transparent over the hatching


def masked(data, mask):
    """``data`` as a masked array hiding the cells ``mask`` forbids (True = may attend; None = none hidden)."""
    return np.ma.masked_array(data, mask=np.zeros(data.shape, bool) if mask is None else ~mask)


def draw_heatmap(ax, data, mask=None, norm=None, annotate=False, fontsize=9):
    """Draw one matrix on ``ax``: image over a hatched background; return (image, texts).

    Internal building block of :func:`heatmap`, :func:`head_grid` and the widgets,
    which update ``image.set_data`` and the texts instead of redrawing.
    """
    n_rows, n_cols = data.shape
    ax.add_patch(
        Rectangle((-0.5, -0.5), n_cols, n_rows, facecolor="0.93", edgecolor="0.55", hatch="///", lw=0, zorder=0)
    )
    image = ax.imshow(masked(data, mask), cmap=_cmap(), norm=norm, interpolation="nearest", aspect="equal", zorder=1)
    ax.set_xlim(-0.5, n_cols - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    texts = []
    if annotate:
        for i in range(n_rows):
            for j in range(n_cols):
                texts.append(ax.text(j, i, "", ha="center", va="center", fontsize=fontsize, zorder=2))
        update_texts(texts, image)
    return image, texts


def update_texts(texts, image):
    """Write the image's values in its cells, dark on light colours and light on dark."""
    if not texts:
        return
    data = image.get_array()
    rgba = image.cmap(image.norm(data.filled(0)))
    light = (0.299 * rgba[..., 0] + 0.587 * rgba[..., 1] + 0.114 * rgba[..., 2]) > 0.5
    n_cols = data.shape[1]
    for k, text in enumerate(texts):
        i, j = divmod(k, n_cols)
        if data.mask is not np.ma.nomask and data.mask[i, j]:
            text.set_text("")
        else:
            text.set_text(_cell(data[i, j]))
            text.set_color("black" if light[i, j] else "white")


def _cell(value):
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def token_label_styles(n_cols, fontsize):
    """How token labels are written, as Text properties: (the columns', the rows'). Vertical column labels
    past 10 columns in small type (they do not collide), else at 45 degrees."""
    steep = n_cols > 10 and fontsize < 9
    cols = {"rotation": 90 if steep else 45, "fontsize": fontsize, "ha": "center" if steep else "right", "va": "top",
            "rotation_mode": "default" if steep else "anchor"}
    rows = {"rotation": 0, "fontsize": fontsize, "ha": "right", "va": "center_baseline", "rotation_mode": "default"}
    return cols, rows


def token_axes(ax, row_labels, col_labels, fontsize=10, show_rows=True, show_cols=True, styled=False):
    """Token labels on the axes; a panel inside a grid gets no axis at all (cheaper to lay out and draw).
    ``styled``: the axes were given their tick style already (a head grid relabelled)."""
    cols, rows = token_label_styles(len(col_labels), fontsize)
    ax.xaxis.set_visible(show_cols)
    ax.yaxis.set_visible(show_rows)
    if show_cols:
        ax.set_xticks(range(len(col_labels)), col_labels, **cols)
    if show_rows:
        ax.set_yticks(range(len(row_labels)), row_labels, fontsize=fontsize)
    if not styled:
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)


def draw_bars(ax, w, labels):
    """Bars with their values written above; return (bars, texts) for updating."""
    x = np.arange(len(w))
    bars = ax.bar(x, w, color=PALETTE[0], width=0.6)
    texts = [ax.text(i, v + 0.02, f"{v:.4f}", ha="center", va="bottom", fontsize=10) for i, v in zip(x, w)]
    ax.set_xticks(x, labels, fontsize=10)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("weight", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    return bars, texts


ENG_FORMAT = ticker.EngFormatter(sep=" ")  # 10 k, 2.5 M

