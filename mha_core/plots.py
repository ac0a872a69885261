"""Static figures of the workbook: attention heatmaps (figures s01 and s02), the
per-head grid, and the counting plots of Problems 3.1 and 4.1.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_model / h``,
``n`` (or ``n_q`` query rows, ``n_k`` key columns). A heatmap's cell (row, column)
is how much the row's query token looks at the column's key token; masks say
True where a query *may attend*, as in :mod:`mha_core.attention`.

Every function returns a :class:`matplotlib.figure.Figure` drawn with Agg and
never calls ``plt.show``: pyplot's global list of figures is not touched, so
nothing is left open, and a returned figure shows itself in a notebook as PNG
(while nbgrader runs a notebook, as one line naming it: see :class:`WorkbookFigure`).
"""

import base64
import html
import io

import matplotlib
import numpy as np
from matplotlib import colors, ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import _validate as check
from . import drawing
from . import heads
from .counting import flop_count, parameter_count
from .layer import MultiHeadAttention, shared_projection_attention

EXAMPLE_TOKENS = "the cat sat on the mat because it was tired".split()  # Level 2's sentence, n = 10

CMAP = "viridis"  # colour-blind safe and readable in greyscale
MASKED_NOTE = "hatched = masked: may not attend"
UNTRAINED = "random (untrained) weights"  # said in the title of every figure drawn from random projections
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

    def _repr_html_(self):
        """The PNG as an <img> with its alt text (JupyterLab shows a PNG output without one)."""
        png = self._repr_png_()
        if png is None or not self.alt:
            return None
        data = base64.b64encode(png).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{html.escape(self.alt)}">'

    def _repr_png_(self):
        if headless():
            return None
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

    def _repr_pretty_(self, printer, cycle):
        titles = [self.get_suptitle()] + [ax.get_title() for ax in self.axes]
        title = next((t for t in titles if t), "")
        named = f"figure: {title}" if title else "figure"
        printer.text(f"[{named}]\n(drawn when you run the notebook, not when it is graded)" if headless()
                     else f"<{named}>")


def _unseen(title):
    """What a figure builder returns under nbgrader: an empty figure that names itself."""
    fig = WorkbookFigure()
    fig.suptitle(title)
    return fig


def example_embeddings(n, d_model, seed=0):
    """A reproducible ``(n, d_model)`` float64 input: standard normal rows.

    Rows do not depend on ``n``: the first rows of a longer input are the same.
    """
    n = check.positive_int("n", n)
    d_model = check.positive_int("d_model", d_model)
    return np.random.default_rng(seed).standard_normal((n, d_model))


def head_options(d_model):
    """The valid numbers of heads for ``d_model``: its divisors, ascending."""
    d_model = check.positive_int("d_model", d_model)
    small = [k for k in range(1, int(d_model**0.5) + 1) if d_model % k == 0]
    return sorted(set(small + [d_model // k for k in small]))


# --- checks -----------------------------------------------------------------


def _labels(name, labels, size, axis_name):
    if labels is None:
        return [str(i + 1) for i in range(size)]
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a sequence of {size} labels, one per {axis_name}, got a string")
    labels = [str(t) for t in labels]
    if len(labels) != size:
        raise ValueError(f"{name} must hold {size} labels, one per {axis_name}, got {len(labels)}")
    return labels


def _matrix(name, matrix, mask, ndim):
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


def _kind(kind):
    if kind not in ("weights", "scores"):
        raise ValueError(f"kind must be 'weights' or 'scores', got {kind!r}")
    return kind


# --- heatmaps ---------------------------------------------------------------


def weights_norm():
    """The colour scale of attention weights: linear from 0 to 1, so that colour compares like the numbers."""
    return colors.Normalize(vmin=0.0, vmax=1.0)


def _untrained(title, untrained):
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


def _token_axes(ax, row_labels, col_labels, fontsize=10, show_rows=True, show_cols=True, styled=False):
    """Token labels on the axes; a panel inside a grid gets no axis at all (cheaper to lay out and draw).
    ``styled``: the axes were given their tick style already (a head grid relabelled)."""
    steep = len(col_labels) > 10 and fontsize < 9  # small panels: vertical labels do not collide
    ax.xaxis.set_visible(show_cols)
    ax.yaxis.set_visible(show_rows)
    if show_cols:
        ax.set_xticks(range(len(col_labels)), col_labels, rotation=90 if steep else 45, fontsize=fontsize,
                      ha="center" if steep else "right", va="top", rotation_mode="default" if steep else "anchor")
    if show_rows:
        ax.set_yticks(range(len(row_labels)), row_labels, fontsize=fontsize)
    if not styled:
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)


def heatmap(matrix, row_labels=None, col_labels=None, title=None, mask=None, annotate=None, kind="weights",
            ax=None, xlabel="key token (column)", ylabel="query token (row)", norm=None, untrained=False):
    """Figure s01: one head's n_q x n_k attention weights (or scores).

    Row i is query token i, column j key token j; cell (i, j) is how much token i
    looks at token j. ``mask`` (True = may attend) hatches the cells that are not
    allowed instead of colouring them as zero. ``annotate=None`` writes the values
    in the cells when both sides have at most 12 tokens. ``kind`` is "weights"
    (linear colour scale 0..1) or "scores" (scale from the data). ``untrained=True``
    adds "random (untrained) weights" to the title. Returns the Figure
    (``ax.figure`` when drawing on a given ``ax``).
    """
    kind = _kind(kind)
    data, mask = _matrix("matrix", matrix, mask, 2)
    n_rows, n_cols = data.shape
    row_labels = _labels("row_labels", row_labels, n_rows, "row (query token)")
    col_labels = _labels("col_labels", col_labels, n_cols, "column (key token)")
    if annotate is None:
        annotate = max(n_rows, n_cols) <= ANNOTATE_MAX
    if norm is None:
        norm = weights_norm() if kind == "weights" else None
    if title is None:
        title = f"Attention {kind}: {n_rows} queries × {n_cols} keys"
    title = _untrained(title, untrained)
    if ax is None and headless():
        return _unseen(title)
    if ax is None:
        side = max(n_rows, n_cols)
        width = min(3.2 + 0.5 * n_cols, 12) if side <= 24 else 10
        height = min(1.8 + 0.5 * n_rows, 11) if side <= 24 else 9
        fig = WorkbookFigure(figsize=(width, height))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    fontsize = 10 if max(n_rows, n_cols) <= 16 else 7
    image, _ = draw_heatmap(ax, data, mask, norm, annotate, fontsize=9 if n_cols <= 10 else 8)
    _token_axes(ax, row_labels, col_labels, fontsize=fontsize)
    masked = mask is not None and not mask.all()
    ax.set_xlabel(xlabel + (f"\n({MASKED_NOTE})" if masked else ""), fontsize=11)
    ax.set_ylabel(ylabel, fontsize=11)
    ax.set_title(title, fontsize=12)
    bar = fig.colorbar(image, ax=ax, shrink=0.85, pad=0.02)
    bar.set_label(WEIGHT_LABEL if kind == "weights" else "score", fontsize=10)
    shown = data if mask is None else np.ma.masked_array(data, ~mask)  # (masked: the name is taken)
    fig.alt = describe_rows(shown, row_labels, col_labels, title.replace("\n", ", "),
                            "key" if kind == "weights" else "score")
    return fig


def describe_rows(data, row_labels, col_labels, name="Attention weights", what="key"):
    """Alt text from the data: each query's strongest ``what`` (key, or score) and its value (the first 12
    rows, then how many more)."""
    w = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(data, float)), -np.inf)
    n_q, n_k = w.shape
    parts = [f"{row_labels[i]} → {col_labels[j]} {w[i, j]:.2f}" for i, j in enumerate(w.argmax(axis=1))]
    more = [f"… {n_q - 12} more rows"] if n_q > 12 else []
    return f"{name}, {n_q} queries × {n_k} keys. Strongest {what} of each query: " + "; ".join(parts[:12] + more) + "."


