"""Interactive explorers (ipywidgets 8) for the workbook's levels.

- :func:`shape_explorer`: d_model, h (only divisors of d_model), n and a causal
  mask; d_k, the shape table and every head's n x n weights (Levels 1-2).
- :func:`softmax_playground`: one slider per score and a temperature; the
  weights as bars and their entropy (Problem 2.3).
- :func:`cross_attention_explorer`: n_q decoder queries over n_k encoder keys,
  one head at a time (figure s02, Problem 5.3).
- :func:`head_view_explorer`: where one word of a prepared sentence looks, every
  head at once (lines to the keys, one colour per head; the classroom demo).

Each returns a ``VBox`` whose ``.controls`` (name -> widget) are kept apart from
its outputs, whose ``.state`` dict holds what is shown (shapes, the arrays drawn),
and whose ``.image`` is an ``ipywidgets.Image`` of PNG bytes. Figures are drawn
with Agg, once per layout; a change of data only redraws the images and texts
that changed over a saved background (blitting) and re-encodes the PNG.
Nothing here runs in a graded cell: these are for people moving sliders. So when
drawing is switched off (:func:`mha_core.drawing`, ``MHA_CORE_DRAW=0``: the grading
side does it for autograding, the Validate button and the re-check), where no one
sees a frame, the explorers compute their state but draw nothing: a figure's layout
costs a second or more.
"""

import contextlib
import functools
import html
import io

import ipywidgets as widgets
import numpy as np
import traitlets
from PIL import Image as PILImage

from . import _validate as check
from .access import AltImage, aria_script, live
from . import heads, plots
from .attention import causal_mask, head_dim, scaled_dot_product_attention, softmax
from .counting import shape_table
from .counting import flop_count, parameter_count
from .layer import MultiHeadAttention, shared_projection_attention, summed_heads_attention
from .plots import (
    EXAMPLE_TOKENS,
    PATTERN_TITLES,
    UNTRAINED,
    build_head_grid,
    CMAP,
    PALETTE,
    cross_heatmap,
    describe_panel,
    describe_rows,
    draw_bars,
    draw_flops,
    draw_heatmap,
    draw_parameters,
    example_embeddings,
    head_options,
    headless,
    masked,
    relabel_head_grid,
    min_text_px,
    fit_head_grid,
    ReadableHeadGrid,
    ReadableHeatmap,
    update_flops,
    update_parameters,
    raise_text,
    DECODER_LABEL,
    ENCODER_LABEL,
    shape_table_html,
    update_texts,
    WorkbookFigure,
)

MAX_PANELS = 16  # heads drawn by the shape explorer; more are summarised, not drawn
PATTERNS = ("previous", "same word", "first", "pronoun")  # the constructed heads, in order
MAX_N = 24
MAX_CROSS = 12
# Level 2's sentence, continued so that n can grow past 10 with real words.
TOKENS = EXAMPLE_TOKENS + "so it slept all afternoon while the dog watched birds outside the window".split()
# Cross-attention translates English (source, encoder: keys and values) into French (target, decoder: queries).
ENCODER_TOKENS = heads.EXAMPLE_SOURCE  # keys, n_k <= 12
DECODER_TOKENS = heads.EXAMPLE_TARGET  # queries, n_q <= 12
PNG_COMPRESS_LEVEL = 1  # fast zlib: a 16-panel grid encodes in a few ms
SOURCES = [("random (untrained)", "random"), ("constructed heads", "constructed")]


def source_control(value="constructed"):
    """Random or constructed weights: radio buttons, whose state a screen reader announces."""
    if value not in ("random", "constructed"):
        raise ValueError(f"source must be 'random' or 'constructed', got {value!r}")
    return widgets.RadioButtons(options=SOURCES, value=value, description="weights",
                                tooltip="where the heads' W_Q and W_K come from", orientation="vertical")


def switch(description, off, on, value=False):
    """An on/off choice as two radio buttons (their state is announced), values False and True."""
    return widgets.RadioButtons(options=[(off, False), (on, True)], value=bool(value), description=description,
                                style={"description_width": "initial"})


def cycled_patterns(base, h):
    """One constructed pattern per head: ``base`` in order, then "random" for the heads past it."""
    return tuple(base[:h]) + ("random",) * max(0, h - len(base))


def _nowrap(text):
    """HTML that never breaks across lines (a shape such as 12 × 32)."""
    return f"<span style='white-space:nowrap'>{text}</span>"


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
        # The alt text is the image's tooltip (its title, and alt: see mha_core.access), and is
        # written under it too, in a live region announced when the figure changes.
        self.widget = AltImage(format="png", layout=widgets.Layout(**layout))
        self.caption = live(widgets.HTML())
        self.caption.add_class("mha-alt")  # a page may show it to screen readers only (the classroom demo)
        self.alt = ""
        self.figure = None
        self.dynamic = []
        self.background = None
        self.builds = 0  # how many layouts were drawn: tests and the benchmark read it
        self.drawing = not headless()

    def show(self, figure, dynamic):
        self.figure = figure
        if not self.drawing:
            self.dynamic = list(dynamic)
            return
        self.animate(dynamic)  # left out of canvas.draw(); drawn by refresh()
        figure.canvas.draw()
        self.background = figure.canvas.copy_from_bbox(figure.bbox)
        width, _ = figure.canvas.get_width_height()
        # Shown at its own size (JupyterLab would stretch it blurry to the cell's width), smaller on narrow screens.
        self.widget.layout.width, self.widget.layout.max_width, self.widget.layout.height = f"{width}px", "100%", "auto"
        self.builds += 1
        self.mark_text_size()
        self.refresh()

    def animate(self, dynamic):
        """Set the artists :meth:`refresh` draws over the background (new bars, say) without drawing it again."""
        self.dynamic = list(dynamic)
        for artist in self.dynamic:
            artist.set_animated(True)

    def mark_text_size(self):
        """Name the figure's smallest text in a CSS class of the image, ``mha-text-<px>px`` (rounded
        down, at the figure's own size): a browser test reads it and the displayed scale."""
        px = min_text_px(self.figure)
        classes = [c for c in self.widget._dom_classes if not c.startswith("mha-text-")]
        if px is not None:
            classes.append(f"mha-text-{int(px + 1e-6)}px")
        self.widget._dom_classes = tuple(classes)

    def describe(self, text):
        """Set the alt text: the caption under the image, announced when it changes."""
        self.alt = text
        self.widget.tooltip = text
        self.caption.value = (f"<div aria-live='polite' style='font-size:12px;color:#444;max-width:60em'>"
                              f"{html.escape(text)}</div>")

    def restage(self):
        """Draw the static artists again (their data changed), save them as the background and refresh;
        no new layout is counted."""
        if not self.drawing:
            return
        self.figure.canvas.draw()
        self.background = self.figure.canvas.copy_from_bbox(self.figure.bbox)
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


@functools.cache
def _blas():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # finds the BLAS libraries once


def one_blas_thread():
    """A context in which BLAS runs on one thread. An explorer's products are small (8 x 512 by 512 x 512):
    threads cost more than they save, and on a busy machine (a projector laptop, a shared server)
    waiting for them made a change up to twice as slow."""
    return _blas().limit(limits=1, user_api="blas")


class Explorer(widgets.VBox):
    """A container of controls and outputs; ``.controls``, ``.state``, ``.image``, ``.canvas``."""

    def __init__(self, controls, outputs, canvas, **kwargs):
        self.controls = dict(controls)
        self.canvas = canvas
        self.state = {}
        self._paused = False
        super().__init__(**kwargs)
        if getattr(self, "readout", None) is not None:
            live(self.readout)  # its new values are announced
        self.script = aria_script()  # kept among the children (_with_script); a layout of parts shows it itself
        # The controls keep their own width (flex 0 0 auto): a long readout beside them wraps instead of
        # squeezing them (in JupyterLab that hid a slider's value and cut radio labels).
        self.controls_box = widgets.VBox(list(self.controls.values()), layout=widgets.Layout(flex="0 0 auto"))
        self.children = [widgets.HBox([self.controls_box, *outputs[:1]]), *outputs[1:]]
        for control in self.controls.values():
            control.observe(self._changed, names="value")

    @traitlets.validate("children")
    def _with_script(self, proposal):
        """The children, and last the page script that names the sliders (see mha_core.access)."""
        children = tuple(proposal["value"])
        script = getattr(self, "script", None)
        return children if script is None or script in children else children + (script,)

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
            with self.image.hold_sync(), one_blas_thread():
                self.update()

    def _changed(self, change):
        if not self._paused:
            # the new picture and its alt text in one message: the image's view redraws once per
            # message (a new blob: URL each time), so a later alt text would show the picture again
            with self.image.hold_sync(), one_blas_thread():
                self.update(change)

    def update(self, change=None):
        raise NotImplementedError


