"""The workbook's figures: attention heatmaps (figures s01 and s02), the per-head grid, the softmax
bars of Problem 2.3 and the split into heads of Problem 4.3, with the heads of :mod:`mha_core.heads`
that make them show real patterns.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_model / h``,
``n`` (or ``n_q`` query rows, ``n_k`` key columns). A heatmap's cell (row, column)
is how much the row's query token looks at the column's key token; masks say
True where a query *may attend*, as in :mod:`mha_core.attention`.

Every function returns a :class:`matplotlib.figure.Figure` drawn with Agg and
never calls ``plt.show``: pyplot's global list of figures is not touched, so
nothing is left open, and a returned figure shows itself in a notebook as PNG
(while nbgrader runs a notebook, as one line naming it: see :class:`WorkbookFigure`).
What they are drawn with is in :mod:`mha_core.figures`; the counting figures
(:func:`flop_plot`, :func:`parameter_plot`) and the head view (:func:`head_view`) are
there too, and named here for the notebooks.
"""

import numpy as np
from matplotlib.patches import Rectangle

from . import _validate as check
from . import heads
from .figures.base import (  # noqa: F401 (UNTRAINED, example_embeddings, head_options: named here too)
    MASKED_NOTE,
    PALETTE,
    PATTERN_TITLES,
    UNTRAINED,
    WEIGHT_LABEL,
    ANNOTATE_MAX,
    WorkbookFigure,
    checked_kind,
    checked_labels,
    checked_matrix,
    token_axes,
    unseen_figure,
    untrained_title,
    draw_bars,
    draw_heatmap,
    example_embeddings,
    head_options,
    headless,
    masked,
    weights_norm,
)
from .figures.describe import PLACES, describe_panel, describe_rows  # noqa: F401 (named here too)
from .figures.counts import flop_plot, parameter_plot  # noqa: F401 (the notebooks call them from here)
from .figures.grid import build_head_grid
from .figures.head_view import head_view  # noqa: F401 (the notebooks call it from here)
from .attention import causal_mask, scaled_dot_product_attention
from .layer import MultiHeadAttention, shared_projection_attention

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
    kind = checked_kind(kind)
    data, mask = checked_matrix("matrix", matrix, mask, 2)
    n_rows, n_cols = data.shape
    row_labels = checked_labels("row_labels", row_labels, n_rows, "row (query token)")
    col_labels = checked_labels("col_labels", col_labels, n_cols, "column (key token)")
    if annotate is None:
        annotate = max(n_rows, n_cols) <= ANNOTATE_MAX
    if norm is None:
        norm = weights_norm() if kind == "weights" else None
    if title is None:
        title = f"Attention {kind}: {n_rows} queries × {n_cols} keys"
    title = untrained_title(title, untrained)
    if ax is None and headless():
        return unseen_figure(title)
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
    token_axes(ax, row_labels, col_labels, fontsize=fontsize)
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


DECODER_LABEL = "decoder: target words\n(query, one per row)"


ENCODER_LABEL = "encoder: source words (keys and values, one per column)"


def cross_heatmap(weights, query_tokens, key_tokens, title=None, mask=None, annotate=None, untrained=False):
    """Figure s02: cross-attention weights, n_q decoder (query) rows x n_k encoder (key) columns.

    The rows are the target sentence (decoder, queries), the columns the source sentence
    (encoder, keys and values); the axis labels say which is which.
    """
    data, _ = checked_matrix("weights", weights, mask, 2)
    n_q, n_k = data.shape
    if title is None:
        title = f"Cross-attention: {n_q} decoder queries × {n_k} encoder keys"
    return heatmap(
        data, checked_labels("query_tokens", query_tokens, n_q, "row (decoder query token)"),
        checked_labels("key_tokens", key_tokens, n_k, "column (encoder key token)"), title=title, mask=mask,
        annotate=annotate, xlabel=ENCODER_LABEL, ylabel=DECODER_LABEL, untrained=untrained,
    )