PLACES = ("itself", "the previous token", "the first token", "another token")  # of a self-attention row's top key


def describe_panel(w, name):
    """Alt text for one head's panel: where its rows' strongest weights fall (in a square panel: itself,
    the previous token, the first token or another; else key j), and how strong they are on average."""
    w = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(w, float)), -np.inf)
    n_q, n_k = w.shape
    top = w.argmax(axis=1)
    if n_q == n_k:
        where = [PLACES[0] if j == i else PLACES[1] if j == i - 1 else PLACES[2] if j == 0 else PLACES[3]
                 for i, j in enumerate(top)]
        order = PLACES
    else:
        where = [f"key {j + 1}" for j in top]
        order = dict.fromkeys(where)
    said = ", ".join(f"{place} in {where.count(place)}" for place in order if place in where)
    return f"{name}: strongest key is {said} of {n_q} rows (mean top weight {np.mean(w.max(axis=1)):.2f})"


DECODER_LABEL = "decoder: target words\n(query, one per row)"
ENCODER_LABEL = "encoder: source words (keys and values, one per column)"


def cross_heatmap(weights, query_tokens, key_tokens, title=None, mask=None, annotate=None, untrained=False):
    """Figure s02: cross-attention weights, n_q decoder (query) rows x n_k encoder (key) columns.

    The rows are the target sentence (decoder, queries), the columns the source sentence
    (encoder, keys and values); the axis labels say which is which.
    """
    data, _ = _matrix("weights", weights, mask, 2)
    n_q, n_k = data.shape
    if title is None:
        title = f"Cross-attention: {n_q} decoder queries × {n_k} encoder keys"
    return heatmap(
        data, _labels("query_tokens", query_tokens, n_q, "row (decoder query token)"),
        _labels("key_tokens", key_tokens, n_k, "column (encoder key token)"), title=title, mask=mask,
        annotate=annotate, xlabel=ENCODER_LABEL, ylabel=DECODER_LABEL, untrained=untrained,
    )