# --- (a) shapes and heads ------------------------------------------------------


class ShapeExplorer(Explorer):
    """d_model, h, n, causal and the weights' source -> d_k, the shape table and every head's weights."""

    def __init__(self, d_model=256, h=4, n=8, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80,
                 source="random", box=None, text_px=15, figure=True):
        d_model = check.positive_int("d_model", d_model)
        if box is not None:
            box = tuple(check.positive_int("box", v) for v in box)
            if len(box) != 2:
                raise ValueError(f"box must be (width, height) in pixels, got {box}")
        self.box, self.text_px, self.grid = box, text_px, None
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
            # A dropdown, not a selection slider: a slider's handle would announce its index, not h.
            "h": widgets.Dropdown(options=head_options(d_model), value=h, description="h (heads)",
                                  style={"description_width": "initial"}),
            "n": widgets.IntSlider(value=n, min=1, max=max_n, description="n", continuous_update=False,
                                   tooltip="n: the number of tokens"),
            "causal": switch("causal mask", "off", "on", causal),
            "seed": widgets.IntSlider(value=seed, min=0, max=99, description="seed", continuous_update=False),
            "source": source_control(source),
        }
        if box is not None:  # the heads past those that fit, a page at a time
            controls["heads"] = widgets.Dropdown(options=[("heads 1 to 1", 1)], value=1, description="show",
                                                 style={"description_width": "initial"})
        self.readout = widgets.HTML()
        self.table = widgets.HTML()
        self.note = widgets.HTML()
        self._models = {}
        self._layout = self._room = None
        canvas = FigureImage(max_width="100%")
        canvas.drawing = canvas.drawing and bool(figure)  # figure=False: the shapes alone, nothing drawn
        super().__init__(controls, [widgets.VBox([self.readout, self.table]), self.note, canvas.widget,
                                    canvas.caption], canvas)
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

    def model(self, d_model, h, seed, source="random", n=None):
        """The block and its input: random projections on example embeddings, or constructed heads
        (None when d_k is too small for their codes)."""
        key = (d_model, h, seed, source, n if source == "constructed" else None)
        if key not in self._models:
            if len(self._models) > 8:
                self._models.clear()
            if source == "random":
                self._models[key] = MultiHeadAttention.from_seed(d_model, h, seed)
            else:
                try:
                    self._models[key] = heads.constructed(self.tokens[:n], cycled_patterns(PATTERNS, h),
                                                          d_model=d_model, seed=seed)
                except ValueError:  # d_k too small for the word and position codes
                    self._models[key] = None
        return self._models[key]

    def update(self, change=None):
        c = self.controls
        d_model, h, n, causal, seed, source = (c[k].value for k in ("d_model", "h", "n", "causal", "seed", "source"))
        d_k = head_dim(d_model, h)
        built = self.model(d_model, h, seed, "constructed", n) if source == "constructed" else None
        if built is None:
            x = example_embeddings(n, d_model, seed)  # (n, d_model)
            _, weights = self.model(d_model, h, seed)(x, causal=causal)  # (h, n, n)
            names = [f"head {k + 1}" for k in range(h)]
        else:
            _, weights = built.block(built.x, causal=causal)  # (h, n, n)
            names = [f"head {k + 1}: {PATTERN_TITLES[p]}" for k, p in enumerate(built.patterns)]
        untrained = built is None
        first = 1
        if self.box is None:
            shown = min(h, MAX_PANELS)
        else:
            fit = fit_head_grid(h, n, max(len(t) for t in self.tokens[:n]), self.box, self.text_px)
            shown = fit[0] * fit[1]
            first = self._pages(h, shown)
        mask = causal_mask(n) if causal else None
        panels = [masked(weights[first - 1 + k], mask) for k in range(shown)]
        names = names[first - 1:first - 1 + shown]
        title = f"One n × n = {n} × {n} weight matrix per head" + (f"\n{UNTRAINED}" if untrained else "")
        if self.box is not None:
            layout = (fit, n, untrained)
            if not self.canvas.drawing:
                pass
            elif layout != self._layout:
                if self.grid is None:
                    self.grid = ReadableHeadGrid(self.box, self.text_px)
                self.images = self.grid.layout(*fit[:3], self.tokens[:n], fit[3])
                self.grid.title.set_text(title)
                self._layout = layout
                self._set_images(panels, names)
                self.canvas.show(self.grid.figure, [*self.images, *(image.axes.title for image in self.images)])
            else:
                self._set_images(panels, names)
                self.canvas.refresh()
        elif not self.canvas.drawing:
            pass  # under nbgrader: no figure at all
        elif (shown, n, untrained) != self._layout:
            tokens = self.tokens[:n]
            # What the margins depend on besides the labels' length: the panels, the title's lines, and
            # the labels' size and angle (smaller past 16 tokens, vertical past 10).
            room = (shown, untrained, n <= 16, n <= 10)
            longest = max(len(t) for t in tokens)
            if self._layout is not None and self._layout[0] == shown:  # same panels, new n: re-use the figure
                figure, self.images = relabel_head_grid(self.figure, self.images, tokens, tokens, title)
            else:
                figure, self.images = build_head_grid(shown, tokens, tokens, title, figure_width=self.figure_width,
                                                      dpi=self.dpi)
            if self._room is None or room != self._room[0] or longest > self._room[1]:
                figure.set_layout_engine("constrained")  # margins for these labels (laid out by show's draw)
                self._room = (room, longest)
            self._layout = (shown, n, untrained)
            self._set_images(panels, names)
            self.canvas.show(figure, self.images)
            figure.set_layout_engine("none")  # kept while the labels fit the margins: a new n only relabels
        else:
            self._set_images(panels, names)
            self.canvas.refresh()
        rows = shape_table(d_model, h, n)
        self.readout.value = (
            f"<div style='font-size:15px' aria-live='polite'><b>d_k</b> = d_model / h = {d_model} / {h} = "
            f"<b>{d_k}</b></div>"
        )
        self.table.value = shape_table_html(rows)
        if source == "constructed" and untrained:
            need = "constructed heads need a wider d_k for these words and positions: showing random weights"
        else:
            need = ""
        self.note.value = (
            f"<i>all {h} head{'s' * (h > 1)}</i>" if shown >= h
            else f"<i>showing {shown} of {h} heads</i>" if self.box is None
            else f"<i>showing head{'s' * (shown > 1)} {first}{f' to {first + shown - 1}' * (shown > 1)} of {h}</i>"
        ) + (" · hatched cells are masked (a token may not look ahead)" if causal else "") + (
            f" · <b>{UNTRAINED}</b>" if untrained else " · heads built to follow a pattern (mha_core.heads)"
        ) + (f" · {need}" if need else "")
        self.canvas.describe(
            f"{shown} panels of {n} × {n} attention weights ({UNTRAINED if untrained else 'constructed heads'}). "
            + "; ".join(describe_panel(panels[k], names[k]) for k in range(shown)) + "."
        )
        self.state = {
            "d_model": d_model, "h": h, "n": n, "d_k": d_k, "causal": causal, "seed": seed, "source": source,
            "untrained": untrained, "head_names": names[:shown], "first_head": first,
            "shown_heads": shown, "weights": weights,
            "grid": None if self.box is None or not self.canvas.drawing else self.grid.shape,
            "shown": [image.get_array() for image in self.images] if self.canvas.drawing else panels,
            "table": rows, "score_shape": (n, n), "output_shape": (n, d_model), "alt": self.canvas.alt,
        }

    def _set_images(self, panels, names):
        for image, panel, name in zip(self.images, panels, names):
            image.set_data(panel)
            if self.box is None:
                image.axes.set_title(name, fontsize=9 if len(name) > 12 else 10)
            else:  # "head 3: same word elsewhere" on two lines: narrow panels' titles never meet
                image.axes.set_title(name.replace(": ", ":\n"), fontsize=self.text_px, linespacing=1.1)

    def _pages(self, h, shown):
        """Set the "show" choices to pages of ``shown`` heads (the last page ends at head h); return the
        first head of the chosen page (the page holding the head first shown before)."""
        starts = sorted({min(start, h - shown + 1) for start in range(1, h + 1, shown)})
        options = [(f"heads {a} to {a + shown - 1} of {h}" if shown > 1 else f"head {a} of {h}", a) for a in starts]
        control = self.controls["heads"]
        keep = max(a for a in starts if a <= max(1, min(control.value, h)))
        if list(control.options) != options:
            was, self._paused = self._paused, True  # no update for the options' own change
            try:
                control.options = options
                control.value = keep
            finally:
                self._paused = was
        return control.value


