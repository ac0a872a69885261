"""The head view: where one word looks, every head at once (BertViz's head view). Lines from the
chosen query token to every key, one colour and dash per head, width and opacity growing with the
weight. :func:`build_head_view` lays it out once; :func:`draw_head_view` sets a sentence, a word and
heads in place."""

import numpy as np
from matplotlib import colors

from .. import _validate as check
from .base import PALETTE, WorkbookFigure, checked_labels, checked_matrix, unseen_figure, untrained_title, headless

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
    data, _ = checked_matrix("weights", weights, None, 3)
    h, n_q, n_k = data.shape
    tokens = checked_labels("tokens", tokens, n_q, "query row of weights")
    key_tokens = tokens if key_tokens is None else checked_labels("key_tokens", key_tokens, n_k, "key column of weights")
    if key_tokens is tokens and n_k != n_q:
        raise ValueError(f"key_tokens must be given when weights has n_k = {n_k} keys for n_q = {n_q} queries")
    if isinstance(query, (bool, np.bool_)) or not isinstance(query, (int, np.integer)) or not 0 <= query < n_q:
        raise ValueError(f"query must be the index of a query token, 0 to {n_q - 1}, got {query!r}")
    names = [f"head {k + 1}" for k in range(h)] if head_names is None else checked_labels("head_names", head_names, h, "head")
    title = untrained_title(title or f"Where does “{tokens[query]}” look? {h} heads", untrained)
    if headless():
        return unseen_figure(title)
    fig, parts = build_head_view(max(n_q, n_k), h, dpi=dpi)
    draw_head_view(parts, tokens, key_tokens, data[:, query, :], int(query), names, title,
                   self_attention=key_tokens is tokens)
    fig.head_view = parts
    return fig