def grid_shape(panels):
    """(rows, columns) of a grid of ``panels`` heads: at most 4 columns."""
    cols = min(panels, 4)
    return -(-panels // cols), cols


def head_grid(weights, row_labels=None, col_labels=None, mask=None, title=None, max_heads=None, first_head=1,
              head_titles=None, untrained=False):
    """All h heads' attention weights (array (h, n_q, n_k)), one panel per head, one shared colour scale.

    Panels are titled "head 1".."head h" (numbered from ``first_head``); token labels
    are written on the left column and bottom row. ``max_heads`` caps the panels shown.
    ``head_titles`` (one per head) replace "head i"; ``untrained=True`` adds
    "random (untrained) weights" to the title.
    """
    data, mask = _matrix("weights", weights, mask, 3)
    h, n_q, n_k = data.shape
    row_labels = _labels("row_labels", row_labels, n_q, "row (query token)")
    col_labels = _labels("col_labels", col_labels, n_k, "column (key token)")
    shown = h if max_heads is None else min(h, check.positive_int("max_heads", max_heads))
    title = _untrained(title or f"Attention weights of {h} heads", untrained)
    if head_titles is not None:
        head_titles = _labels("head_titles", head_titles, h, "head")
    if headless():
        return _unseen(title)
    fig, images = build_head_grid(shown, row_labels, col_labels, title)
    for k, image in enumerate(images):
        image.set_data(masked(data[k], None if mask is None else mask[k]))
        image.axes.set_title(f"head {first_head + k}" if head_titles is None else head_titles[k], fontsize=10)
    if mask is not None and not mask[:shown].all():
        fig.text(0.01, 0.005, MASKED_NOTE, ha="left", va="bottom", fontsize=9, color="0.3")
    if shown < h:
        fig.text(0.99, 0.005, f"showing {shown} of {h} heads", ha="right", va="bottom", fontsize=9, color="0.3")
    fig.alt = (f"{title.replace(chr(10), ', ')}: {shown} panels of {n_q} × {n_k} weights. " + "; ".join(
        describe_panel(masked(data[k], None if mask is None else mask[k]), image.axes.get_title())
        for k, image in enumerate(images)) + ".")
    return fig


def build_head_grid(panels, row_labels, col_labels, title, figure_width=None, dpi=100):
    """The layout of a head grid with empty (zero) panels; return (figure, images).

    ``figure_width`` (inches) fixes the width; panels are then square and share it.
    """
    n_q, n_k = len(row_labels), len(col_labels)
    rows, cols = grid_shape(panels)
    if figure_width is None:
        panel = 1.0 + 0.16 * max(n_q, n_k) if max(n_q, n_k) <= 16 else 3.6
    else:
        panel = min((figure_width - 1.6) / cols, 3.0)
    fig = WorkbookFigure(figsize=(cols * panel + 1.6, rows * panel * n_q / max(n_q, n_k) + 1.0), dpi=dpi)
    fontsize = 8 if max(n_q, n_k) <= 16 else 6
    axes = fig.subplots(rows, cols, squeeze=False)
    images = []
    norm = weights_norm()
    for k, ax in enumerate(axes.flat):
        if k >= panels:
            ax.remove()
            continue
        r, c = divmod(k, cols)
        image, _ = draw_heatmap(ax, np.zeros((n_q, n_k)), norm=norm)
        last_row = k + cols >= panels
        _token_axes(ax, row_labels, col_labels, fontsize=fontsize, show_rows=c == 0, show_cols=last_row)
        ax.set_title(f"head {k + 1}", fontsize=10)
        images.append(image)
    fig.supxlabel("key token (column)", fontsize=11)
    fig.supylabel("query token (row)", fontsize=11)
    fig.suptitle(title, fontsize=12)
    bar = fig.colorbar(images[0], ax=[image.axes for image in images], shrink=0.8, pad=0.02)
    bar.set_label(WEIGHT_LABEL, fontsize=10)
    return fig, images


def relabel_head_grid(fig, images, row_labels, col_labels, title):
    """Re-use a head grid from :func:`build_head_grid` for new tokens (a new n_q, n_k).

    The panels are emptied (zeros) and get the new ticks; the figure is not rebuilt,
    which costs about half as much as building a new one.
    """
    n_q, n_k = len(row_labels), len(col_labels)
    fontsize = 8 if max(n_q, n_k) <= 16 else 6
    cols = grid_shape(len(images))[1]
    for k, image in enumerate(images):
        ax = image.axes
        image.set_data(np.zeros((n_q, n_k)))
        image.set_extent((-0.5, n_k - 0.5, n_q - 0.5, -0.5))
        ax.patches[0].set_bounds(-0.5, -0.5, n_k, n_q)  # the hatched background
        ax.set_xlim(-0.5, n_k - 0.5)
        ax.set_ylim(n_q - 0.5, -0.5)
        _token_axes(ax, row_labels, col_labels, fontsize=fontsize, show_rows=k % cols == 0,
                    show_cols=k + cols >= len(images), styled=True)
    fig.suptitle(title, fontsize=12)
    return fig, images


# --- a head grid sized in pixels for a projector --------------------------------------------------

# (rows, columns) of the readable grid, most panels first.
READABLE_LAYOUTS = ((2, 4), (2, 3), (1, 4), (2, 2), (1, 3), (1, 2), (1, 1))
LABEL_PITCH = 1.15  # a token label needs this many times its font size of axis (no overlap)


def min_text_px(fig):
    """The smallest visible text of ``fig`` in pixels at its own size (font size in points · dpi / 72)."""
    sizes = [t.get_fontsize() for t in _texts(fig) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * fig.dpi / 72 if sizes else None


def _texts(fig, hidden=False):
    """The texts of ``fig`` that can be seen (with ``hidden``, also those of hidden axes): its own, its
    legends', and those of its axes (titles, tick and axis labels, legends). Quicker than ``findobj``, which
    makes every axis build its ticks."""
    yield from fig.texts
    for legend in fig.legends:
        yield from (*legend.get_texts(), legend.get_title())
    for ax in fig.axes:
        if not (hidden or ax.get_visible()):
            continue
        yield from ax.texts
        yield from (ax.title, ax._left_title, ax._right_title)
        for axis in (ax.xaxis, ax.yaxis):
            if hidden or axis.get_visible():
                yield from (axis.label, axis.offsetText, *axis.get_ticklabels())
        legend = ax.get_legend()
        if legend is not None:
            yield from (*legend.get_texts(), legend.get_title())


def raise_text(fig, px):
    """Enlarge every text of ``fig`` smaller than ``px`` pixels to ``px`` (legends, ticks and titles too, and
    the tick labels an axis makes later, for new ticks)."""
    px = float(px)
    if px <= 0:
        raise ValueError(f"px must be a positive number of pixels, got {px}")
    points = px * 72 / fig.dpi
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            if labels and min(t.get_fontsize() for t in labels) < points:
                axis.set_tick_params(which="both", labelsize=points)
    for text in _texts(fig, hidden=True):
        if text.get_fontsize() < points:
            text.set_fontsize(points)
    return fig


def fit_head_grid(h, n, longest, box, text_px=15):
    """How many of h heads' n x n panels fit ``box`` = (width, height) pixels with readable labels.

    Every token label is ``text_px`` high and needs LABEL_PITCH times that along its axis;
    ``longest`` is the longest token's width in characters. Returns (rows, cols, panel_px,
    label_step): the most panels (at most h) whose panels hold every label; when not even
    one does, one panel labelling every ``label_step``-th token.
    """
    h, n = check.positive_int("h", h), check.positive_int("n", n)
    width, height = box
    margins = _grid_margins(longest, text_px)
    need = max(n * LABEL_PITCH * text_px, 9.5 * text_px)  # and room for a two-line title
    best = None
    for rows, cols in READABLE_LAYOUTS:
        if rows * cols > h:
            continue
        panel = _panel_px(rows, cols, width, height, margins)
        if panel >= need and (best is None or rows * cols > best[0] * best[1]):
            best = (rows, cols, panel)
    if best is None:
        panel = _panel_px(1, 1, width, height, margins)
        return 1, 1, panel, int(np.ceil(need / panel))
    return (*best, 1)


def _grid_margins(longest, fs):
    """Pixels around the panels: left, right, top, bottom, a panel's title, the gap between panels."""
    label = 0.62 * fs * longest + 8  # the longest token label (DejaVu Sans: about 0.6 em a character)
    line = 1.35 * fs
    return {"left": line + label + 4, "right": 3.5 * fs + 2 * line + 28, "top": 2 * 1.25 * (fs + 2) + 6,
            "bottom": label + line + 8, "title": 2 * 1.1 * fs + 8, "gap": 0.8 * fs}  # titles: up to 2 lines


def _panel_px(rows, cols, width, height, m):
    across = (width - m["left"] - m["right"] - (cols - 1) * m["gap"]) / cols
    down = (height - m["top"] - m["bottom"] - rows * m["title"] - (rows - 1) * m["gap"]) / rows
    return max(0.0, min(across, down))


class ReadableHeadGrid:
    """A head grid drawn for a screen: ``box`` = (width, height) pixels at 72 dpi (1 point = 1 pixel),
    every text at least ``text_px`` pixels. Built once with room for 8 panels; :meth:`layout` moves,
    shows and relabels the same axes for a new number of panels or tokens (nothing is rebuilt)."""

    def __init__(self, box, text_px=15, max_tokens=24):
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        width, height = (check.positive_int("box", v) for v in box)
        self.box, self.fs = (width, height), float(text_px)
        self.max_tokens = check.positive_int("max_tokens", max_tokens)
        self.figure = WorkbookFigure(figsize=(width / 72, height / 72), dpi=72, layout="none")
        norm = weights_norm()
        self.images, self.xlabels, self.ylabels = [], [], []
        pad = 4 / 72  # inches between a panel and its token labels
        for _ in range(max(r * c for r, c in READABLE_LAYOUTS)):
            ax = self.figure.add_axes((0, 0, 0.1, 0.1))
            image, _ = draw_heatmap(ax, np.zeros((1, 1)), norm=norm)
            ax.set_title("", fontsize=self.fs)
            ax.xaxis.set_visible(False)  # token labels are plain texts: no tick machinery on every redraw
            ax.yaxis.set_visible(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
            below = blended_transform_factory(ax.transData, ax.transAxes) + ScaledTranslation(
                0, -pad, self.figure.dpi_scale_trans)
            left = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(
                -pad, 0, self.figure.dpi_scale_trans)
            self.xlabels.append([ax.text(0, 0, "", transform=below, rotation=90, ha="center", va="top",
                                         fontsize=self.fs, visible=False) for _ in range(self.max_tokens)])
            self.ylabels.append([ax.text(0, 0, "", transform=left, ha="right", va="center", fontsize=self.fs,
                                         visible=False) for _ in range(self.max_tokens)])
            self.images.append(image)
        self.cax = self.figure.add_axes((0, 0, 0.1, 0.1))
        bar = self.figure.colorbar(self.images[0], cax=self.cax, ticks=np.linspace(0, 1, 6))  # fixed: no locator
        bar.set_label(WEIGHT_LABEL, fontsize=self.fs)
        self.cax.tick_params(labelsize=self.fs)
        self.title = self.figure.suptitle("", fontsize=self.fs + 2, y=1 - 4 / height, va="top")
        self.xlabel = self.figure.text(0, 0, "key token (column)", fontsize=self.fs, ha="center", va="bottom")
        self.ylabel = self.figure.text(0, 0, "query token (row)", fontsize=self.fs, rotation=90, ha="left",
                                       va="center")
        self.shape = None

    def layout(self, rows, cols, panel, tokens, step=1):
        """Show rows x cols panels of ``panel`` pixels over ``tokens`` (every ``step``-th labelled)."""
        width, height = self.box
        n = len(tokens)
        if n > self.max_tokens:
            raise ValueError(f"tokens must hold at most max_tokens={self.max_tokens} tokens, got {n}")
        m = _grid_margins(max(len(t) for t in tokens), self.fs)
        used_w = cols * panel + (cols - 1) * m["gap"]
        used_h = rows * (panel + m["title"]) + (rows - 1) * m["gap"]
        left = m["left"]
        top = m["top"]
        ticks = list(range(0, n, step))
        for k, image in enumerate(self.images):
            ax = image.axes
            shown = k < rows * cols
            ax.set_visible(shown)
            if not shown:
                continue
            r, c = divmod(k, cols)
            x = left + c * (panel + m["gap"])
            y = top + r * (panel + m["title"] + m["gap"]) + m["title"]  # from the top
            ax.set_position((x / width, 1 - (y + panel) / height, panel / width, panel / height))
            image.set_data(np.zeros((n, n)))
            image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
            ax.patches[0].set_bounds(-0.5, -0.5, n, n)  # the hatched background
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_ylim(n - 0.5, -0.5)
            bottom, first_column = k + cols >= rows * cols, c == 0
            for i, (xt, yt) in enumerate(zip(self.xlabels[k], self.ylabels[k])):
                on = i < n and i % step == 0
                xt.set(visible=on and bottom, text=tokens[i] if on else "", x=i)
                yt.set(visible=on and first_column, text=tokens[i] if on else "", y=i)
        bar_h = min(used_h - m["title"], 0.9 * (height - top))
        self.cax.set_position(((left + used_w + 12) / width, 1 - (top + m["title"] + bar_h) / height,
                               18 / width, bar_h / height))
        below = top + used_h + 0.62 * self.fs * max(len(t) for t in tokens) + 8 + 1.35 * self.fs
        self.xlabel.set_position(((left + used_w / 2) / width, 1 - min(below, height - 4) / height))
        self.ylabel.set_position((4 / width, 1 - (top + used_h / 2) / height))
        self.shape = (rows, cols, panel, n, step)
        return self.images[:rows * cols]


class ReadableHeatmap:
    """One n_q x n_k heatmap drawn for a screen: ``box`` = (width, height) pixels at 72 dpi, every text at
    least ``text_px`` pixels, the values written in the cells when they fit. Built once for up to
    ``max_rows`` x ``max_cols``; :meth:`layout` resizes and relabels the same axes (nothing is rebuilt)."""

    def __init__(self, box, text_px=15, max_rows=12, max_cols=12, xlabel="key token (column)",
                 ylabel="query token (row)"):
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        width, height = (check.positive_int("box", v) for v in box)
        self.box, self.fs = (width, height), float(text_px)
        self.max_rows, self.max_cols = check.positive_int("max_rows", max_rows), check.positive_int("max_cols", max_cols)
        self.figure = WorkbookFigure(figsize=(width / 72, height / 72), dpi=72, layout="none")
        ax = self.ax = self.figure.add_axes((0, 0, 0.1, 0.1))
        self.image, _ = draw_heatmap(ax, np.zeros((1, 1)), norm=weights_norm())
        ax.xaxis.set_visible(False)
        ax.yaxis.set_visible(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
        pad = 4 / 72
        below = blended_transform_factory(ax.transData, ax.transAxes) + ScaledTranslation(0, -pad, self.figure.dpi_scale_trans)
        left = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(-pad, 0, self.figure.dpi_scale_trans)
        self.xlabels = [ax.text(0, 0, "", transform=below, rotation=90, ha="center", va="top", fontsize=self.fs,
                                visible=False) for _ in range(self.max_cols)]
        self.ylabels = [ax.text(0, 0, "", transform=left, ha="right", va="center", fontsize=self.fs, visible=False)
                        for _ in range(self.max_rows)]
        self.cells = [ax.text(j, i, "", ha="center", va="center", fontsize=self.fs, zorder=2, visible=False)
                      for i in range(self.max_rows) for j in range(self.max_cols)]
        self.cax = self.figure.add_axes((0, 0, 0.1, 0.1))
        bar = self.figure.colorbar(self.image, cax=self.cax, ticks=np.linspace(0, 1, 6))
        bar.set_label(WEIGHT_LABEL, fontsize=self.fs)
        self.cax.tick_params(labelsize=self.fs)
        self.title = self.figure.suptitle("", fontsize=self.fs + 2, y=1 - 4 / height, va="top")
        self.xlabel = self.figure.text(0, 0, xlabel, fontsize=self.fs, ha="center", va="bottom")
        self.ylabel = self.figure.text(0, 0, ylabel, fontsize=self.fs, rotation=90, ha="left", va="center",
                                       multialignment="center")
        self.shape = None
        self.annotated = False

    def layout(self, row_labels, col_labels):
        """Size the cells for len(row_labels) x len(col_labels) (square, as large as the box allows, at most
        3.5 text heights) and write the labels; return the dynamic artists (the image and the cell texts)."""
        n_q, n_k = len(row_labels), len(col_labels)
        if not (1 <= n_q <= self.max_rows and 1 <= n_k <= self.max_cols):
            raise ValueError(f"the heatmap holds 1 to {self.max_rows} rows and 1 to {self.max_cols} columns, "
                             f"got {n_q} x {n_k}")
        width, height = self.box
        fs, line = self.fs, 1.35 * self.fs
        label_w = lambda labels: 0.62 * fs * max(len(t) for t in labels) + 8  # noqa: E731
        ylabel_lines = self.ylabel.get_text().count("\n") + 1
        left = ylabel_lines * line + 8 + label_w(row_labels)
        right = 3.5 * fs + 2 * line + 28
        top = 2 * 1.35 * (fs + 2) + 10
        bottom = label_w(col_labels) + (self.xlabel.get_text().count("\n") + 1) * line + 8
        cell = min((width - left - right) / n_k, (height - top - bottom) / n_q, 3.5 * fs)
        used_w, used_h = cell * n_k, cell * n_q
        self.ax.set_position((left / width, 1 - (top + used_h) / height, used_w / width, used_h / height))
        self.image.set_data(np.zeros((n_q, n_k)))
        self.image.set_extent((-0.5, n_k - 0.5, n_q - 0.5, -0.5))
        self.ax.patches[0].set_bounds(-0.5, -0.5, n_k, n_q)
        self.ax.set_xlim(-0.5, n_k - 0.5)
        self.ax.set_ylim(n_q - 0.5, -0.5)
        step_x = int(np.ceil(LABEL_PITCH * fs / cell))  # 1 (every label) when a cell is at least LABEL_PITCH text heights
        step_y = int(np.ceil(LABEL_PITCH * fs / cell))
        for j, text in enumerate(self.xlabels):
            text.set(visible=j < n_k and j % step_x == 0, text=col_labels[j] if j < n_k else "", x=j)
        for i, text in enumerate(self.ylabels):
            text.set(visible=i < n_q and i % step_y == 0, text=row_labels[i] if i < n_q else "", y=i)
        self.annotated = cell >= 2.6 * fs  # "0.93" fits in the cell
        shown = []
        for k, text in enumerate(self.cells):
            i, j = divmod(k, self.max_cols)
            on = self.annotated and i < n_q and j < n_k
            text.set_visible(on)
            if on:
                shown.append(text)
        bar_h = max(used_h, min(20 * fs, height - top - 10))  # room for its ticks and its two-line label
        self.cax.set_position(((left + used_w + 12) / width, 1 - (top + bar_h) / height, 18 / width,
                               bar_h / height))
        # The axis titles centred on the cells, but never past the figure's edges.
        half_w = 0.31 * fs * max(len(t) for t in self.xlabel.get_text().split("\n")) + 4
        half_h = 0.31 * fs * max(len(t) for t in self.ylabel.get_text().split("\n")) + 4
        x = min(max(left + used_w / 2, half_w), width - half_w)
        y = min(max(top + used_h / 2, half_h), height - bottom - 4)
        below = top + used_h + label_w(col_labels) + (self.xlabel.get_text().count("\n") + 1) * line
        self.xlabel.set_position((x / width, 1 - min(below, height - 4) / height))
        self.ylabel.set_position((4 / width, 1 - y / height))
        self.shape = (n_q, n_k, cell)
        self.texts = shown
        return [self.image, *shown]

    def set_data(self, data):
        """New values in the same layout: the image and the numbers in its cells."""
        self.image.set_data(masked(np.asarray(data, float), None))
        if self.texts:
            update_texts(self._grid_texts(data.shape), self.image)

    def _grid_texts(self, shape):
        n_q, n_k = shape
        return [self.cells[i * self.max_cols + j] for i in range(n_q) for j in range(n_k)]


# --- figures from constructed heads ------------------------------------------

PATTERN_TITLES = {
    "previous": "previous token",
    "same word": "same word elsewhere",
    "first": "first token (sink)",
    "pronoun": "pronoun → its noun",
    "translation": "word → its translation",
    "same position": "same position (word by word)",
    "random": "random projections",
}


def sentence_weights(tokens=None, patterns=("previous", "same word", "first", "pronoun"), source="constructed",
                     d_model=None, seed=0, shared=False):
    """``(weights (h, n, n), untrained)`` of self-attention over ``tokens`` (default: Level 2's sentence).

    ``source="constructed"``: heads from :func:`mha_core.heads.constructed` with ``patterns``;
    ``source="random"``: a seeded block of random projections (as many heads, width
    ``d_model`` or 16·h) on the same one-hot embeddings. ``shared=True`` makes every head
    use head 1's W_Q, W_K, W_V (:func:`mha_core.shared_projection_attention`, Problem 3.3).
    """
    tokens = EXAMPLE_TOKENS if tokens is None else tokens
    if source not in ("constructed", "random"):
        raise ValueError(f"source must be 'constructed' or 'random', got {source!r}")
    if not isinstance(shared, (bool, np.bool_)):
        raise ValueError(f"shared must be True or False, got {shared!r}")
    c = heads.constructed(tokens, patterns, d_model=d_model, seed=seed)
    block = c.block
    if source == "random":
        block = MultiHeadAttention.from_seed(block.d_model, block.h, seed)
    if shared:
        _, weights = shared_projection_attention(c.x, None, *block.head_weights(0), block.W_O, block.h)
    else:
        _, weights = block(c.x)
    return weights, source == "random"


def sentence_heatmap(tokens=None, pattern="pronoun", source="constructed", title=None, seed=0):
    """Figure s01 from one head that really computes ``pattern`` (:mod:`mha_core.heads`) on ``tokens``.

    ``source="random"`` draws a head of random projections instead, and says so in the title.
    """
    if pattern not in heads.SELF_PATTERNS:
        raise ValueError(f"pattern must be one of {heads.SELF_PATTERNS}, got {pattern!r}")
    tokens = EXAMPLE_TOKENS if tokens is None else tokens
    weights, untrained = sentence_weights(tokens, (pattern,), source, seed=seed)
    if title is None:
        title = ("Figure s01: one head's weights, softmax($Q_i K_i^T / \\sqrt{d_k}$)" if untrained
                 else f"Figure s01: a head built for {PATTERN_TITLES[pattern]}")
    return heatmap(weights[0], tokens, tokens, title=title, untrained=untrained)


def sentence_grid(tokens=None, patterns=("previous", "same word", "first", "pronoun"), source="constructed",
                  shared=False, title=None, seed=0):
    """The head grid (Problem 3.3) over ``tokens``: one constructed head per pattern, or random heads.

    ``shared=True``: every head uses head 1's projections, so every panel is head 1's.
    """
    tokens = EXAMPLE_TOKENS if tokens is None else tokens
    weights, untrained = sentence_weights(tokens, patterns, source, seed=seed, shared=shared)
    h = len(weights)
    if shared:
        names = ["head 1"] + [f"head {i + 1} (= head 1)" for i in range(1, h)]
    elif untrained:
        names = [f"head {i + 1}" for i in range(h)]
    else:
        names = [f"head {i + 1}: {PATTERN_TITLES[p]}" for i, p in enumerate(patterns)]
    if title is None:
        title = (f"All {h} heads sharing head 1's projections: 1 pattern, {h} times" if shared
                 else f"{h} heads, each with its own projections: {h} patterns")
    return head_grid(weights, list(tokens), list(tokens), title=title, head_titles=names, untrained=untrained)


def translation_heatmap(source_tokens=None, target_tokens=None, pattern="translation", source="constructed",
                        title=None, seed=0):
    """Figure s02: target (decoder) words attending to source (encoder) words, English → French.

    ``pattern`` is one of :data:`mha_core.heads.CROSS_PATTERNS`; ``source="random"``
    uses random projections and says so in the title.
    """
    if pattern not in heads.CROSS_PATTERNS:
        raise ValueError(f"pattern must be one of {heads.CROSS_PATTERNS}, got {pattern!r}")
    if source not in ("constructed", "random"):
        raise ValueError(f"source must be 'constructed' or 'random', got {source!r}")
    src = heads.EXAMPLE_SOURCE[:6] if source_tokens is None else source_tokens
    tgt = heads.EXAMPLE_TARGET[:3] if target_tokens is None else target_tokens
    c = heads.translation(src, tgt, (pattern,), seed=seed)
    block = c.block if source == "constructed" else MultiHeadAttention.from_seed(c.block.d_model, 1, seed)
    _, weights = block(c.x, c.x_kv)
    if title is None:
        title = (f"Figure s02: cross-attention,\n{len(tgt)} target × {len(src)} source words" if source == "random"
                 else f"Figure s02: a cross-attention head built for\n{PATTERN_TITLES[pattern]}, English → French")
    return cross_heatmap(weights[0], c.tokens, c.kv_tokens, title=title, untrained=source == "random")


# --- the head view: where one word looks, every head at once ---------------------

# Each head's line style (with its colour from PALETTE): heads stay apart in greyscale too.
HEAD_DASHES = ("solid", "dashed", "dotted", "dashdot", (0, (6, 2, 1, 2)), (0, (1, 4)), (0, (8, 4)))
HEAD_VIEW_MAX_ROWS = 16  # tokens a side; more would not fit a projector's height
_HV = {"width": 640, "title": 58, "legend_row": 25, "header": 32, "row": 27, "bottom": 8}  # pixels


def head_view_style(w):
    """(line widths in points, alphas) of lines of weight ``w``: both grow with the weight; a line
    of weight below 0.02 is not drawn (alpha 0)."""
    w = np.clip(np.asarray(w, dtype=np.float64), 0.0, 1.0)
    return 0.5 + 5.5 * w, np.where(w < 0.02, 0.0, 0.15 + 0.85 * w)


def build_head_view(rows, heads_shown, dpi=100):
    """The layout of a head view with room for ``rows`` tokens a side and ``heads_shown`` heads;
    return ``(figure, parts)``. Every text and line is in ``parts`` and set by :func:`draw_head_view`,
    so a new sentence, query or set of heads never needs a new layout."""
    rows = check.positive_int("rows", rows)
    heads_shown = check.positive_int("heads_shown", heads_shown)
    if rows > HEAD_VIEW_MAX_ROWS:
        raise ValueError(f"rows must be at most {HEAD_VIEW_MAX_ROWS} (tokens a side), got {rows}")
    if heads_shown > len(PALETTE):
        raise ValueError(f"heads_shown must be at most {len(PALETTE)} (one colour each), got {heads_shown}")
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    g = _HV
    top = g["title"] + heads_shown * g["legend_row"] + g["header"]  # the legend: one row per head  # y of the first token row's top
    height = top + rows * g["row"] + g["bottom"]
    fig = WorkbookFigure(figsize=(g["width"] / dpi, height / dpi), dpi=dpi, layout="none")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, g["width"])
    ax.set_ylim(height, 0)  # pixels, y down
    ax.axis("off")
    x_q, x_k = 0.26 * g["width"], 0.74 * g["width"]
    ys = top + (np.arange(rows) + 0.5) * g["row"]
    parts = {
        "x": (x_q, x_k), "ys": ys, "rows": rows,
        "title": ax.text(g["width"] / 2, 6, "", ha="center", va="top", fontsize=12),
        "headers": [ax.text(x_q, top - 4, "", ha="right", va="bottom", fontsize=11, color="0.25"),
                    ax.text(x_k, top - 4, "", ha="left", va="bottom", fontsize=11, color="0.25")],
        "queries": [ax.text(x_q, y, "", ha="right", va="center", fontsize=11) for y in ys],
        "keys": [ax.text(x_k, y, "", ha="left", va="center", fontsize=11) for y in ys],
        # The chosen word, drawn over its plain copy: bold on a pale box.
        "highlight": ax.text(x_q, ys[0], "", ha="right", va="center", fontsize=11, fontweight="bold",
                             bbox={"boxstyle": "round,pad=0.25", "facecolor": "#FFF1B8", "edgecolor": "0.2",
                                   "linewidth": 1.2}),
        "swatches": [], "names": [], "values": [], "lines": [],
    }
    for k in range(heads_shown):
        x0, y = 0.1 * g["width"], g["title"] + (k + 0.5) * g["legend_row"]
        swatch = Line2D([x0, x0 + 34], [y, y], color=PALETTE[k], lw=3.5, linestyle=HEAD_DASHES[k])
        ax.add_line(swatch)
        parts["swatches"].append(swatch)
        parts["names"].append(ax.text(x0 + 42, y, "", ha="left", va="center", fontsize=11))
        parts["values"].append(ax.text(x0 + 42, y, "", ha="left", va="center", fontsize=11))  # where it looks
        lines = LineCollection(np.zeros((rows, 2, 2)), colors=PALETTE[k], linestyles=HEAD_DASHES[k],
                               capstyle="round")
        ax.add_collection(lines)
        parts["lines"].append(lines)
    return fig, parts


def head_view_artists(parts):
    """The artists a new query changes (drawn over a saved background): the lines, where each head looks
    most, the chosen word. The title, the heads' names and the tokens change only with the heads or the
    sentence (a new background)."""
    return [*parts["values"], *parts["lines"], parts["highlight"]]


def _strongest(w, key_tokens, query, self_attention):
    """Where a head's weights ``w`` (n_k,) are largest, in words: "“cat” 0.88", "itself 0.58"."""
    j = int(np.argmax(w))
    where = "itself" if self_attention and j == query else f"“{key_tokens[j]}”"
    return f"{where} {w[j]:.2f}" if w[j] >= 0.5 else f"spread out, ≤ {w[j]:.2f}"


def draw_head_view(parts, query_tokens, key_tokens, rows_of_weights, query, head_names, title,
                   headers=("query", "keys"), self_attention=True):
    """Set a head view from :func:`build_head_view`: for head k, lines from the ``query``-th query token to
    every key, of width and opacity growing with ``rows_of_weights[k]`` (its weights, shape (h, n_k)); the
    legend names each head and where it looks most."""
    x_q, x_k = parts["x"]
    ys = parts["ys"]
    w = np.asarray(rows_of_weights, dtype=np.float64)  # (h, n_k)
    h, n_k = w.shape
    parts["title"].set_text(title)
    for text, label in zip(parts["headers"], headers):
        text.set_text(label)
    for k, (swatch, name, lines) in enumerate(zip(parts["swatches"], parts["names"], parts["lines"])):
        shown = k < h
        swatch.set_visible(shown)
        name.set_text(f"{head_names[k]}:" if shown else "")
        parts["values"][k].set_text(_strongest(w[k], key_tokens, query, self_attention) if shown else "")
        lines.set_visible(shown)
        if not shown:
            continue
        offset = (k - (h - 1) / 2) * 4.0  # the heads' lines end side by side at a key
        segments = np.zeros((parts["rows"], 2, 2))
        segments[:n_k] = [[(x_q + 8, ys[query]), (x_k - 8, ys[j] + offset)] for j in range(n_k)]
        widths, alphas = head_view_style(np.concatenate([w[k], np.zeros(parts["rows"] - n_k)]))
        rgba = np.tile(colors.to_rgba(PALETTE[k]), (parts["rows"], 1))
        rgba[:, 3] = alphas
        lines.set_segments(segments)
        lines.set_linewidths(widths)
        lines.set_color(rgba)
    for texts, labels in ((parts["queries"], query_tokens), (parts["keys"], key_tokens)):
        for i, text in enumerate(texts):
            text.set_text(labels[i] if i < len(labels) else "")
    parts["highlight"].set_text(query_tokens[query])
    parts["highlight"].set_y(ys[query])
    # Where each head looks, in a column after the longest name (names change only with the heads).
    figure = parts["title"].figure
    renderer = figure.canvas.get_renderer()
    right = max((name.get_window_extent(renderer).x1 for name in parts["names"] if name.get_text()), default=0)
    x_values = parts["title"].axes.transData.inverted().transform((right, 0))[0] + 8
    for value in parts["values"]:
        value.set_x(x_values)
    parts["weights"] = w
    parts["query"] = query
    return parts


def head_view(tokens, weights, query, key_tokens=None, head_names=None, title=None, untrained=False, dpi=100):
    """Where does one word look? For every head at once (BertViz's head view), lines from the ``query``-th
    token to every key, one colour (and dash) per head, width and opacity growing with the weight.

    Parameters
    ----------
    tokens : the n_q query tokens.
    weights : (h, n_q, n_k) every head's attention weights; row ``query`` of each head is drawn.
    query : index (0-based) of the chosen query token.
    key_tokens : the n_k key tokens (None: ``tokens``, self-attention).
    head_names : one legend entry per head (None: "head 1", ...).
    untrained : True adds "random (untrained) weights" to the title.

    Returns
    -------
    The Figure.
    """
    data, _ = _matrix("weights", weights, None, 3)
    h, n_q, n_k = data.shape
    tokens = _labels("tokens", tokens, n_q, "query row of weights")
    key_tokens = tokens if key_tokens is None else _labels("key_tokens", key_tokens, n_k, "key column of weights")
    if key_tokens is tokens and n_k != n_q:
        raise ValueError(f"key_tokens must be given when weights has n_k = {n_k} keys for n_q = {n_q} queries")
    if isinstance(query, (bool, np.bool_)) or not isinstance(query, (int, np.integer)) or not 0 <= query < n_q:
        raise ValueError(f"query must be the index of a query token, 0 to {n_q - 1}, got {query!r}")
    names = [f"head {k + 1}" for k in range(h)] if head_names is None else _labels("head_names", head_names, h, "head")
    title = _untrained(title or f"Where does “{tokens[query]}” look? {h} heads", untrained)
    if headless():
        return _unseen(title)
    fig, parts = build_head_view(max(n_q, n_k), h, dpi=dpi)
    draw_head_view(parts, tokens, key_tokens, data[:, query, :], int(query), names, title,
                   self_attention=key_tokens is tokens)
    fig.head_view = parts
    return fig


# --- counting plots ---------------------------------------------------------


def _heads(d_model, hs):
    d_model = check.positive_int("d_model", d_model)
    if hs is None:
        return d_model, head_options(d_model)
    hs = list(hs)
    if not hs:
        raise ValueError("hs must hold at least one number of heads")
    for h in hs:
        check.positive_int("hs", h)
        if d_model % h:
            raise ValueError(f"hs must hold divisors of d_model={d_model}, got h={h}")
    return d_model, hs


STAGES = [
    ("projections", "Q, K, V projections"),
    ("scores", "scores $Q_i K_i^T$"),
    ("weighted_sum", "weighted sum of values (weights × $V_i$)"),
    ("output_projection", "output projection $W^O$"),
]


def flop_plot(d_model=512, n=10, hs=None):
    """Problem 3.1: operation counts against h at a fixed d_model (numeric, log-scaled h axis).

    Left, every matrix product stacked: the total is the same for every h. Right, on
    its own (log) scale, what the problem is about: the scores Q_i K_i^T and the weighted
    sum of values, flat, next to the claim "h heads cost h times more", and the softmax's
    h·n² exponentials, the one count that does grow (linearly) with h.
    """
    d_model, hs = _heads(d_model, hs)
    n = check.positive_int("n", n)
    title = "Problem 3.1: h heads of width d_k = d_model/h cost what one head of width d_model costs"
    if headless():
        return _unseen(title)
    fig = WorkbookFigure(figsize=(12, 4.8))
    left, right = fig.subplots(1, 2)
    draw_flops(left, right, d_model, n, hs)
    fig.suptitle(title, fontsize=12)
    counts = [flop_count(d_model, h, n) for h in hs]
    together = ", ".join(f"{c['multiply_adds']:,}" for c in counts)
    attention = ", ".join(f"{c['scores'] + c['weighted_sum']:,}" for c in counts)
    fig.alt = (f"Operation counts against h = {', '.join(map(str, hs))} for d_model = {d_model}, n = {n}: every "
               f"matrix product together is {together}; the scores and the weighted sum {attention}.")
    return fig


def _h_axis(ax, hs):
    """h on a numeric log2 axis, ticks at the h shown (every other one when crowded)."""
    ax.set_xscale("log", base=2)
    _h_ticks(ax, hs)
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("h (number of heads), log scale", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)


def _h_ticks(ax, hs):
    ax.set_xlim(min(hs) / 1.5, max(hs) * 1.5)
    ticks = hs if len(hs) <= 10 else sorted({h for h in hs if h & (h - 1) == 0} | {max(hs)})  # crowded: powers of 2
    ax.set_xticks(ticks, [str(h) for h in ticks])


BAR_HALF = 2**0.15  # a bar spans h / BAR_HALF .. h * BAR_HALF on the log axis


def _stack(ax, hs, stacks, labels, colours=PALETTE):
    """Stacked bars at each h of ``hs``: one layer per row of ``stacks`` (its values over hs)."""
    x = np.array(hs, float)
    bottom = np.zeros(len(hs))
    for values, label, colour in zip(stacks, labels, colours):
        ax.bar(x / BAR_HALF, values, width=x * BAR_HALF - x / BAR_HALF, align="edge", bottom=bottom, label=label,
               color=colour)
        bottom += np.asarray(values, float)


def _restack(ax, hs, stacks):
    """Give the stacked bars of :func:`_stack` on ``ax`` new heights; for a new ``hs`` (another d_model), new
    bars in the same colours."""
    if len(ax.containers) != len(stacks):
        raise ValueError(f"ax must hold {len(stacks)} layers of stacked bars, got {len(ax.containers)}")
    x = np.array(hs, float)
    same = len(ax.containers[0].patches) == len(hs) and np.allclose(
        [p.get_x() for p in ax.containers[0].patches], x / BAR_HALF)
    if not same:
        colours = [bars.patches[0].get_facecolor() for bars in ax.containers]
        for bars in list(ax.containers):
            bars.remove()
        _stack(ax, hs, stacks, [f"_{k}" for k in range(len(stacks))], colours)  # no new legend entries
        return
    bottom = np.zeros(len(hs))
    for values, bars in zip(stacks, ax.containers):
        for patch, base, value in zip(bars.patches, bottom, values):
            patch.set_y(base)
            patch.set_height(value)
        bottom += np.asarray(values, float)


# The right panel's curves, in :func:`_flop_numbers`' order: their labels and styles.
FLOP_CURVES = [
    ("claim: h heads cost h times more", dict(color=PALETTE[5], ls="--", lw=2)),
    ("scores + weighted sum: 2·n²·d_model", dict(color="0.15", lw=2.5, marker="o", ms=4)),
    ("scores $Q_i K_i^T$ (and, equal, the weighted sum)", dict(color=PALETTE[1], lw=1.5, marker="s", ms=3)),
    ("softmax: h·n² exponentials (grows, small)", dict(color=PALETTE[2], ls=":", lw=2, marker="^", ms=4)),
]


def draw_flops(left, right, d_model, n, hs):
    """Draw :func:`flop_plot`'s two panels on ``left`` and ``right`` (cleared first)."""
    for ax in (left, right):
        ax.clear()
    counts, curves = _flop_numbers(d_model, n, hs)
    _stack(left, hs, [[c[key] for c in counts] for key, _ in STAGES], [label for _, label in STAGES])
    left.axhline(0, color="0.2", ls="--", lw=1)  # the total, and what it says: placed by _show_flop_numbers
    left.text(0, 0, "", ha="right", va="bottom", fontsize=9)
    left.set_ylabel("multiply-adds", fontsize=11)
    left.yaxis.set_major_formatter(_ENG)
    left.set_title("", fontsize=11)
    left.legend(loc="upper left", fontsize=8, ncols=2, frameon=False)
    _h_axis(left, hs)

    for values, (label, style) in zip(curves, FLOP_CURVES):
        right.plot(hs, values, label=label, **style)
    right.set_yscale("log")
    right.set_ylabel("operations, log scale", fontsize=11)
    right.yaxis.set_major_formatter(_ENG)  # 100 k, 1 M: plain text, quicker to draw than 10^5
    right.set_title("The stages Problem 3.1 is about, on their own scale:\nflat, while the claim grows with h",
                    fontsize=11)
    right.legend(loc="upper left", fontsize=8, frameon=False)
    _h_axis(right, hs)
    _show_flop_numbers(left, right, d_model, n, hs, counts, curves)
    return left, right


def _flop_numbers(d_model, n, hs):
    """The counts at each h, and the right panel's curves: the claim "h heads cost h times more" than one
    head of width d_model, the scores and weighted sum, the scores alone, and the softmax."""
    counts = [flop_count(d_model, h, n) for h in hs]
    attention = np.array([c["scores"] + c["weighted_sum"] for c in counts], float)
    each = np.array([c["scores"] for c in counts], float)
    softmax = np.array([c["softmax"] for c in counts], float)
    return counts, (attention[0] / hs[0] * np.array(hs, float), attention, each, softmax)


def _show_flop_numbers(left, right, d_model, n, hs, counts, curves):
    """What draw_flops and update_flops both set from the numbers: the total, its line and label, the left
    title, the curves and the y ranges."""
    total = counts[0]["multiply_adds"]
    left.lines[0].set_ydata([total, total])
    left.texts[0].set_position((max(hs) * 1.4, total))
    left.texts[0].set_text(f"{total:,} for every h")
    left.set_ylim(0, total * 1.35)
    left.title.set_text(f"Every matrix product, stacked: flat in h\n(d_model = {d_model}, n = {n}, d_k = d_model / h)")
    for line, values in zip(right.lines, curves):
        line.set_data(hs, values)
    claim, attention, each, softmax = curves
    right.set_ylim(*_log_room(min(softmax.min(), each.min()) / 3, max(claim.max(), attention.max())))


LEGEND_ROOM = 0.32  # the top share of a log axis kept free of curves: its four-line legend sits there


def _log_room(low, high, free=LEGEND_ROOM):
    """Limits of a log axis from ``low`` whose top ``free`` share lies above ``high`` (the legend's room)."""
    top = (np.log10(high) - free * np.log10(low)) / (1 - free)
    return low, 10 ** max(top, np.log10(high) + 0.3)


def update_flops(left, right, d_model, n, hs):
    """Give :func:`draw_flops`'s panels the counts of a new ``n`` or ``d_model`` (and its ``hs``), in place: bar
    heights (new bars for a new ``hs``), the total and its line, the curves, the h ticks, the y ranges and the
    title. The axes are not cleared, so a figure laid out once can be redrawn (or blitted) quickly."""
    counts, curves = _flop_numbers(d_model, n, hs)
    _restack(left, hs, [[c[key] for c in counts] for key, _ in STAGES])
    _show_flop_numbers(left, right, d_model, n, hs, counts, curves)
    for ax in (left, right):
        _h_ticks(ax, hs)
    return left, right


def parameter_plot(d_model=512, hs=None):
    """Problem 4.1: parameters of W_Q, W_K, W_V, W_O against h (numeric, log-scaled), flat at 4·d_model²."""
    d_model, hs = _heads(d_model, hs)
    title = f"Problem 4.1: parameters do not depend on h (d_model = {d_model})"
    if headless():
        return _unseen(title)
    fig = WorkbookFigure(figsize=(8, 4.4))
    ax = fig.add_subplot()
    draw_parameters(ax, d_model, hs)
    ax.set_title(title, fontsize=12)
    fig.alt = (f"Stacked bars of the parameters of W_Q, W_K, W_V and W_O against h = {', '.join(map(str, hs))} for "
               f"d_model = {d_model}: " + ", ".join(f"{parameter_count(d_model, h):,}" for h in hs) + ".")
    return fig


def draw_parameters(ax, d_model, hs):
    """Draw :func:`parameter_plot`'s bars on ``ax`` (cleared first), without its title."""
    ax.clear()
    _stack(ax, hs, _parameter_stacks(d_model, hs), ["$W^Q$", "$W^K$", "$W^V$", "$W^O$"])
    ax.axhline(4 * d_model**2, color="0.2", ls="--", lw=1)
    ax.text(0, 0, "", ha="right", va="bottom", fontsize=9)
    _parameter_numbers(ax, d_model, hs)
    ax.set_ylabel("parameters (no biases)", fontsize=11)
    ax.yaxis.set_major_formatter(_ENG)
    ax.legend(loc="upper left", fontsize=9, ncols=4, frameon=False,
              title="each of $W^Q, W^K, W^V$: h · d_model · d_k = d_model²;  $W^O$: d_model · d_model", title_fontsize=9,
              alignment="left")
    _h_axis(ax, hs)
    return ax


def _parameter_stacks(d_model, hs):
    """W_Q, W_K, W_V, W_O's parameters at each h: h · d_model · d_k = d_model² each, 4·d_model² together."""
    stacks = [[d_model * d_model] * len(hs) for _ in range(4)]
    assert all(sum(layer[k] for layer in stacks) == parameter_count(d_model, h) for k, h in enumerate(hs))
    return stacks


def _parameter_numbers(ax, d_model, hs):
    total = 4 * d_model**2
    ax.lines[0].set_ydata([total, total])
    ax.texts[0].set_position((max(hs) * 1.4, total))
    ax.texts[0].set_text(f"4·d_model² = 4·{d_model}² = {total:,}")
    ax.set_ylim(0, total * 1.3)


def update_parameters(ax, d_model, hs):
    """Give :func:`draw_parameters`' axes a new ``d_model`` (and its ``hs``) in place: the bars, the total and
    its line, the h ticks and the y range."""
    _restack(ax, hs, _parameter_stacks(d_model, hs))
    _parameter_numbers(ax, d_model, hs)
    _h_ticks(ax, hs)
    return ax


# --- softmax bars and the shape table ----------------------------------------


def weight_bars(weights, labels=None, title=None, ax=None):
    """Problem 2.3: one row of attention weights as bars, each value written on its bar."""
    w = check.array("weights", weights, ndim=1)
    labels = _labels("labels", labels, len(w), "weight")
    title = title or "Weights of one query (they sum to 1)"
    if ax is None and headless():
        return _unseen(title)
    if ax is None:
        fig = WorkbookFigure(figsize=(max(5.0, 1.0 + 0.9 * len(w)), 3.4))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    draw_bars(ax, w, labels)
    ax.set_title(title, fontsize=12)
    if isinstance(fig, WorkbookFigure):
        fig.alt = (f"{title}. Bars: " + ", ".join(f"{label} {v:.2f}" for label, v in zip(labels, w))
                   + f"; {labels[int(np.argmax(w))]} highest.")
    return fig


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


def _shape(shape):
    return " × ".join(str(s) for s in shape)


def shape_table_html(rows):
    """An HTML table of :func:`mha_core.shape_table` rows: name, shape, meaning."""
    rows = list(rows)
    cells = []
    for row in rows:
        try:
            name, shape, meaning = row
        except (TypeError, ValueError):
            raise ValueError(f"rows must hold (name, shape, meaning) triples, got {row!r}") from None
        cells.append(
            f"<tr><td style='{_TD};white-space:nowrap'><code>{html.escape(str(name))}</code></td>"
            f"<td style='{_TD};text-align:right;font-family:monospace;white-space:nowrap'>"
            f"{html.escape(_shape(shape))}</td>"
            f"<td style='{_TD}'>{html.escape(str(meaning))}</td></tr>"
        )
    head = "".join(f"<th style='{_TD};text-align:left;border-bottom:2px solid #888'>{t}</th>"
                   for t in ("name", "shape", "meaning"))
    return (f"<table style='border-collapse:collapse;font-size:13px'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(cells)}</tbody></table>")


_THOUSANDS = ticker.FuncFormatter(lambda v, _: f"{v:,.0f}")
_ENG = ticker.EngFormatter(sep=" ")  # 10 k, 2.5 M
_TD = "padding:2px 10px;border-bottom:1px solid #ddd"


__all__ = [
    "EXAMPLE_TOKENS",
    "UNTRAINED",
    "sentence_grid",
    "sentence_heatmap",
    "sentence_weights",
    "translation_heatmap",
    "WorkbookFigure",
    "cross_heatmap",
    "example_embeddings",
    "flop_plot",
    "head_grid",
    "head_options",
    "head_view",
    "head_split_diagram",
    "headless",
    "heatmap",
    "parameter_plot",
    "shape_table_html",
    "weight_bars",
]


def head_split_diagram(n=4, h=2, d_k=3):
    """Problem 4.3: how ``X @ W_Q`` of shape (n, d_model) becomes the h heads' (h, n, d_k).

    Three stages as coloured blocks, one colour per head, each cell numbered with its
    token: (n, d_model) -> reshape -> (n, h, d_k) -> swap the first two axes -> (h, n, d_k).
    Head i is the block of columns i*d_k:(i+1)*d_k; every token keeps its row.
    """
    sizes = {"n": n, "h": h, "d_k": d_k}
    for name, value in sizes.items():
        check.positive_int(name, value)
    for name, largest in (("n", 8), ("h", 4), ("d_k", 6)):
        if sizes[name] > largest:
            raise ValueError(f"{name} must be at most {largest} for a readable diagram, got {sizes[name]}")
    d_model, gap, pad = h * d_k, 4.0, 0.5
    title = f"Problem 4.3: splitting into heads, n = {n}, h = {h}, d_k = {d_k} (d_model = {d_model})"
    if headless():
        return _unseen(title)
    height = h * n + (h - 1) * pad  # the tallest stage: the heads one above the other
    x2 = d_model + gap
    x3 = x2 + d_model + (h - 1) * pad + gap
    fig = WorkbookFigure(figsize=(0.42 * (x3 + d_k + 2.5), 0.42 * (height + 4.5)))
    ax = fig.add_subplot()

    def block(x, y, head, token):
        ax.add_patch(Rectangle((x, -y - 1), 1, 1, facecolor=PALETTE[head % len(PALETTE)], alpha=0.6,
                               edgecolor="white", linewidth=1.5))
        ax.text(x + 0.5, -y - 0.5, str(token + 1), ha="center", va="center", fontsize=8, color="0.1")

    for t in range(n):
        for i in range(h):
            for c in range(d_k):
                block(i * d_k + c, t, i, t)  # (n, d_model): token t's row, head i's columns
                block(x2 + i * (d_k + pad) + c, t, i, t)  # (n, h, d_k): the same row cut into h blocks
                block(x3 + c, i * (n + pad) + t, i, t)  # (h, n, d_k): head i's own n x d_k matrix
    top, below = 0.6, -n - 0.9
    ax.text(d_model / 2, top, "X @ W_Q: (n, d_model)", ha="center", va="bottom", fontsize=10, fontweight="bold")
    ax.text(d_model / 2, below, f"axis 1: d_model = h·d_k = {d_model}", ha="center", va="top", fontsize=8)
    ax.text(-0.4, -n / 2, f"axis 0: n = {n} tokens", ha="right", va="center", fontsize=8, rotation=90)
    width2 = d_model + (h - 1) * pad
    ax.text(x2 + width2 / 2, top, "(n, h, d_k)", ha="center", va="bottom", fontsize=10, fontweight="bold")
    ax.text(x2 + width2 / 2, below, f"axis 1: h = {h} blocks, axis 2: d_k = {d_k}", ha="center", va="top",
            fontsize=8)
    ax.text(x3 + d_k / 2, top, "(h, n, d_k)", ha="center", va="bottom", fontsize=10, fontweight="bold")
    for i in range(h):
        ax.text(x3 + d_k + 0.3, -i * (n + pad) - n / 2, f"head {i + 1}\n(axis 0 = {i})", ha="left",
                va="center", fontsize=8, color=PALETTE[i % len(PALETTE)])
    ax.text(x3 + d_k / 2, -height - 0.3, "axis 1: n, axis 2: d_k", ha="center", va="top", fontsize=8)
    for start, end, label in ((d_model, x2, f"reshape\n(n, {h}, {d_k})"), (x2 + width2, x3, "swapaxes\n(0, 1)")):
        ax.annotate("", xy=(end - 0.4, -n / 2), xytext=(start + 0.4, -n / 2),
                    arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 1.5})
        ax.text((start + end) / 2, -n / 2 + 0.3, label, ha="center", va="bottom", fontsize=8, family="monospace")
    ax.set_xlim(-1.6, x3 + d_k + 2.6)
    ax.set_ylim(-height - 1.6, 1.8)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.alt = (f"Diagram: X @ W_Q, {n} × {d_model} (one row per token), is reshaped to {n} × {h} × {d_k}, then "
               f"its first two axes are swapped: {h} × {n} × {d_k}; head i is the block of columns "
               f"i·{d_k} to (i+1)·{d_k}, and every token keeps its row.")
    return fig