def shape_explorer(d_model=256, h=4, n=8, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80,
                   source="random", box=None, text_px=15, figure=True):
    """Explorer (a): sliders for d_model and n, h (divisors of d_model only), a causal
    switch and the weights' source (random, untrained projections or constructed heads:
    previous token, same word, first token, pronoun, then random); the d_k readout, the
    shape table and the per-head weights (at most 16 panels).

    ``figure_width`` (inches) and ``dpi`` size the heads' figure: the same pixels at a
    smaller width and a higher dpi give larger lettering. ``box`` = (width, height) in pixels
    draws the heads for a screen instead (the classroom demo): every text ``text_px`` pixels,
    as many heads as fit with every token labelled, and a "show" choice for the other heads.
    ``figure=False`` draws no figure at all (a screen that shows only the shapes)."""
    return ShapeExplorer(d_model, h, n, causal, tokens, seed, figure_width, dpi, source, box, text_px, figure)


# --- (b) softmax ---------------------------------------------------------------


D_K_OPTIONS = [1, 4, 16, 64, 256]  # sqrt: 1, 2, 4, 8, 16
MAX_T = 16.0


class SoftmaxPlayground(Explorer):
    """Scores and a temperature -> softmax(scores / temperature) as bars, and the entropy.

    The temperature is free, or set to sqrt(d_k): dividing the scores by sqrt(d_k), as
    attention does, is a softmax at temperature T = sqrt(d_k) (T = 8 for d_k = 64).
    """

    def __init__(self, scores=(1.0, 3.0, 2.0), labels=None, temperature=1.0, dpi=80, d_k=64, link=False):
        scores = check.array("scores", scores, ndim=1)
        if not 1 <= len(scores) <= 10:
            raise ValueError(f"scores must hold 1 to 10 numbers, got {len(scores)}")
        if labels is None:
            labels = [f"token {i + 1}" for i in range(len(scores))]
        labels = [str(t) for t in labels]
        if len(labels) != len(scores):
            raise ValueError(f"labels must hold {len(scores)} labels, one per score, got {len(labels)}")
        if d_k not in D_K_OPTIONS:
            raise ValueError(f"d_k must be one of {D_K_OPTIONS}, got {d_k!r}")
        limit = max(10.0, float(np.abs(scores).max()))
        controls = {
            f"s{i + 1}": widgets.FloatSlider(value=float(s), min=-limit, max=limit, step=0.1,
                                             description=f"s{i + 1} ({labels[i]})", readout_format=".1f",
                                             style={"description_width": "initial"})
            for i, s in enumerate(scores)
        }
        controls["temperature"] = widgets.FloatSlider(
            value=float(temperature), min=0.05, max=MAX_T, step=0.05, description="temperature T",
            readout_format=".2f", style={"description_width": "initial"},
        )
        controls["link"] = switch("T is", "free (slider)", "√d_k (attention's scaling)", link)
        controls["d_k"] = widgets.Dropdown(options=D_K_OPTIONS, value=d_k, description="d_k",
                                           style={"description_width": "initial"})
        if link:
            controls["temperature"].value, controls["temperature"].disabled = float(np.sqrt(d_k)), True
        self.labels = labels
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.bars, self.texts = None, []
        if canvas.drawing:
            figure = WorkbookFigure(figsize=(max(5.0, 1.0 + 0.9 * len(scores)), 3.2), dpi=dpi)
            ax = figure.add_subplot()
            self.bars, self.texts = draw_bars(ax, np.zeros(len(scores)), labels)
            ax.set_title("softmax(s / T): weights of one query", fontsize=12)
            self._set(self._weights())
            canvas.show(figure, [*self.bars.patches, *self.texts])
        self.update()

    def _changed(self, change):
        c = self.controls
        if change["owner"] in (c["link"], c["d_k"]) and c["link"].value and not self._paused:
            with self.paused():  # T follows sqrt(d_k), and the slider shows it
                c["temperature"].value = float(np.sqrt(c["d_k"].value))
                c["temperature"].disabled = True
            return
        if change["owner"] is c["link"]:
            c["temperature"].disabled = bool(change["new"])
        super()._changed(change)

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
        d_k, linked = self.controls["d_k"].value, self.controls["link"].value
        self._set(computed)
        self.canvas.refresh()
        positive = w[w > 0]
        entropy = float(-(positive * np.log(positive)).sum())
        k = len(w)
        link = (f"T = √d_k = √{d_k} = <b>{np.sqrt(d_k):g}</b>: dividing the scores by √d_k, as attention does, "
                f"is this softmax at temperature {np.sqrt(d_k):g}" if linked else
                f"attention divides by √d_k: for d_k = {d_k} that is T = √{d_k} = {np.sqrt(d_k):g}")
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6' aria-live='polite'>"
            f"weights = softmax(s / T) = ({', '.join(f'{v:.4f}' for v in w)})<br>"
            f"sum of e<sup>s/T</sup> = {np.exp(scores / T).sum():.3f}<br>"
            f"entropy H = −Σ w ln w = <b>{entropy:.4f}</b> nats "
            f"(0 = all on one token, ln {k} = {np.log(k):.4f} = uniform)<br>{link}</div>"
        )
        top = int(np.argmax(w))
        self.canvas.describe(f"Bar chart of the weights at T = {T:.2f}: " + ", ".join(
            f"{label} {v:.2f}" for label, v in zip(self.labels, w)) + f"; {self.labels[top]} highest.")
        self.state = {"scores": scores, "temperature": T, "weights": w, "entropy": entropy, "d_k": d_k,
                      "linked": linked, "alt": self.canvas.alt}


def softmax_playground(scores=(1.0, 3.0, 2.0), labels=None, temperature=1.0, dpi=80, d_k=64, link=False):
    """Explorer (b), Problem 2.3: one slider per score and a temperature T; the
    weights softmax(s / T) as bars with their values, and the entropy. ``link=True``
    (or the "T is √d_k" switch) sets T = √d_k for the chosen ``d_k``: dividing by
    √d_k is a temperature. ``dpi`` scales the figure."""
    return SoftmaxPlayground(scores, labels, temperature, dpi, d_k, link)


# --- (c) cross-attention -----------------------------------------------------------


CROSS_PATTERNS = ("translation", "same position", "first")


