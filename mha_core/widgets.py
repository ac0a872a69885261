"""Interactive explorers (ipywidgets 8) for the workbook's levels.

- :func:`shape_explorer`: d_model, h (only divisors of d_model), n and a causal
  mask; d_k, the shape table and every head's n x n weights (Levels 1-2).
- :func:`softmax_playground`: one slider per score and a temperature; the
  weights as bars and their entropy (Problem 2.3).
- :func:`cross_attention_explorer`: n_q decoder queries over n_k encoder keys,
  one head at a time (figure s02, Problem 5.3).

Each returns a ``VBox`` whose ``.controls`` (name -> widget) are kept apart from
its outputs, whose ``.state`` dict holds what is shown (shapes, the arrays drawn),
and whose ``.image`` is an ``ipywidgets.Image`` of PNG bytes. Figures are drawn
with Agg, once per layout; a change of data only redraws the images and texts
that changed over a saved background (blitting) and re-encodes the PNG.
Nothing here runs in a graded cell: these are for people moving sliders. So when
nbgrader executes a notebook (``NBGRADER_EXECUTION`` is set: autograding, the
Validate button, the re-check), where no one sees a frame, the explorers compute
their state but draw nothing: a figure's layout costs a second or more.
"""

import contextlib
import io

import ipywidgets as widgets
import numpy as np
from PIL import Image as PILImage

from . import _validate as check
from .attention import causal_mask, head_dim, softmax
from .counting import shape_table
from .layer import MultiHeadAttention
from .plots import (
    EXAMPLE_TOKENS,
    build_head_grid,
    cross_heatmap,
    draw_bars,
    example_embeddings,
    head_options,
    headless,
    masked,
    relabel_head_grid,
    shape_table_html,
    update_texts,
    WorkbookFigure,
)

MAX_PANELS = 16  # heads drawn by the shape explorer; more are summarised, not drawn
MAX_N = 24
MAX_CROSS = 12
# Level 2's sentence, continued so that n can grow past 10 with real words.
TOKENS = EXAMPLE_TOKENS + "so it slept all afternoon while the dog watched birds outside the window".split()
DECODER_TOKENS = "<s> the cat is tired because it ran all day long .".split()  # queries, n_q <= 12
ENCODER_TOKENS = "le chat est fatigué parce qu' il a couru toute la journée".split()  # keys, n_k <= 12
PNG_COMPRESS_LEVEL = 1  # fast zlib: a 16-panel grid encodes in a few ms


def nearest(options, value):
    """The option closest to ``value`` (the smaller one on a tie)."""
    return min(options, key=lambda o: (abs(o - value), o))


class FigureImage:
    """An Agg figure shown as PNG bytes in an ``ipywidgets.Image``.

    :meth:`show` draws a new layout once (everything but the ``dynamic`` artists)
    and saves it as the background; :meth:`refresh` restores that background,
    draws only the dynamic artists and encodes the PNG.
    """

    def __init__(self, **layout):
        self.widget = widgets.Image(format="png", layout=widgets.Layout(**layout))
        self.figure = None
        self.dynamic = []
        self.background = None
        self.builds = 0  # how many layouts were drawn: tests and the benchmark read it
        self.drawing = not headless()

    def show(self, figure, dynamic):
        self.figure = figure
        self.dynamic = list(dynamic)
        if not self.drawing:
            return
        for artist in self.dynamic:
            artist.set_animated(True)  # left out of canvas.draw(); drawn by refresh()
        figure.canvas.draw()
        self.background = figure.canvas.copy_from_bbox(figure.bbox)
        width, _ = figure.canvas.get_width_height()
        # Shown at its own size (JupyterLab would stretch it blurry to the cell's width), smaller on narrow screens.
        self.widget.layout.width, self.widget.layout.max_width, self.widget.layout.height = f"{width}px", "100%", "auto"
        self.builds += 1
        self.refresh()

    def refresh(self):
        if not self.drawing:
            return
        canvas = self.figure.canvas
        canvas.restore_region(self.background)
        for artist in self.dynamic:
            self.figure.draw_artist(artist)
        self.widget.value = self.png()

    def png(self):
        """The canvas as PNG bytes (RGB, fast zlib level)."""
        buffer = self.figure.canvas.buffer_rgba()
        height, width = buffer.shape[:2]
        image = PILImage.frombuffer("RGBA", (width, height), buffer, "raw", "RGBA", 0, 1).convert("RGB")
        out = io.BytesIO()
        image.save(out, format="png", compress_level=PNG_COMPRESS_LEVEL)
        return out.getvalue()


