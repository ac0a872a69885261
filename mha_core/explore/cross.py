"""Explorer (c), Problem 5.3 and figure s02: n_q target (decoder, French) queries over n_k source
(encoder, English) keys and values -> one head's n_q x n_k weights, and the shapes of Q_i, K_i, V_i,
the score matrix and the output.

:func:`cross_state` is the state (no widget, no figure); :class:`CrossAttentionExplorer` draws it: the
s02 heatmap (a notebook) or, given a ``box`` in pixels, a readable heatmap resized in place (the demo).
"""

import functools

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from .. import heads
from ..attention import head_dim
from ..examples import PATTERN_TITLES, UNTRAINED, example_embeddings
from ..figures.describe import describe_rows
from ..layer import MultiHeadAttention
from ..markup import render
from .base import CROSS_PATTERNS, MAX_CROSS, Explorer, cycled_patterns, source_control, word_list
from .canvas import FigureImage


@functools.lru_cache(maxsize=4)
def _random(d_model, h, seed):
    """A seeded block and the decoder and encoder tokens' embeddings (the first n_q, n_k used)."""
    return (MultiHeadAttention.from_seed(d_model, h, seed), example_embeddings(MAX_CROSS, d_model, seed + 1),
            example_embeddings(MAX_CROSS, d_model, seed + 2))


@functools.lru_cache(maxsize=64)
def _constructed(sources, targets, d_model, h, seed):
    """Constructed heads for these source and target words (None if d_k is too small)."""
    try:
        return heads.translation(list(sources), list(targets), cycled_patterns(CROSS_PATTERNS, h),
                                 d_model=d_model, seed=seed)
    except ValueError:
        return None


def cross_state(n_q, n_k, head=1, source="constructed", d_model=96, h=3, seed=0, source_tokens=None,
                target_tokens=None):
    """One head's cross-attention weights (n_q, n_k), every head's, the shapes, the readout and alt text:
    the first n_q words of ``target_tokens`` (queries) over the first n_k of ``source_tokens`` (keys)."""
    sources = tuple(word_list("source_tokens", source_tokens, n_k)[:n_k])
    targets = tuple(word_list("target_tokens", target_tokens, n_q)[:n_q])
    built = _constructed(sources, targets, d_model, h, seed) if source == "constructed" else None
    if built is None:
        block, x_q, x_kv = _random(d_model, h, seed)
        output, weights = block(x_q[:n_q], x_kv[:n_k])  # (n_q, d_model), (h, n_q, n_k)
    else:
        output, weights = built.block(built.x, built.x_kv)
    untrained = built is None
    patterns = cycled_patterns(CROSS_PATTERNS, h)
    name = f"head {head}" + ("" if untrained else f" ({PATTERN_TITLES[patterns[head - 1]]})")
    shown = weights[head - 1]
    targets, sources = list(targets), list(sources)
    return {
        "n_q": n_q, "n_k": n_k, "head": head, "d_model": d_model, "h": h, "source": source,
        "untrained": untrained, "weights": shown, "all_weights": weights, "name": name,
        "score_shape": shown.shape, "output_shape": output.shape, "targets": targets, "sources": sources,
        "title": f"Cross-attention, English → French: {n_q} target queries × {n_k} source keys",
        "readout": render("cross_readout.html", name=name, n_q=n_q, n_k=n_k, d_k=d_model // h, d_model=d_model,
                          untrained=untrained, untrained_label=UNTRAINED, source=source),
        "alt": describe_rows(shown, targets, sources, f"Cross-attention weights of {name}, "
                             f"{UNTRAINED if untrained else 'constructed'}, French target rows over English "
                             "source columns"),
    }