class CrossAttentionExplorer(Explorer):
    """n_q target (decoder) queries over n_k source (encoder) keys: one head's n_q x n_k weights (figure s02).

    The source is English (:data:`ENCODER_TOKENS`), the target French (:data:`DECODER_TOKENS`).
    """

    def __init__(self, n_q=3, n_k=5, d_model=96, h=3, seed=0, dpi=80, source="constructed", box=None, text_px=15):
        d_model = check.positive_int("d_model", d_model)
        if box is not None:
            box = tuple(check.positive_int("box", v) for v in box)
            if len(box) != 2:
                raise ValueError(f"box must be (width, height) in pixels, got {box}")
        self.box, self.text_px, self.heat = box, text_px, None
        head_dim(d_model, h)
        n_q = check.positive_int("n_q", n_q)
        n_k = check.positive_int("n_k", n_k)
        for name, value in (("n_q", n_q), ("n_k", n_k)):
            if value > MAX_CROSS:
                raise ValueError(f"{name} must be at most {MAX_CROSS}, got {value}")
        self.d_model, self.h, self.dpi, self.seed = d_model, h, dpi, seed
        self.block = MultiHeadAttention.from_seed(d_model, h, seed)
        self.x_q = example_embeddings(MAX_CROSS, d_model, seed + 1)  # decoder tokens; first n_q used
        self.x_kv = example_embeddings(MAX_CROSS, d_model, seed + 2)  # encoder tokens; first n_k used
        self.patterns = cycled_patterns(CROSS_PATTERNS, h)
        self._built = {}
        controls = {
            "n_q": widgets.IntSlider(value=n_q, min=1, max=MAX_CROSS, description="n_q (decoder)",
                                     continuous_update=False, style={"description_width": "initial"}),
            "n_k": widgets.IntSlider(value=n_k, min=1, max=MAX_CROSS, description="n_k (encoder)",
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

    def constructed(self, n_q, n_k):
        """Constructed heads for the first n_k source and n_q target words (None if d_k is too small)."""
        key = (n_q, n_k)
        if key not in self._built:
            try:
                self._built[key] = heads.translation(ENCODER_TOKENS[:n_k], DECODER_TOKENS[:n_q], self.patterns,
                                                     d_model=self.d_model, seed=self.seed)
            except ValueError:
                self._built[key] = None
        return self._built[key]

    def update(self, change=None):
        n_q, n_k, head, source = (self.controls[k].value for k in ("n_q", "n_k", "head", "source"))
        built = self.constructed(n_q, n_k) if source == "constructed" else None
        if built is None:
            output, weights = self.block(self.x_q[:n_q], self.x_kv[:n_k])  # (n_q, d_model), (h, n_q, n_k)
        else:
            output, weights = built.block(built.x, built.x_kv)
        untrained = built is None
        name = f"head {head}" + ("" if untrained else f" ({PATTERN_TITLES[self.patterns[head - 1]]})")
        shown = weights[head - 1]
        targets, sources = DECODER_TOKENS[:n_q], ENCODER_TOKENS[:n_k]
        if not self.canvas.drawing:
            pass  # under nbgrader: no figure at all
        elif self.box is not None:  # one figure for every n_q, n_k: resized and relabelled, never rebuilt
            if self.heat is None:
                self.heat = ReadableHeatmap(self.box, self.text_px, MAX_CROSS, MAX_CROSS, xlabel=ENCODER_LABEL,
                                            ylabel=DECODER_LABEL)
                self.image_artist = self.heat.image
            if (n_q, n_k, untrained) != self._layout:
                dynamic = self.heat.layout(targets, sources)
                self.heat.title.set_text(f"Cross-attention, English → French: {n_q} target queries × {n_k} "
                                         f"source keys" + (f"\n{UNTRAINED}" if untrained else ""))
                self.heat.set_data(shown)
                self._layout = (n_q, n_k, untrained)
                self.canvas.show(self.heat.figure, dynamic)
            else:
                self.heat.set_data(shown)
                self.canvas.refresh()
        elif (n_q, n_k, untrained) != self._layout:
            figure = cross_heatmap(shown, targets, sources, untrained=untrained,
                                   title=f"Cross-attention, English → French:\n"
                                         f"{n_q} target queries × {n_k} source keys")
            figure.set_dpi(self.dpi)
            ax = figure.axes[0]
            self.image_artist, self.texts = ax.images[0], list(ax.texts)
            self._layout = (n_q, n_k, untrained)
            self.canvas.show(figure, [self.image_artist, *self.texts])
        else:
            self.image_artist.set_data(masked(shown, None))
            update_texts(self.texts, self.image_artist)
            self.canvas.refresh()
        d_k = self.d_model // self.h
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6'>"
            f"showing <b>{name}</b><br>"
            f"Q<sub>i</sub> (from the decoder): {_nowrap(f'n_q × d_k = {n_q} × {d_k}')} &nbsp; "
            f"K<sub>i</sub>, V<sub>i</sub> (from the encoder): {_nowrap(f'n_k × d_k = {n_k} × {d_k}')}<br>"
            f"score matrix Q<sub>i</sub>K<sub>i</sub><sup>T</sup>: {_nowrap(f'n_q × n_k = <b>{n_q} × {n_k}</b>')} "
            f"(softmax over each row's {n_k} keys)<br>"
            f"output: {_nowrap(f'n_q × d_model = <b>{n_q} × {self.d_model}</b>')} (one vector per query)"
            + (f"<br><b>{UNTRAINED}</b>" if untrained else "<br>heads built from a small English → French lexicon")
            + (" (constructed heads need a wider d_k for these words and positions)"
               if untrained and source == "constructed" else "")
            + "</div>"
        )
        self.canvas.describe(describe_rows(shown, targets, sources, f"Cross-attention weights of {name}, "
                                             f"{UNTRAINED if untrained else 'constructed'}, French target rows over "
                                             "English source columns"))
        self.state = {
            "n_q": n_q, "n_k": n_k, "head": head, "d_model": self.d_model, "h": self.h, "source": source,
            "untrained": untrained, "weights": shown, "all_weights": weights,
            "shown": self.image_artist.get_array() if self.canvas.drawing else masked(shown, None),
            "score_shape": shown.shape, "output_shape": output.shape, "alt": self.canvas.alt,
            "targets": targets, "sources": sources,
        }


def cross_attention_explorer(n_q=3, n_k=5, d_model=96, h=3, seed=0, dpi=80, source="constructed", box=None,
                             text_px=15):
    """Explorer (c), Problem 5.3: n_q and n_k sliders, a head selector and the weights'
    source (constructed heads: translation, same position, first source word; or random,
    untrained projections); the s02 heatmap (French target words, decoder queries, as rows;
    English source words, encoder keys and values, as columns) and the shapes.
    ``dpi`` scales the figure; ``box`` = (width, height) in pixels draws it for a screen instead
    (every text ``text_px`` pixels, one figure resized for every n_q and n_k)."""
    return CrossAttentionExplorer(n_q, n_k, d_model, h, seed, dpi, source, box, text_px)


# --- (d) Level 3: FLOPs against h ---------------------------------------------------------------


def axes_contents(figure):
    """What a new d_model or n changes in a figure of counts against h: every axes' bars, lines, texts, title
    and both axes (ticks and labels). The rest (the figure's title, the axes' frames, the legends) is the
    background they are drawn over."""
    return [artist for ax in figure.axes for artist in (ax.xaxis, ax.yaxis, ax.title, *ax.patches, *ax.lines,
                                                        *ax.texts)]


def lay_out_once(canvas, figure):
    """Lay ``figure`` out (constrained) once, then show it on ``canvas`` with its axes' contents dynamic."""
    figure.canvas.draw()
    figure.set_layout_engine("none")
    canvas.show(figure, axes_contents(figure))


def redraw_contents(canvas):
    """Draw the axes' contents of ``canvas``'s figure (changed in place, new bars maybe) over its frame."""
    canvas.animate(axes_contents(canvas.figure))
    canvas.refresh()


class FlopExplorer(Explorer):
    """d_model and n -> the operation counts against h (figure of :func:`mha_core.plots.flop_plot`)."""

    def __init__(self, d_model=256, n=8, dpi=80):
        d_model, n = check.positive_int("d_model", d_model), check.positive_int("n", n)
        controls = {
            "d_model": widgets.IntSlider(value=d_model, min=8, max=max(1024, d_model), step=8, description="d_model",
                                         continuous_update=False),
            "n": widgets.IntSlider(value=n, min=1, max=max(64, n), description="n (tokens)", continuous_update=False,
                                   style={"description_width": "initial"}),
        }
        self.dpi = dpi
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        d_model, n = self.controls["d_model"].value, self.controls["n"].value
        hs = head_options(d_model)
        counts = [flop_count(d_model, h, n) for h in hs]
        attention = [c["scores"] + c["weighted_sum"] for c in counts]
        claim = [h * attention[0] for h in hs]
        softmax_counts = [c["softmax"] for c in counts]
        if self.canvas.drawing:
            if self.canvas.figure is None:
                figure = WorkbookFigure(figsize=(12, 4.8), dpi=self.dpi)
                left, right = figure.subplots(1, 2)
                figure.suptitle("Problem 3.1: FLOPs against h at a fixed d_model", fontsize=12)
                draw_flops(left, right, d_model, n, hs)
                lay_out_once(self.canvas, figure)
            else:  # new numbers (new bars for a new d_model) in place, drawn over the saved frame and legends
                update_flops(*self.figure.axes[:2], d_model, n, hs)
                redraw_contents(self.canvas)
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6' aria-live='polite'>"
            f"scores + weighted sum = 2·n²·d_model = 2·{n}²·{d_model} = <b>{attention[0]:,}</b> multiply-adds "
            f"for every h from {hs[0]} to {hs[-1]}<br>"
            f"the claim \"h times more\" would be {claim[-1]:,} at h = {hs[-1]}<br>"
            f"softmax: h·n² exponentials, {softmax_counts[0]:,} at h = {hs[0]} to {softmax_counts[-1]:,} at "
            f"h = {hs[-1]}</div>"
        )
        self.canvas.describe(
            f"Operation counts against h (log scale) for d_model = {d_model}, n = {n}: every matrix product "
            f"together is {counts[0]['multiply_adds']:,} for every h; scores plus weighted sum stay flat at "
            f"{attention[0]:,} while the claimed h-times line rises to {claim[-1]:,}; the softmax's exponentials "
            f"grow from {softmax_counts[0]:,} to {softmax_counts[-1]:,}."
        )
        self.state = {"d_model": d_model, "n": n, "hs": hs, "attention": attention, "claim": claim,
                      "softmax": softmax_counts, "multiply_adds": [c["multiply_adds"] for c in counts],
                      "alt": self.canvas.alt}