class Explorer(widgets.VBox):
    """A container of controls and outputs; ``.controls``, ``.state``, ``.image``, ``.canvas``."""

    def __init__(self, controls, outputs, canvas, **kwargs):
        self.controls = dict(controls)
        self.canvas = canvas
        self.state = {}
        self._paused = False
        super().__init__(**kwargs)
        self.children = [widgets.HBox([widgets.VBox(list(self.controls.values())), *outputs[:1]]), *outputs[1:]]
        for control in self.controls.values():
            control.observe(self._changed, names="value")

    @property
    def image(self):
        return self.canvas.widget

    @property
    def figure(self):
        return self.canvas.figure

    @contextlib.contextmanager
    def paused(self):
        """Change several controls with one update at the end."""
        was, self._paused = self._paused, True
        try:
            yield
        finally:
            self._paused = was
        if not was:
            self.update()

    def _changed(self, change):
        if not self._paused:
            self.update(change)

    def update(self, change=None):
        raise NotImplementedError


# --- (a) shapes and heads ------------------------------------------------------


class ShapeExplorer(Explorer):
    """d_model, h, n and causal -> d_k, the shape table and every head's weights."""

    def __init__(self, d_model=512, h=8, n=10, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80):
        d_model = check.positive_int("d_model", d_model)
        head_dim(d_model, h)
        n = check.positive_int("n", n)
        tokens = list(TOKENS if tokens is None else tokens)
        if len(tokens) < n:
            raise ValueError(f"tokens must hold at least n={n} tokens, got {len(tokens)}")
        self.tokens = tokens
        self.figure_width, self.dpi = float(figure_width), dpi
        max_n = max(n, min(MAX_N, len(tokens)))
        step = 8 if d_model % 8 == 0 and d_model <= 1024 else 1
        controls = {
            "d_model": widgets.IntSlider(value=d_model, min=step, max=max(1024, d_model), step=step,
                                         description="d_model", continuous_update=False),
            "h": widgets.SelectionSlider(options=head_options(d_model), value=h, description="h",
                                         continuous_update=False),
            "n": widgets.IntSlider(value=n, min=1, max=max_n, description="n", continuous_update=False),
            "causal": widgets.Checkbox(value=bool(causal), description="causal mask", indent=False),
            "seed": widgets.IntSlider(value=seed, min=0, max=99, description="seed", continuous_update=False),
        }
        self.readout = widgets.HTML()
        self.table = widgets.HTML()
        self.note = widgets.HTML()
        self._models = {}
        self._layout = None
        canvas = FigureImage(max_width="100%")
        super().__init__(controls, [widgets.VBox([self.readout, self.table]), self.note, canvas.widget], canvas)
        self.update()

    def _changed(self, change):
        if change["owner"] is self.controls["d_model"] and not self._paused:
            h = self.controls["h"]
            options = head_options(change["new"])
            with self.paused():  # options= resets the value: one update after both are set
                keep = nearest(options, h.value)
                h.options = options
                h.value = keep
            return
        super()._changed(change)

    def model(self, d_model, h, seed):
        key = (d_model, h, seed)
        if key not in self._models:
            if len(self._models) > 8:
                self._models.clear()
            self._models[key] = MultiHeadAttention.from_seed(d_model, h, seed)
        return self._models[key]

    def update(self, change=None):
        c = self.controls
        d_model, h, n, causal, seed = (c[k].value for k in ("d_model", "h", "n", "causal", "seed"))
        d_k = head_dim(d_model, h)
        x = example_embeddings(n, d_model, seed)  # (n, d_model)
        _, weights = self.model(d_model, h, seed)(x, causal=causal)  # (h, n, n)
        shown = min(h, MAX_PANELS)
        mask = causal_mask(n) if causal else None
        panels = [masked(weights[k], mask) for k in range(shown)]
        layout = (shown, n)
        if not self.canvas.drawing:
            pass  # under nbgrader: no figure at all
        elif layout != self._layout:
            tokens = self.tokens[:n]
            title = f"One n × n = {n} × {n} weight matrix per head"
            if self._layout is not None and self._layout[0] == shown:  # same panels, new n: re-use the figure
                figure, self.images = relabel_head_grid(self.figure, self.images, tokens, tokens, title)
            else:
                figure, self.images = build_head_grid(shown, tokens, tokens, title, figure_width=self.figure_width,
                                                      dpi=self.dpi)
            self._layout = layout
            self._set_images(panels)
            self.canvas.show(figure, self.images)
        else:
            self._set_images(panels)
            self.canvas.refresh()
        rows = shape_table(d_model, h, n)
        self.readout.value = (
            f"<div style='font-size:15px'><b>d_k</b> = d_model / h = {d_model} / {h} = <b>{d_k}</b></div>"
        )
        self.table.value = shape_table_html(rows)
        self.note.value = (
            f"<i>showing {shown} of {h} heads</i>" if shown < h else f"<i>all {h} head{'s' * (h > 1)}</i>"
        ) + (" · hatched cells are masked (a token may not look ahead)" if causal else "")
        self.state = {
            "d_model": d_model, "h": h, "n": n, "d_k": d_k, "causal": causal, "seed": seed,
            "shown_heads": shown, "weights": weights,
            "shown": [image.get_array() for image in self.images] if self.canvas.drawing else panels,
            "table": rows, "score_shape": (n, n), "output_shape": (n, d_model),
        }

    def _set_images(self, panels):
        for image, panel in zip(self.images, panels):
            image.set_data(panel)