class CrossAttentionExplorer(Explorer):
    """The view of :func:`cross_state`: n_q, n_k, the head and the source; the readout and the heatmap."""

    def __init__(self, n_q=3, n_k=5, d_model=96, h=3, seed=0, dpi=80, source="constructed", box=None, text_px=15,
                 source_tokens=None, target_tokens=None):
        self.source_tokens = word_list("source_tokens", source_tokens)
        self.target_tokens = word_list("target_tokens", target_tokens)
        d_model = check.positive_int("d_model", d_model)
        if box is not None:
            box = tuple(check.positive_int("box", v) for v in box)
            if len(box) != 2:
                raise ValueError(f"box must be (width, height) in pixels, got {box}")
        self.box, self.text_px, self.heat = box, text_px, None
        head_dim(d_model, h)
        n_q = check.positive_int("n_q", n_q)
        n_k = check.positive_int("n_k", n_k)
        max_q, max_k = min(MAX_CROSS, len(self.target_tokens)), min(MAX_CROSS, len(self.source_tokens))
        for name, value, most in (("n_q", n_q, max_q), ("n_k", n_k, max_k)):
            if value > most:
                raise ValueError(f"{name} must be at most {most} (at most {MAX_CROSS}, and its sentence's "
                                 f"length), got {value}")
        self.d_model, self.h, self.dpi, self.seed = d_model, h, dpi, seed
        controls = {
            "n_q": widgets.IntSlider(value=n_q, min=1, max=max_q, description="n_q (decoder)",
                                     continuous_update=False, style={"description_width": "initial"}),
            "n_k": widgets.IntSlider(value=n_k, min=1, max=max_k, description="n_k (encoder)",
                                     continuous_update=False, style={"description_width": "initial"}),
            "head": widgets.Dropdown(options=[(f"head {i + 1}", i + 1) for i in range(h)], value=1,
                                     description="head"),
            "source": source_control(source),
        }
        self.readout = widgets.HTML()
        self._layout = None
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        c = self.controls
        state = cross_state(c["n_q"].value, c["n_k"].value, c["head"].value, c["source"].value, self.d_model,
                            self.h, self.seed, self.source_tokens, self.target_tokens)
        if self.canvas.drawing:
            self._draw(state)
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        shown = np.ma.masked_array(state["weights"], mask=np.zeros(state["weights"].shape, bool))
        self.state = {**state, "alt": self.canvas.alt,
                      "shown": self.image_artist.get_array() if self.canvas.drawing else shown}

    def _draw(self, state):
        from ..figures.base import masked, update_texts

        n_q, n_k, untrained, shown = state["n_q"], state["n_k"], state["untrained"], state["weights"]
        layout = (n_q, n_k, untrained)
        if self.box is not None:  # one figure for every n_q, n_k: resized and relabelled, never rebuilt
            from ..figures.screen import ReadableHeatmap
            from ..plots import DECODER_LABEL, ENCODER_LABEL

            if self.heat is None:
                self.heat = ReadableHeatmap(self.box, self.text_px, MAX_CROSS, MAX_CROSS, xlabel=ENCODER_LABEL,
                                            ylabel=DECODER_LABEL)
                self.image_artist = self.heat.image
            if layout != self._layout:
                dynamic = self.heat.layout(state["targets"], state["sources"])
                self.heat.title.set_text(state["title"] + (f"\n{UNTRAINED}" if untrained else ""))
                self.heat.set_data(shown)
                self._layout = layout
                self.canvas.show(self.heat.figure, dynamic)
            else:
                self.heat.set_data(shown)
                self.canvas.refresh()
        elif layout != self._layout:
            from ..plots import cross_heatmap

            figure = cross_heatmap(shown, state["targets"], state["sources"], untrained=untrained,
                                   title=state["title"].replace(": ", ":\n", 1))
            figure.set_dpi(self.dpi)
            ax = figure.axes[0]
            self.image_artist, self.texts = ax.images[0], list(ax.texts)
            self._layout = layout
            self.canvas.show(figure, [self.image_artist, *self.texts])
        else:
            self.image_artist.set_data(masked(shown, None))
            update_texts(self.texts, self.image_artist)
            self.canvas.refresh()


def cross_attention_explorer(n_q=3, n_k=5, d_model=96, h=3, seed=0, dpi=80, source="constructed", box=None,
                             text_px=15, source_tokens=None, target_tokens=None):
    """Explorer (c), Problem 5.3: n_q and n_k sliders, a head selector and the weights'
    source (constructed heads: translation, same position, first source word; or random,
    untrained projections); the s02 heatmap (French target words, decoder queries, as rows;
    English source words, encoder keys and values, as columns) and the shapes.
    ``dpi`` scales the figure; ``box`` = (width, height) in pixels draws it for a screen instead
    (every text ``text_px`` pixels, one figure resized for every n_q and n_k). ``source_tokens`` (English)
    and ``target_tokens`` (French) are the sentences, lists of words: n_k and n_q go up to their lengths
    (at most 12)."""
    return CrossAttentionExplorer(n_q, n_k, d_model, h, seed, dpi, source, box, text_px, source_tokens,
                                  target_tokens)