def head_grid(weights, row_labels=None, col_labels=None, mask=None, title=None, max_heads=None, first_head=1,
              head_titles=None, untrained=False):
    """All h heads' attention weights (array (h, n_q, n_k)), one panel per head, one shared colour scale.

    Panels are titled "head 1".."head h" (numbered from ``first_head``); token labels
    are written on the left column and bottom row. ``max_heads`` caps the panels shown.
    ``head_titles`` (one per head) replace "head i"; ``untrained=True`` adds
    "random (untrained) weights" to the title.
    """
    data, mask = checked_matrix("weights", weights, mask, 3)
    h, n_q, n_k = data.shape
    row_labels = checked_labels("row_labels", row_labels, n_q, "row (query token)")
    col_labels = checked_labels("col_labels", col_labels, n_k, "column (key token)")
    shown = h if max_heads is None else min(h, check.positive_int("max_heads", max_heads))
    title = untrained_title(title or f"Attention weights of {h} heads", untrained)
    if head_titles is not None:
        head_titles = checked_labels("head_titles", head_titles, h, "head")
    if headless():
        return unseen_figure(title)
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


def sentence_weights(tokens, patterns=("previous", "same word", "first", "pronoun"), source="constructed",
                     d_model=None, seed=0, shared=False):
    """``(weights (h, n, n), untrained)`` of self-attention over ``tokens`` (a list of words).

    ``source="constructed"``: heads from :func:`mha_core.heads.constructed` with ``patterns``;
    ``source="random"``: a seeded block of random projections (as many heads, width
    ``d_model`` or 16·h) on the same one-hot embeddings. ``shared=True`` makes every head
    use head 1's W_Q, W_K, W_V (:func:`mha_core.shared_projection_attention`, Problem 3.3).
    """
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


def sentence_heatmap(tokens, pattern="pronoun", source="constructed", title=None, seed=0):
    """Figure s01 from one head that really computes ``pattern`` (:mod:`mha_core.heads`) on ``tokens``.

    ``source="random"`` draws a head of random projections instead, and says so in the title.
    """
    if pattern not in heads.SELF_PATTERNS:
        raise ValueError(f"pattern must be one of {heads.SELF_PATTERNS}, got {pattern!r}")
    weights, untrained = sentence_weights(tokens, (pattern,), source, seed=seed)
    if title is None:
        title = ("Figure s01: one head's weights, softmax($Q_i K_i^T / \\sqrt{d_k}$)" if untrained
                 else f"Figure s01: a head built for {PATTERN_TITLES[pattern]}")
    return heatmap(weights[0], tokens, tokens, title=title, untrained=untrained)


def sentence_grid(tokens, patterns=("previous", "same word", "first", "pronoun"), source="constructed",
                  shared=False, title=None, seed=0):
    """The head grid (Problem 3.3) over ``tokens``: one constructed head per pattern, or random heads.

    ``shared=True``: every head uses head 1's projections, so every panel is head 1's.
    """
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


def translation_heatmap(source_tokens, target_tokens, pattern="translation", source="constructed",
                        title=None, seed=0):
    """Figure s02: ``target_tokens`` (decoder) attending to ``source_tokens`` (encoder), English → French.

    ``pattern`` is one of :data:`mha_core.heads.CROSS_PATTERNS`; ``source="random"``
    uses random projections and says so in the title.
    """
    if pattern not in heads.CROSS_PATTERNS:
        raise ValueError(f"pattern must be one of {heads.CROSS_PATTERNS}, got {pattern!r}")
    if source not in ("constructed", "random"):
        raise ValueError(f"source must be 'constructed' or 'random', got {source!r}")
    c = heads.translation(source_tokens, target_tokens, (pattern,), seed=seed)
    block = c.block if source == "constructed" else MultiHeadAttention.from_seed(c.block.d_model, 1, seed)
    _, weights = block(c.x, c.x_kv)
    if title is None:
        title = (f"Figure s02: cross-attention,\n{len(c.tokens)} target × {len(c.kv_tokens)} source words"
                 if source == "random"
                 else f"Figure s02: a cross-attention head built for\n{PATTERN_TITLES[pattern]}, English → French")
    return cross_heatmap(weights[0], c.tokens, c.kv_tokens, title=title, untrained=source == "random")


