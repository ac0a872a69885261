"""Level 3's concatenate-versus-sum explorer (Problem 3.2): the heads' outputs side by side (n, h·d_k)
against their sum (n, d_k), and a swap of heads 1 and 2 that changes the concatenation but not the sum;
for a token, the word each constructed head found.

:func:`sum_concat_state` is the state (no widget, no figure); :class:`SumConcatExplorer` draws it.
"""

import functools

import ipywidgets as widgets
import numpy as np

from .. import heads
from ..examples import PATTERN_TITLES, UNTRAINED
from ..layer import MultiHeadAttention, summed_heads_attention
from ..markup import render
from .base import PATTERNS, Explorer, source_control, switch, word_list
from .canvas import FigureImage


@functools.lru_cache(maxsize=4)
def _blocks(tokens, seed):
    """The constructed heads over ``tokens`` and a seeded random block of the same width."""
    built = heads.constructed(list(tokens), PATTERNS, seed=seed)
    return built, MultiHeadAttention.from_seed(built.block.d_model, built.block.h, seed)


def head_outputs(tokens, source, swapped, seed=1):
    """(concat (n, h·d_k), summed (n, d_k), names of the heads in their order), heads 1 and 2 swapped or not."""
    built, random = _blocks(tuple(tokens), seed)
    block = built.block if source == "constructed" else random
    h, d_k = block.h, block.d_k
    order = [1, 0, *range(2, h)] if swapped else list(range(h))
    cols = np.concatenate([np.arange(i * d_k, (i + 1) * d_k) for i in order])
    W_Q, W_K, W_V = block.W_Q[:, cols], block.W_K[:, cols], block.W_V[:, cols]  # heads reordered
    trace = MultiHeadAttention(W_Q, W_K, W_V, np.eye(block.d_model), h).trace(built.x)
    _, summed = summed_heads_attention(built.x, None, W_Q, W_K, W_V, np.eye(d_k, block.d_model), h)
    names = [f"head {i + 1}" + (f": {PATTERN_TITLES[PATTERNS[i]]}" if source == "constructed" else "")
             for i in order]
    return trace.concat, summed, names


def sum_concat_state(swapped, token=None, source="constructed", tokens=None, seed=1):
    """Both outputs, how many entries of each changed with the swap, what each head found for ``token``
    (default: the first of ``tokens``, a list of words), the readout."""
    tokens = tuple(word_list("tokens", tokens))
    token = tokens[0] if token is None else token
    concat, summed, names = head_outputs(tokens, source, swapped, seed)
    plain, plain_sum, _ = head_outputs(tokens, source, False, seed)
    n, d_model = concat.shape
    d_k = summed.shape[1]
    h = d_model // d_k
    row = tokens.index(token)
    changed_concat = int((~np.isclose(concat, plain)).sum())
    changed_sum = float(np.abs(summed - plain_sum).max())
    found = []
    if source == "constructed":
        words = _blocks(tokens, seed)[0].words
        V = len(words)
        found = [(*name.split(": "), words[int(np.argmax(concat[row, k * d_k:k * d_k + V]))])
                 for k, name in enumerate(names)]
    return {
        "order": "swapped" if swapped else "in order", "token": token, "source": source, "row": row,
        "concat": concat, "summed": summed, "plain": plain, "plain_sum": plain_sum, "names": names,
        "changed_concat": changed_concat, "changed_sum": changed_sum, "found": found, "h": h, "d_k": d_k,
        "readout": render("sum_concat_readout.html", n=n, h=h, d_k=d_k, d_model=d_model, swapped=swapped,
                          changed_concat=changed_concat, changed_sum=changed_sum, token=token, found=found),
        "alt": f"Two heatmaps for {n} tokens: left, the {h} heads' outputs side by side, {n} × {d_model}, blocks in "
               f"the order {', '.join(names)}; right, their sum, {n} × {d_k}, which is the same whichever the order. "
               f"Row {token} is framed.",
    }