def flop_explorer(d_model=256, n=8, dpi=80):
    """Level 3, Problem 3.1: d_model and n sliders; every matrix product stacked against h,
    and, on their own log scale, the scores and weighted sum (flat) next to the claim
    "h heads cost h times more" and the softmax's exponentials."""
    return FlopExplorer(d_model, n, dpi)


# --- what h costs, for a screen: FLOPs or parameters against h ---------------------------------------------


class CostExplorer(Explorer):
    """d_model, n and which count -> FLOPs (Problem 3.1) or parameters (Problem 4.1) against h. Both figures
    are laid out once, with every text at least ``text_px`` pixels; a change redraws their axes."""

    def __init__(self, d_model=512, n=10, count="FLOPs", width=1180, height=470, text_px=15):
        d_model, n = check.positive_int("d_model", d_model), check.positive_int("n", n)
        if count not in ("FLOPs", "parameters"):
            raise ValueError(f"count must be 'FLOPs' or 'parameters', got {count!r}")
        sizes = sorted({64, 128, 256, 512, 768, 1024, d_model})
        controls = {
            "d_model": widgets.SelectionSlider(options=sizes, value=d_model, description="d_model",
                                               continuous_update=False),
            "n": widgets.IntSlider(value=n, min=2, max=max(64, n), description="n", continuous_update=False),
            "count": widgets.ToggleButtons(options=["FLOPs", "parameters"], value=count, description="count"),
        }
        self.size, self.text_px = (check.positive_int("width", width), check.positive_int("height", height)), text_px
        self.figures, self.drawn = {}, {}  # count -> its figure, and the (d_model, n) or (d_model,) it shows
        canvas = FigureImage()
        super().__init__(controls, [canvas.widget, canvas.caption], canvas)
        self.children = [widgets.HBox([self.controls["d_model"], self.controls["n"]]), self.controls["count"],
                         canvas.widget, canvas.caption]
        self.update()

    def _figure(self, count, d_model, n, hs):
        """The figure of ``count``, built and laid out (constrained) once and then shown with its axes'
        contents dynamic: their data, ticks and titles, drawn over the saved frame, legends and title."""
        width, height = self.size
        figure = WorkbookFigure(figsize=(width / 72, height / 72), dpi=72)
        if count == "FLOPs":
            draw_flops(*figure.subplots(1, 2), d_model, n, hs)
            figure.suptitle("Problem 3.1: h heads of width d_k = d_model / h cost what one head of width "
                            "d_model costs", fontsize=self.text_px + 2)
        else:
            draw_parameters(figure.add_subplot(), d_model, hs)
            figure.suptitle("Problem 4.1: the parameters of a block do not depend on h", fontsize=self.text_px + 2)
        raise_text(figure, self.text_px)
        from matplotlib.transforms import offset_copy

        for ax in figure.axes:  # the y label at a fixed distance: wider tick labels later never push it out
            ax.yaxis.set_label_coords(0, 0.5, transform=offset_copy(ax.transAxes, figure, x=-4.6 * self.text_px,
                                                                     units="dots"))
        lay_out_once(self.canvas, figure)
        return figure

    def update(self, change=None):
        d_model, n, count = (self.controls[k].value for k in ("d_model", "n", "count"))
        hs = head_options(d_model)
        if not self.canvas.drawing:
            pass
        else:
            shown = (d_model, n) if count == "FLOPs" else (d_model,)  # the parameters do not depend on n
            figure = self.figures.get(count)
            changed = figure is not None and self.drawn[count] != shown
            if figure is None:
                figure = self.figures[count] = self._figure(count, d_model, n, hs)
            elif changed:  # new numbers (new bars for a new d_model) in place
                if count == "FLOPs":
                    update_flops(*figure.axes[:2], d_model, n, hs)
                else:
                    update_parameters(figure.axes[0], d_model, hs)
            self.drawn[count] = shown
            if figure is not self.canvas.figure:
                self.canvas.show(figure, axes_contents(figure))  # the other count: its frame drawn again
            elif changed:
                redraw_contents(self.canvas)
        flops = [flop_count(d_model, h, n) for h in hs]
        if count == "FLOPs":
            self.canvas.describe(f"Operation counts against h for d_model = {d_model}, n = {n}: every matrix "
                                 f"product together is {flops[0]['multiply_adds']:,} multiply-adds for every h; the "
                                 f"softmax's exponentials grow from {flops[0]['softmax']:,} to {flops[-1]['softmax']:,}.")
        else:
            self.canvas.describe(f"Parameters against h for d_model = {d_model}: 4·d_model² = {4 * d_model**2:,} "
                                 f"for every one of the {len(hs)} possible h.")
        self.state = {"d_model": d_model, "n": n, "count": count, "hs": hs, "flops": flops,
                      "parameters": [parameter_count(d_model, h) for h in hs], "alt": self.canvas.alt}


def cost_explorer(d_model=512, n=10, count="FLOPs", width=1180, height=470, text_px=15):
    """What h costs, for a screen (the classroom demo): d_model and n sliders and a FLOPs / parameters
    switch; Problem 3.1's or 4.1's figure, ``width`` x ``height`` pixels, every text ``text_px`` pixels."""
    return CostExplorer(d_model, n, count, width, height, text_px)


# --- (e) Level 3: concatenate, don't sum -------------------------------------------------------------


