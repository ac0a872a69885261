"""Level 3's head grid explorer (Problem 3.3): every head's weights over a sentence, with switches for the
weights' source (constructed or random heads) and for sharing head 1's W_Q, W_K, W_V with every head
(then the panels become identical), and a count of the distinct patterns.

:func:`head_grid_state` is the state (no widget, no figure); :class:`HeadGridExplorer` draws it.
"""

import functools

from .. import heads
from ..examples import PATTERN_TITLES, UNTRAINED
from ..figures.describe import describe_panel
from ..layer import MultiHeadAttention, shared_projection_attention
from ..markup import render
from .base import PATTERNS, Explorer, source_control, switch, word_list
from .canvas import FigureImage


@functools.lru_cache(maxsize=4)
def _blocks(tokens, patterns, seed):
    built = heads.constructed(list(tokens), patterns, seed=seed)
    return built, MultiHeadAttention.from_seed(built.block.d_model, built.block.h, seed)


def head_grid_state(source="constructed", shared=False, tokens=None, patterns=PATTERNS, seed=1):
    """Every head's weights (h, n, n) over ``tokens`` (a list of words), their names, how many distinct
    patterns, the title and readout."""
    tokens = word_list("tokens", tokens)
    built, random = _blocks(tuple(tokens), tuple(patterns), seed)
    block = built.block if source == "constructed" else random
    x, h = built.x, block.h
    if shared:
        _, weights = shared_projection_attention(x, None, *block.head_weights(0), block.W_O, h)
        names = ["head 1"] + [f"head {k + 1} (= head 1)" for k in range(1, h)]
    else:
        _, weights = block(x)
        names = ([f"head {k + 1}: {PATTERN_TITLES[p]}" for k, p in enumerate(built.patterns)]
                 if source == "constructed" else [f"head {k + 1}" for k in range(h)])
    distinct = len({w.round(12).tobytes() for w in weights})
    title = (f"All {h} heads sharing head 1's projections: 1 pattern, {h} times" if shared
             else f"{h} heads, each with its own projections") + (f"\n{UNTRAINED}" if source == "random" else "")
    kind = UNTRAINED if source == "random" else "constructed heads"
    return {
        "source": source, "shared": shared, "weights": weights, "names": names, "distinct": distinct, "h": h,
        "tokens": list(tokens), "title": title,
        "readout": render("head_grid_readout.html", distinct=distinct, h=h),
        "alt": f"{h} panels of attention weights ({kind}{', all sharing head 1' if shared else ''}). "
               + "; ".join(describe_panel(weights[k], names[k]) for k in range(h)) + ".",
    }


class HeadGridExplorer(Explorer):
    """The view of :func:`head_grid_state`: two switches, the readout and the grid of heads."""

    def __init__(self, tokens=None, patterns=PATTERNS, source="constructed", shared=False, seed=1, dpi=80):
        import ipywidgets as widgets

        self.tokens, self.patterns, self.seed, self.dpi = word_list("tokens", tokens), \
            tuple(patterns), seed, dpi
        self.built, self.random = _blocks(tuple(self.tokens), self.patterns, seed)
        controls = {
            "source": source_control(source),
            "shared": switch("projections", "each head its own", "all share head 1's", shared),
        }
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        state = head_grid_state(self.controls["source"].value, self.controls["shared"].value, self.tokens,
                                self.patterns, self.seed)
        if self.canvas.drawing:
            if self.canvas.figure is None:
                from ..figures.grid import build_head_grid

                figure, self.images = build_head_grid(state["h"], self.tokens, self.tokens, state["title"],
                                                      dpi=self.dpi)
                self.titles = [figure.suptitle(state["title"], fontsize=12), *(image.axes.title for image in self.images)]
                self._set(state)
                self.canvas.show(figure, [*self.images, *self.titles])
            else:
                self._set(state)
                self.canvas.refresh()
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}

    def _set(self, state):
        from ..figures.base import masked

        self.titles[0].set_text(state["title"])
        for image, text, w, name in zip(self.images, self.titles[1:], state["weights"], state["names"]):
            image.set_data(masked(w, None))
            text.set_text(name)
            text.set_fontsize(9)


def head_grid_explorer(tokens=None, patterns=PATTERNS, source="constructed", shared=False, seed=1, dpi=80):
    """Level 3, Problem 3.3: every head's weights over ``tokens`` (a list of words); switches for
    random or constructed heads and for all heads sharing head 1's W_Q, W_K, W_V (then every panel is head 1's), with a count of the distinct patterns."""
    return HeadGridExplorer(tokens, patterns, source, shared, seed, dpi)