def shape_explorer(d_model=512, h=8, n=10, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80):
    """Explorer (a): sliders for d_model, h (divisors of d_model only), n; a causal
    toggle; the d_k readout, the shape table and the per-head weights of a seeded
    block on example embeddings (at most 16 panels).

    ``figure_width`` (inches) and ``dpi`` size the heads' figure: the same pixels at a
    smaller width and a higher dpi give larger lettering (the classroom demo)."""
    return ShapeExplorer(d_model, h, n, causal, tokens, seed, figure_width, dpi)


# --- (b) softmax ---------------------------------------------------------------


class SoftmaxPlayground(Explorer):
    """Scores and a temperature -> softmax(scores / temperature) as bars, and the entropy."""

    def __init__(self, scores=(4.0, 2.0, 5.0), labels=None, temperature=1.0, dpi=80):
        scores = check.array("scores", scores, ndim=1)
        if not 1 <= len(scores) <= 10:
            raise ValueError(f"scores must hold 1 to 10 numbers, got {len(scores)}")
        if labels is None:
            labels = [f"token {i + 1}" for i in range(len(scores))]
        labels = [str(t) for t in labels]
        if len(labels) != len(scores):
            raise ValueError(f"labels must hold {len(scores)} labels, one per score, got {len(labels)}")
        limit = max(10.0, float(np.abs(scores).max()))
        controls = {
            f"s{i + 1}": widgets.FloatSlider(value=float(s), min=-limit, max=limit, step=0.1,
                                             description=f"s{i + 1} ({labels[i]})", readout_format=".1f",
                                             style={"description_width": "initial"})
            for i, s in enumerate(scores)
        }
        controls["temperature"] = widgets.FloatSlider(
            value=float(temperature), min=0.05, max=5.0, step=0.05, description="temperature T",
            readout_format=".2f", style={"description_width": "initial"},
        )
        self.labels = labels
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget], canvas)
        self.bars, self.texts = None, []
        if canvas.drawing:
            figure = WorkbookFigure(figsize=(max(5.0, 1.0 + 0.9 * len(scores)), 3.2), dpi=dpi)
            ax = figure.add_subplot()
            self.bars, self.texts = draw_bars(ax, np.zeros(len(scores)), labels)
            ax.set_title("softmax(s / T): weights of one query", fontsize=12)
            self._set(self._weights())
            canvas.show(figure, [*self.bars.patches, *self.texts])
        self.update()

    def _weights(self):
        scores = np.array([self.controls[f"s{i + 1}"].value for i in range(len(self.labels))])
        T = self.controls["temperature"].value
        return scores, T, softmax(scores / T)

    def _set(self, computed):
        _, _, w = computed
        if self.bars is None:
            return
        for bar, text, v in zip(self.bars.patches, self.texts, w):
            bar.set_height(v)
            text.set_y(v + 0.02)
            text.set_text(f"{v:.4f}")

    def update(self, change=None):
        scores, T, w = computed = self._weights()
        self._set(computed)
        self.canvas.refresh()
        positive = w[w > 0]
        entropy = float(-(positive * np.log(positive)).sum())
        k = len(w)
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6'>"
            f"weights = softmax(s / T) = ({', '.join(f'{v:.4f}' for v in w)})<br>"
            f"sum of e<sup>s/T</sup> = {np.exp(scores / T).sum():.3f}<br>"
            f"entropy H = −Σ w ln w = <b>{entropy:.4f}</b> nats "
            f"(0 = all on one token, ln {k} = {np.log(k):.4f} = uniform)</div>"
        )
        self.state = {"scores": scores, "temperature": T, "weights": w, "entropy": entropy}