class SumConcatExplorer(Explorer):
    """The heads' outputs side by side (n, h·d_k) against their sum (n, d_k), and a swap of heads 1 and 2
    that changes the concatenation but not the sum (Problem 3.2)."""

    def __init__(self, tokens=None, token="it", source="constructed", seed=1, dpi=80):
        tokens = list(EXAMPLE_TOKENS if tokens is None else tokens)
        if token not in tokens:
            raise ValueError(f"token must be one of the tokens {tokens}, got {token!r}")
        self.tokens, self.seed, self.dpi = tokens, seed, dpi
        self.built = heads.constructed(tokens, PATTERNS, seed=seed)
        b = self.built.block
        self.random = MultiHeadAttention.from_seed(b.d_model, b.h, seed)
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
        block = self.built.block if source == "constructed" else self.random
        h, d_k = block.h, block.d_k
        order = [1, 0, *range(2, h)] if swapped else list(range(h))
        cols = np.concatenate([np.arange(i * d_k, (i + 1) * d_k) for i in order])
        W_Q, W_K, W_V = block.W_Q[:, cols], block.W_K[:, cols], block.W_V[:, cols]  # heads reordered
        trace = MultiHeadAttention(W_Q, W_K, W_V, np.eye(block.d_model), h).trace(self.built.x)
        _, summed = summed_heads_attention(self.built.x, None, W_Q, W_K, W_V, np.eye(d_k, block.d_model), h)
        names = [f"head {i + 1}" + (f": {PATTERN_TITLES[PATTERNS[i]]}" if source == "constructed" else "")
                 for i in order]
        return trace.concat, summed, names

    def update(self, change=None):
        swapped, token, source = (self.controls[k].value for k in ("order", "token", "source"))
        concat, summed, names = self.outputs(source, swapped)
        plain, plain_sum, _ = self.outputs(source, False)
        n, d_model = concat.shape
        d_k = summed.shape[1]
        h = d_model // d_k
        row = self.tokens.index(token)
        if self.canvas.drawing:
            if self._layout != source:
                self._build(concat, summed, h, d_k, source)
                self._layout = source
            self.images[0].set_data(concat)
            self.images[1].set_data(summed)
            for text, name in zip(self.block_texts, names):
                text.set_text(name.replace(": ", "\n"))
            self.marks[0].set_y(row - 0.5)
            self.marks[1].set_y(row - 0.5)
            self.canvas.refresh()
        changed_concat = int((~np.isclose(concat, plain)).sum())
        changed_sum = float(np.abs(summed - plain_sum).max())
        swap_text = ("heads in order: swap heads 1 and 2 and see which of the two changes" if not swapped else
                     f"heads 1 and 2 swapped: {changed_concat} entries of the concatenation changed, the sum "
                     + ("not at all" if changed_sum < 1e-9 else f"by at most {changed_sum:.1e}"))
        found = ""
        if source == "constructed":
            V = len(self.built.words)
            words = [self.built.words[int(np.argmax(concat[row, k * d_k:k * d_k + V]))] for k in range(h)]
            found = "; ".join(f"{name.replace(': ', ' (') + ')'} found <b>{word}</b>"
                              for name, word in zip(names, words))
            found = (f"<br>token <b>{html.escape(token)}</b>: {found}. The sum mixes these words "
                     "and keeps no trace of which head found which.")
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6' aria-live='polite'>"
            f"concatenated heads: n × h·d_k = {n} × {h}·{d_k} = <b>{n} × {d_model}</b>; "
            f"summed heads: n × d_k = <b>{n} × {d_k}</b><br>"
            f"{swap_text}"
            f"{found}</div>"
        )
        self.canvas.describe(
            f"Two heatmaps for {n} tokens: left, the {h} heads' outputs side by side, {n} × {d_model}, blocks in "
            f"the order {', '.join(names)}; right, their sum, {n} × {d_k}, which is the same whichever the order. "
            f"Row {token} is framed."
        )
        self.state = {"order": "swapped" if swapped else "in order", "token": token, "source": source,
                      "concat": concat, "summed": summed, "names": names, "changed_concat": changed_concat,
                      "changed_sum": changed_sum, "alt": self.canvas.alt}

    def _build(self, concat, summed, h, d_k, source):
        from matplotlib import colors
        from matplotlib.patches import Rectangle

        figure = WorkbookFigure(figsize=(12, 3.8), dpi=self.dpi)
        left, right = figure.subplots(1, 2, width_ratios=[h, 1.4])
        n = len(self.tokens)
        self.images, self.marks = [], []
        for ax, data, title in ((left, concat, f"Concatenated: [head 1 | … | head {h}], n × h·d_k"),
                                (right, summed, "Summed: n × d_k")):
            peak = max(np.abs(self.outputs(source, False)[0 if ax is left else 1]).max(), 1e-9)
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


def sum_concat_explorer(tokens=None, token="it", source="constructed", seed=1, dpi=80):
    """Level 3, Problem 3.2: the heads' outputs concatenated (n, h·d_k) against summed
    (n, d_k); a switch swaps heads 1 and 2 (the concatenation changes, the sum cannot),
    a token selector says which word each constructed head found for that token."""
    return SumConcatExplorer(tokens, token, source, seed, dpi)


# --- (f) Level 3: the head grid, and sharing one projection --------------------------------------


class HeadGridExplorer(Explorer):
    """Every head's weights over a sentence; switches for the weights' source and for sharing
    head 1's W_Q, W_K, W_V with every head (Problem 3.3: the panels become identical)."""

    def __init__(self, tokens=None, patterns=PATTERNS, source="constructed", shared=False, seed=1, dpi=80):
        tokens = list(EXAMPLE_TOKENS if tokens is None else tokens)
        self.tokens, self.dpi = tokens, dpi
        self.built = heads.constructed(tokens, patterns, seed=seed)
        b = self.built.block
        self.random = MultiHeadAttention.from_seed(b.d_model, b.h, seed)
        controls = {
            "source": source_control(source),
            "shared": switch("projections", "each head its own", "all share head 1's", shared),
        }
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        source, shared = self.controls["source"].value, self.controls["shared"].value
        block = self.built.block if source == "constructed" else self.random
        x, h = self.built.x, block.h
        if shared:
            _, weights = shared_projection_attention(x, None, *block.head_weights(0), block.W_O, h)
        else:
            _, weights = block(x)
        if shared:
            names = ["head 1"] + [f"head {k + 1} (= head 1)" for k in range(1, h)]
        elif source == "constructed":
            names = [f"head {k + 1}: {PATTERN_TITLES[p]}" for k, p in enumerate(self.built.patterns)]
        else:
            names = [f"head {k + 1}" for k in range(h)]
        distinct = len({w.round(12).tobytes() for w in weights})
        title = (f"All {h} heads sharing head 1's projections: 1 pattern, {h} times" if shared
                 else f"{h} heads, each with its own projections") + (f"\n{UNTRAINED}" if source == "random" else "")
        if self.canvas.drawing:
            if self.canvas.figure is None:
                figure, self.images = build_head_grid(h, self.tokens, self.tokens, title, dpi=self.dpi)
                self.titles = [figure._suptitle, *(image.axes.title for image in self.images)]
                self._set(weights, title, names)
                self.canvas.show(figure, [*self.images, *self.titles])
            else:
                self._set(weights, title, names)
                self.canvas.refresh()
        self.readout.value = (f"<div style='font-size:14px' aria-live='polite'><b>{distinct}</b> different "
                              f"pattern{'s' * (distinct > 1)} among {h} heads</div>")
        kind = UNTRAINED if source == "random" else "constructed heads"
        self.canvas.describe(f"{h} panels of attention weights ({kind}{', all sharing head 1' if shared else ''}). "
                             + "; ".join(describe_panel(weights[k], names[k]) for k in range(h)) + ".")
        self.state = {"source": source, "shared": shared, "weights": weights, "names": names,
                      "distinct": distinct, "alt": self.canvas.alt}

    def _set(self, weights, title, names):
        self.titles[0].set_text(title)
        for image, text, w, name in zip(self.images, self.titles[1:], weights, names):
            image.set_data(masked(w, None))
            text.set_text(name)
            text.set_fontsize(9)


def head_grid_explorer(tokens=None, patterns=PATTERNS, source="constructed", shared=False, seed=1, dpi=80):
    """Level 3, Problem 3.3: every head's weights over ``tokens`` (Level 2's sentence by
    default); switches for random or constructed heads and for all heads sharing head 1's
    W_Q, W_K, W_V (then every panel is head 1's), with a count of the distinct patterns."""
    return HeadGridExplorer(tokens, patterns, source, shared, seed, dpi)


# --- (g) Level 4: parameters against h ----------------------------------------------------------------