class SumConcatExplorer(Explorer):
    """The view of :func:`sum_concat_state`: the head order, a token, the source; two heatmaps."""

    def __init__(self, tokens=None, token=None, source="constructed", seed=1, dpi=80):
        tokens = word_list("tokens", tokens)
        token = tokens[0] if token is None else token
        if token not in tokens:
            raise ValueError(f"token must be one of the tokens {tokens}, got {token!r}")
        self.tokens, self.seed, self.dpi = tokens, seed, dpi
        self.built, self.random = _blocks(tuple(tokens), seed)
        controls = {
            "order": switch("head order", "1, 2, 3, 4", "heads 1 and 2 swapped"),
            "token": widgets.Dropdown(options=list(dict.fromkeys(tokens)), value=token, description="token"),
            "source": source_control(source),
        }
        self.readout = widgets.HTML()
        self._layout = None
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def outputs(self, source, swapped):
        """(concat (n, h·d_k), summed (n, d_k), names of the heads in their order)."""
        return head_outputs(self.tokens, source, swapped, self.seed)

    def update(self, change=None):
        swapped, token, source = (self.controls[k].value for k in ("order", "token", "source"))
        state = sum_concat_state(swapped, token, source, self.tokens, self.seed)
        if self.canvas.drawing:
            if self._layout != source:
                self._build(state)
                self._layout = source
            self.images[0].set_data(state["concat"])
            self.images[1].set_data(state["summed"])
            for text, name in zip(self.block_texts, state["names"]):
                text.set_text(name.replace(": ", "\n"))
            for mark in self.marks:
                mark.set_y(state["row"] - 0.5)
            self.canvas.refresh()
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}

    def _build(self, state):
        from matplotlib import colors
        from matplotlib.patches import Rectangle

        from ..figures.base import CMAP, PALETTE, WorkbookFigure

        h, d_k, source = state["h"], state["d_k"], state["source"]
        figure = WorkbookFigure(figsize=(12, 3.8), dpi=self.dpi)
        left, right = figure.subplots(1, 2, width_ratios=[h, 1.4])
        n = len(self.tokens)
        self.images, self.marks = [], []
        for ax, data, plain, title in ((left, state["concat"], state["plain"], f"Concatenated: [head 1 | … | head {h}], n × h·d_k"),
                                       (right, state["summed"], state["plain_sum"], "Summed: n × d_k")):
            peak = max(np.abs(plain).max(), 1e-9)
            norm = colors.Normalize(0, peak) if source == "constructed" else colors.Normalize(-peak, peak)
            cmap = CMAP if source == "constructed" else "PuOr"  # PuOr: diverging, colour-blind safe
            image = ax.imshow(data, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
            ax.set_yticks(range(n), self.tokens, fontsize=9)
            ax.set_title(title, fontsize=11, pad=30 if ax is left else 6)
            ax.set_xticks([])
            mark = Rectangle((-0.5, -0.5), data.shape[1], 1, fill=False, edgecolor=PALETTE[5], lw=2)
            ax.add_patch(mark)
            self.images.append(image)
            self.marks.append(mark)
            figure.colorbar(image, ax=ax, shrink=0.9, pad=0.02).set_label("value", fontsize=9)
        for k in range(1, h):
            left.axvline(k * d_k - 0.5, color="white", lw=2)
        self.block_texts = [left.text((k + 0.5) * d_k - 0.5, -0.7, "", ha="center", va="bottom", fontsize=9)
                            for k in range(h)]
        left.set_xlabel(f"{h} blocks of d_k = {d_k} features, one per head", fontsize=10)
        right.set_xlabel(f"d_k = {d_k} features: whose?", fontsize=10)
        figure.suptitle("Concatenate, don't sum" + (f"\n{UNTRAINED}" if source == "random" else ""), fontsize=12)
        self.canvas.show(figure, [*self.images, *self.marks, *self.block_texts])


def sum_concat_explorer(tokens=None, token=None, source="constructed", seed=1, dpi=80):
    """Level 3, Problem 3.2: the heads' outputs concatenated (n, h·d_k) against summed
    (n, d_k); a switch swaps heads 1 and 2 (the concatenation changes, the sum cannot),
    a token selector says which word each constructed head found for that token. ``tokens`` is the
    sentence (a list of words), ``token`` the one selected first (default: its first word)."""
    return SumConcatExplorer(tokens, token, source, seed, dpi)