def softmax_playground(scores=(4.0, 2.0, 5.0), labels=None, temperature=1.0, dpi=80):
    """Explorer (b), Problem 2.3: one slider per score and a temperature T; the
    weights softmax(s / T) as bars with their values, and the entropy. ``dpi``
    scales the figure."""
    return SoftmaxPlayground(scores, labels, temperature, dpi)


# --- (c) cross-attention -----------------------------------------------------------


class CrossAttentionExplorer(Explorer):
    """n_q decoder queries over n_k encoder keys: one head's n_q x n_k weights (figure s02)."""

    def __init__(self, n_q=4, n_k=6, d_model=64, h=4, seed=0, dpi=80):
        d_model = check.positive_int("d_model", d_model)
        head_dim(d_model, h)
        n_q = check.positive_int("n_q", n_q)
        n_k = check.positive_int("n_k", n_k)
        for name, value in (("n_q", n_q), ("n_k", n_k)):
            if value > MAX_CROSS:
                raise ValueError(f"{name} must be at most {MAX_CROSS}, got {value}")
        self.d_model, self.h, self.dpi = d_model, h, dpi
        self.block = MultiHeadAttention.from_seed(d_model, h, seed)
        self.x_q = example_embeddings(MAX_CROSS, d_model, seed + 1)  # decoder tokens; first n_q used
        self.x_kv = example_embeddings(MAX_CROSS, d_model, seed + 2)  # encoder tokens; first n_k used
        controls = {
            "n_q": widgets.IntSlider(value=n_q, min=1, max=MAX_CROSS, description="n_q (decoder)",
                                     continuous_update=False, style={"description_width": "initial"}),
            "n_k": widgets.IntSlider(value=n_k, min=1, max=MAX_CROSS, description="n_k (encoder)",
                                     continuous_update=False, style={"description_width": "initial"}),
            "head": widgets.Dropdown(options=[(f"head {i + 1}", i + 1) for i in range(h)], value=1,
                                     description="head"),
        }
        self.readout = widgets.HTML()
        self._layout = None
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget], canvas)
        self.update()

    def update(self, change=None):
        n_q, n_k, head = (self.controls[k].value for k in ("n_q", "n_k", "head"))
        output, weights = self.block(self.x_q[:n_q], self.x_kv[:n_k])  # (n_q, d_model), (h, n_q, n_k)
        shown = weights[head - 1]
        if not self.canvas.drawing:
            pass  # under nbgrader: no figure at all
        elif (n_q, n_k) != self._layout:
            figure = cross_heatmap(shown, DECODER_TOKENS[:n_q], ENCODER_TOKENS[:n_k],
                                   title=f"Cross-attention weights: {n_q} decoder queries × {n_k} encoder keys")
            figure.set_dpi(self.dpi)
            ax = figure.axes[0]
            self.image_artist, self.texts = ax.images[0], list(ax.texts)
            self._layout = (n_q, n_k)
            self.canvas.show(figure, [self.image_artist, *self.texts])
        else:
            self.image_artist.set_data(masked(shown, None))
            update_texts(self.texts, self.image_artist)
            self.canvas.refresh()
        d_k = self.d_model // self.h
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6'>"
            f"Q<sub>i</sub>: n_q × d_k = {n_q} × {d_k} &nbsp; K<sub>i</sub>, V<sub>i</sub>: n_k × d_k = "
            f"{n_k} × {d_k}<br>"
            f"score matrix Q<sub>i</sub>K<sub>i</sub><sup>T</sup>: n_q × n_k = <b>{n_q} × {n_k}</b> "
            f"(softmax over each row's {n_k} keys)<br>"
            f"output: n_q × d_model = <b>{n_q} × {self.d_model}</b> (one vector per query)</div>"
        )
        self.state = {
            "n_q": n_q, "n_k": n_k, "head": head, "d_model": self.d_model, "h": self.h,
            "weights": shown, "all_weights": weights,
            "shown": self.image_artist.get_array() if self.canvas.drawing else masked(shown, None),
            "score_shape": shown.shape, "output_shape": output.shape,
        }


def cross_attention_explorer(n_q=4, n_k=6, d_model=64, h=4, seed=0, dpi=80):
    """Explorer (c), Problem 5.3: n_q and n_k sliders and a head selector; the s02
    heatmap (decoder queries as rows, encoder keys as columns) and the shapes.
    ``dpi`` scales the figure."""
    return CrossAttentionExplorer(n_q, n_k, d_model, h, seed, dpi)


__all__ = [
    "CrossAttentionExplorer",
    "ShapeExplorer",
    "SoftmaxPlayground",
    "cross_attention_explorer",
    "shape_explorer",
    "softmax_playground",
]