class ParameterExplorer(Explorer):
    """d_model -> the parameters of W_Q, W_K, W_V, W_O for every h: 4·d_model², whatever h (Problem 4.1)."""

    def __init__(self, d_model=256, dpi=80):
        d_model = check.positive_int("d_model", d_model)
        controls = {"d_model": widgets.IntSlider(value=d_model, min=8, max=max(1024, d_model), step=8,
                                                 description="d_model", continuous_update=False)}
        self.dpi = dpi
        self.readout = widgets.HTML()
        canvas = FigureImage()
        super().__init__(controls, [self.readout, canvas.widget, canvas.caption], canvas)
        self.update()

    def update(self, change=None):
        d_model = self.controls["d_model"].value
        hs = head_options(d_model)
        counts = [parameter_count(d_model, h) for h in hs]
        if self.canvas.drawing:
            if self.canvas.figure is None:
                figure = WorkbookFigure(figsize=(8, 4.4), dpi=self.dpi)
                draw_parameters(figure.add_subplot(), d_model, hs)
                figure.suptitle("Problem 4.1: parameters of a block against h", fontsize=12)
                lay_out_once(self.canvas, figure)
            else:  # new bars in place, drawn over the saved frame and legend
                update_parameters(self.figure.axes[0], d_model, hs)
                redraw_contents(self.canvas)
        self.readout.value = (
            "<div style='font-size:14px;line-height:1.6' aria-live='polite'>"
            f"d_model = {d_model}: each head's W<sub>i</sub><sup>Q</sup>, W<sub>i</sub><sup>K</sup>, "
            f"W<sub>i</sub><sup>V</sup> is d_model × d_k; h of them make d_model × d_model for each of Q, K, V<br>"
            f"4·d_model² = 4·{d_model}² = <b>{4 * d_model**2:,}</b> for every one of the {len(hs)} possible h "
            f"({', '.join(map(str, hs))})</div>"
        )
        self.canvas.describe(f"Stacked bars of parameters against h (log scale) for d_model = {d_model}: W_Q, W_K, "
                             f"W_V and W_O are {d_model * d_model:,} each, {4 * d_model**2:,} in all, the same bar "
                             f"for each of the {len(hs)} values of h.")
        self.state = {"d_model": d_model, "hs": hs, "counts": counts, "alt": self.canvas.alt}


def parameter_explorer(d_model=256, dpi=80):
    """Level 4, Problem 4.1: a d_model slider; the parameters of the block against every
    h that divides d_model, flat at 4·d_model²."""
    return ParameterExplorer(d_model, dpi)


# --- (h) Level 4: one causal query, step by step -------------------------------------------------------

# Problem 4.2's keys and values (row j is k_j, v_j); its query is NOT the explorer's default.
STEP_K = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (2.0, 0.0))
STEP_V = ((1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, 4.0))
Q_RANGE = 3.0


class CausalStepExplorer(Explorer):
    """A 2-D query q (two sliders) at a position of a causal sequence: the mask, the scores q·k_j,
    the scaled scores q·k_j/√d_k, the weights and the output Σ w_j v_j, one panel each."""

    def __init__(self, q=(0.0, 1.0), K=STEP_K, V=STEP_V, position=None, dpi=80):
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

    def compute(self):
        q = np.array([self.controls["q1"].value, self.controls["q2"].value])
        position = self.controls["position"].value
        d_k = self.K.shape[1]
        allowed = np.arange(self.n) < position  # the causal mask's row for this position
        scores = self.K @ q  # (n,) q·k_j
        out, w = scaled_dot_product_attention(q[None], self.K, self.V, mask=allowed[None])  # (1, 2), (1, n)
        return q, position, allowed, scores, scores / np.sqrt(d_k), w[0], out[0]

    def update(self, change=None):
        q, position, allowed, scores, scaled, w, out = self.compute()
        if self.canvas.drawing:
            if self.canvas.figure is None:
                self._build()
            self._set(position, allowed, scores, scaled, w, out)
            self.canvas.refresh()
        rows = "".join(
            f"<tr><td>k<sub>{j + 1}</sub></td><td>{scores[j]:.2f}</td><td>{scaled[j]:.4f}</td>"
            f"<td>{w[j]:.4f}</td></tr>" if allowed[j] else
            f"<tr><td>k<sub>{j + 1}</sub></td><td>{scores[j]:.2f}</td><td colspan='2'><i>masked: position "
            f"{position} may not look at key {j + 1}</i></td></tr>"
            for j in range(self.n))
        table = ("<table style='border-collapse:collapse;margin:4px 0'><tr><th>key</th><th>q·k<sub>j</sub></th>"
                 "<th>q·k<sub>j</sub> / √d_k</th><th>weight</th></tr>" + rows + "</table>")
        table = table.replace("<th>", f"<th style='{STEP_CELL};text-align:left'>")
        table = table.replace("<td", f"<td style='{STEP_CELL}'")
        self.readout.value = (
            "<div style='font-size:14px' aria-live='polite'>"
            f"q = ({q[0]:.1f}, {q[1]:.1f}) at position {position}, d_k = {self.K.shape[1]}"
            f"{table}"
            f"output = Σ w<sub>j</sub> v<sub>j</sub> = <b>({out[0]:.4f}, {out[1]:.4f})</b></div>"
        )
        seen = np.flatnonzero(allowed)
        top = seen[w[seen] >= w[seen].max() - 1e-12] + 1
        self.canvas.describe(
            f"Query q = ({q[0]:.1f}, {q[1]:.1f}) at position {position} sees keys 1 to {position}. Scores "
            + ", ".join(f"{v:.2f}" for v in scores) + "; scaled " + ", ".join(f"{v:.2f}" for v in scaled)
            + "; weights " + ", ".join(f"{v:.2f}" for v in w)
            + f": key{'s' * (len(top) > 1)} {' and '.join(map(str, top))} highest; output "
            f"({out[0]:.2f}, {out[1]:.2f})."
        )
        self.state = {"q": q, "position": position, "allowed": allowed, "scores": scores, "scaled": scaled,
                      "weights": w, "output": out, "alt": self.canvas.alt}

    def _build(self):
        from matplotlib.patches import Rectangle

        n = self.n
        figure = WorkbookFigure(figsize=(13, 3.4), dpi=self.dpi)
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
        titles = ["1. scores q·k_j", "2. scaled: q·k_j / √d_k", "3. weights (softmax)"]
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
        out_ax.set_title("4. output Σ w_j v_j (star)", fontsize=10)
        out_ax.set_aspect("equal", adjustable="box")
        out_ax.spines[["top", "right"]].set_visible(False)
        dynamic = [self.row, *[b for bars in self.bars for b in bars], *[t for ts in self.texts for t in ts],
                   *self.links, self.star]
        self.canvas.show(figure, dynamic)

    def _set(self, position, allowed, scores, scaled, w, out):
        self.row.set_y(position - 1.5)
        for values, bars, texts in zip((scores, scaled, w), self.bars, self.texts):
            for j, (bar, text, v) in enumerate(zip(bars, texts, values)):
                shown = v if allowed[j] or values is scores else 0.0
                bar.set_height(shown)
                bar.set_facecolor(PALETTE[0] if allowed[j] else "0.8")
                bar.set_hatch(None if allowed[j] else "///")
                text.set_text(f"{v:.2f}" if allowed[j] else ("masked" if values is not scores else f"{v:.2f}"))
                text.set_fontsize(9 if allowed[j] or values is scores else 7)
                text.set_y(max(shown, 0) + 0.02 * (1 if values is w else abs(bars[0].axes.get_ylim()[1])))
        for link, v, weight in zip(self.links, self.V, w):
            link.set_data([out[0], v[0]], [out[1], v[1]])
            link.set_linewidth(0.3 + 4 * weight)
            link.set_alpha(0.2 + 0.8 * weight)
        self.star.set_data([out[0]], [out[1]])


def matplotlib_norm(vmin, vmax):
    from matplotlib import colors

    return colors.Normalize(vmin, vmax)


STEP_CELL = "padding:2px 14px 2px 0"  # the step table's cells: columns apart, not run together


def causal_step_explorer(q=(0.0, 1.0), K=STEP_K, V=STEP_V, position=None, dpi=80):
    """Level 4, Problem 4.2: move a 2-D query q with two sliders (it starts at (0, 1), not at
    the problem's q) and the query's position; see the causal mask, the scores q·k_j, the
    scaled scores q·k_j/√d_k, the weights and the output Σ w_j v_j. ``K`` and ``V`` default
    to the problem's keys and values; ``position`` to the last (n)."""
    return CausalStepExplorer(q, K, V, position, dpi)


# --- (i) where does this word look? every head at once --------------------------------------------


# Prepared sentences: (label, query tokens, key tokens or None for self-attention, the word first asked about).
HEAD_VIEW_SENTENCES = (
    ("the cat sat on the mat because it was tired", EXAMPLE_TOKENS, None, "it"),
    ("the animal did not cross the street because it was too tired",
     "the animal did not cross the street because it was too tired".split(), None, "it"),
    ("the queen met the king and she thanked him", "the queen met the king and she thanked him".split(), None, "him"),
    ("the dog saw the cat and the cat saw the dog", "the dog saw the cat and the cat saw the dog".split(), None,
     "cat"),
    ("English → French: le chat noir s'assit sur le tapis", "le chat noir s'assit sur le tapis".split(),
     "the black cat sat on the mat".split(), "noir"),
)