def weight_bars(weights, labels=None, title=None, ax=None):
    """Problem 2.3: one row of attention weights as bars, each value written on its bar."""
    w = check.array("weights", weights, ndim=1)
    labels = checked_labels("labels", labels, len(w), "weight")
    title = title or "Weights of one query (they sum to 1)"
    if ax is None and headless():
        return unseen_figure(title)
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


def head_heatmap(X, W_Q, W_K, tokens, title=None):
    """Problem 4.4: the causal weights ``softmax(X W_Q (X W_K)^T / sqrt(d_k))`` (n, n) of one head on
    ``X`` (n, d_model), its ``W_Q``, ``W_K`` (d_model, d_k) written by hand, as a heatmap over ``tokens``."""
    X = check.array("X", X, ndim=2)
    W_Q = check.array("W_Q", W_Q, ndim=2)
    W_K = check.array("W_K", W_K, ndim=2)
    if W_Q.shape[0] != X.shape[1] or W_K.shape != W_Q.shape:
        raise ValueError(f"W_Q and W_K must both have shape ({X.shape[1]}, d_k), got {W_Q.shape} and {W_K.shape}")
    weights = scaled_dot_product_attention(X @ W_Q, X @ W_K, X, causal=True)[1]  # (n, n)
    return heatmap(weights, tokens, tokens, mask=causal_mask(len(X)), title=title)


def learned_heads(count=2):
    """Problem 5.4: the heads of the learned model (:mod:`mha_core.learned`, its shipped weights) on the
    first ``count`` sequences of its evaluation set, one :func:`head_grid` each, titled with the answer."""
    from . import learned

    model = learned.load()
    tokens, targets, _ = learned.evaluation_set(size=check.positive_int("count", count))
    figures = []
    for sequence, target in zip(tokens, targets):
        letters = learned.spelled(sequence)
        weights = learned.patterns(model, sequence)  # (layers · h, n, n)
        figures.append(head_grid(weights, letters, letters, mask=np.broadcast_to(causal_mask(len(letters)), weights.shape),
                                 head_titles=learned.head_titles(model),
                                 title=f"The learned heads on {' '.join(letters)}: the answer is {learned.LETTERS[target]}"))
    return figures


def shuffled_block(perm=(5, 0, 1, 2, 3, 4), d_model=8, h=2, seed=35):
    """Problem 3.5, as text: for a block with random weights (``seed``) on ``len(perm)`` tokens, without a
    mask and with a causal one, whether shuffling the tokens by ``perm`` shuffles the output the same way."""
    block = MultiHeadAttention.from_seed(d_model, h, seed=seed)
    perm = np.asarray(perm)
    X = example_embeddings(len(perm), block.d_model)
    lines = []
    for causal in (False, True):
        out, _ = block(X, causal=causal)
        shuffled, _ = block(X[perm], causal=causal)
        lines.append(f"causal={causal!s:5}: f(X[perm]) == f(X)[perm] up to rounding: {np.allclose(shuffled, out[perm])}")
    return "\n".join(lines)


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
        return unseen_figure(title)
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
        ax.text(x3 + d_k + 0.3, -i * (n + pad) - n / 2, f"head {i}\n(axis 0 = {i})", ha="left",
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
    from .figures.screen import readable_in_lab

    readable_in_lab(fig)
    return fig


__all__ = [
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
    "head_heatmap",
    "head_options",
    "head_view",
    "head_split_diagram",
    "headless",
    "heatmap",
    "learned_heads",
    "parameter_plot",
    "shuffled_block",
    "weight_bars",
]