def word_labels(tokens):
    """One label per token; a word seen more than once gets its occurrence: "the (1)", "the (2)"."""
    seen, labels = {}, []
    for t in tokens:
        seen[t] = seen.get(t, 0) + 1
        labels.append(f"{t} ({seen[t]})" if tokens.count(t) > 1 else t)
    return labels


def describe_head_view(query_tokens, key_tokens, rows, query, names, self_attention=True):
    """Alt text from the data: for each head, the key the chosen word looks at most and its weight
    ("spread out" when no key has half of the weight)."""
    rows = np.asarray(rows, float)
    keys = word_labels(key_tokens)
    parts = []
    for name, w in zip(names, rows):
        j = int(np.argmax(w))
        where = "itself" if self_attention and j == query else f"“{keys[j]}”"
        parts.append(f"{name} looks at {where} ({w[j]:.2f})" if w[j] >= 0.5 else
                     f"{name} is spread out (most on {where}, {w[j]:.2f})")
    word = word_labels(query_tokens)[query]
    return (f"Lines from “{word}” (word {query + 1} of {len(query_tokens)}) to each of {len(key_tokens)} keys, "
            f"thicker for a larger weight: " + "; ".join(parts) + ".")


class HeadViewExplorer(Explorer):
    """A prepared sentence, one of its words and the weights' source -> every head's weights from that word
    (its row of each head's matrix), drawn as lines to the keys, one colour per head."""

    def __init__(self, sentences=HEAD_VIEW_SENTENCES, sentence=0, query=None, source="constructed", seed=1,
                 dpi=100):
        sentences = tuple(sentences)
        if not sentences:
            raise ValueError("sentences must hold at least one (label, tokens, key_tokens, word) entry")
        for entry in sentences:
            if len(entry) != 4:
                raise ValueError(f"sentences must hold (label, tokens, key_tokens, word) entries, got {entry!r}")
            longest = max(len(entry[1]), len(entry[2] or ()))
            if longest > plots.HEAD_VIEW_MAX_ROWS:
                raise ValueError(f"sentences must have at most {plots.HEAD_VIEW_MAX_ROWS} words a side, "
                                 f"{entry[0]!r} has {longest}")
        if isinstance(sentence, bool) or not isinstance(sentence, int) or not 0 <= sentence < len(sentences):
            raise ValueError(f"sentence must be an index into the {len(sentences)} sentences, got {sentence!r}")
        self.sentences, self.seed, self.dpi = sentences, seed, dpi
        self._models = {}
        tokens = list(sentences[sentence][1])
        if query is None:
            query = tokens.index(sentences[sentence][3]) if sentences[sentence][3] in tokens else len(tokens) - 1
        if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < len(tokens):
            raise ValueError(f"query must be the index of a word of the sentence, 0 to {len(tokens) - 1}, "
                             f"got {query!r}")
        controls = {
            "sentence": widgets.Dropdown(options=[(entry[0], k) for k, entry in enumerate(sentences)],
                                         value=sentence, description="sentence"),
            "query": widgets.RadioButtons(options=self._word_options(tokens), value=query,
                                          description="query word", orientation="horizontal",
                                          style={"description_width": "initial"}),
            "source": source_control(source),
        }
        controls["query"].add_class("mha-query-words")
        canvas = FigureImage()
        self.parts, self._drawn = None, None
        super().__init__(controls, [canvas.widget, canvas.caption], canvas)
        self.update()

    @staticmethod
    def _word_options(tokens):
        return [(label, i) for i, label in enumerate(word_labels(tokens))]

    def _changed(self, change):
        if change["owner"] is self.controls["sentence"] and not self._paused:
            entry = self.sentences[change["new"]]
            tokens = list(entry[1])
            with self.paused():  # new options reset the value: one update after both are set
                self.controls["query"].options = self._word_options(tokens)
                self.controls["query"].value = tokens.index(entry[3]) if entry[3] in tokens else len(tokens) - 1
            return
        super()._changed(change)

    def model(self, sentence, source):
        """(block, x, x_kv, patterns, tokens, key_tokens) for a prepared sentence: constructed heads, or
        a seeded block of random projections of the same width on the same embeddings."""
        key = (sentence, source)
        if key not in self._models:
            _, tokens, key_tokens, _ = self.sentences[sentence]
            if key_tokens is None:
                built = heads.constructed(tokens, PATTERNS, seed=self.seed)
            else:
                built = heads.translation(key_tokens, tokens, CROSS_PATTERNS, seed=self.seed)
            block = built.block
            if source == "random":
                block = MultiHeadAttention.from_seed(block.d_model, block.h, self.seed)
            self._models[key] = (block, built)
        return self._models[key]

    def update(self, change=None):
        sentence, query, source = (self.controls[k].value for k in ("sentence", "query", "source"))
        block, built = self.model(sentence, source)
        _, weights = block(built.x, built.x_kv)  # (h, n_q, n_k)
        cross = built.x_kv is not None
        rows = weights[:, query, :]  # (h, n_k): where the chosen word looks, head by head
        untrained = source == "random"
        names = ([f"head {k + 1}" for k in range(block.h)] if untrained
                 else [PATTERN_TITLES[p] for p in built.patterns])
        tokens, key_tokens = built.tokens, built.kv_tokens
        word = word_labels(tokens)[query]
        title = f"Where does the chosen word look? {block.h} heads" + (f"\n{UNTRAINED}" if untrained else "")
        headers = ("French (queries)", "English (keys)") if cross else ("query", "keys")
        if self.canvas.drawing:
            if self.parts is None:
                rows_needed = max(max(len(e[1]), len(e[2] or ())) for e in self.sentences)
                figure, self.parts = plots.build_head_view(rows_needed, max(len(PATTERNS), len(CROSS_PATTERNS)),
                                                           dpi=self.dpi)
                plots.draw_head_view(self.parts, tokens, key_tokens, rows, query, names, title, headers, not cross)
                self.canvas.show(figure, plots.head_view_artists(self.parts))
            else:
                plots.draw_head_view(self.parts, tokens, key_tokens, rows, query, names, title, headers, not cross)
                if (sentence, source) != self._drawn:
                    self.canvas.restage()  # new words or heads: the background's tokens and names change
                else:
                    self.canvas.refresh()  # only the lines, where each head looks, the chosen word
            self._drawn = (sentence, source)
        self.canvas.describe(
            ("Random (untrained) weights. " if untrained else "Constructed heads. ")
            + describe_head_view(tokens, key_tokens, rows, query, names, self_attention=not cross))
        self.state = {"sentence": sentence, "query": query, "source": source, "tokens": list(tokens),
                      "key_tokens": list(key_tokens), "word": word, "weights": weights, "rows": rows,
                      "names": names, "cross": cross, "alt": self.canvas.alt,
                      "drawn": self.parts["weights"] if self.canvas.drawing else rows}


def head_view_explorer(sentences=HEAD_VIEW_SENTENCES, sentence=0, query=None, source="constructed", seed=1,
                       dpi=100):
    """Where does this word look? Pick a prepared sentence (Dropdown), one of its words (radio buttons)
    and the weights (constructed heads: previous token, same word, first token, pronoun → noun; for the
    English → French pair, translation, same position, first; or random, untrained projections); every
    head's weights from that word are drawn as lines to the keys, one colour and dash per head
    (BertViz's head view). ``query`` (an index) defaults to the sentence's prepared word."""
    return HeadViewExplorer(sentences, sentence, query, source, seed, dpi)


__all__ = [
    "CausalStepExplorer",
    "CrossAttentionExplorer",
    "FlopExplorer",
    "HeadGridExplorer",
    "HeadViewExplorer",
    "ParameterExplorer",
    "ShapeExplorer",
    "SoftmaxPlayground",
    "SumConcatExplorer",
    "CostExplorer",
    "cost_explorer",
    "causal_step_explorer",
    "cross_attention_explorer",
    "flop_explorer",
    "head_grid_explorer",
    "head_view_explorer",
    "parameter_explorer",
    "shape_explorer",
    "softmax_playground",
    "sum_concat_explorer",
]
