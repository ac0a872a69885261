"""Explorer (a), Levels 1, 2 and 5: d_model, h (only divisors of d_model), n, a causal mask, the
weights' source and seed -> d_k = d_model / h, the shape table and every head's n x n weights.

:func:`shape_state` is the state (no widget, no figure); :class:`ShapeExplorer` draws it: the
per-head grid of :mod:`mha_core.figures.grid` (a notebook) or, given a ``box`` in pixels, the
readable grid of :mod:`mha_core.figures.screen` (the classroom demo, with a page of heads chosen).
"""

import functools

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from .. import heads
from ..attention import causal_mask, head_dim
from ..counting import shape_table
from ..examples import PATTERN_TITLES, UNTRAINED, example_embeddings, head_options
from ..figures.describe import describe_panel
from ..figures.fit import fit_head_grid
from ..layer import MultiHeadAttention
from ..markup import render
from .base import MAX_N, PATTERNS, Explorer, cycled_patterns, nearest, source_control, switch
from .canvas import FigureImage, lay_out

MAX_PANELS = 16  # heads drawn in a notebook; more are summarised, not drawn
TD = "padding:2px 10px;border-bottom:1px solid #ddd"  # a shape table's cell


@functools.lru_cache(maxsize=8)
def random_block(d_model, h, seed):
    """A seeded block of random (untrained) projections."""
    return MultiHeadAttention.from_seed(d_model, h, seed)


@functools.lru_cache(maxsize=8)
def constructed_heads(tokens, h, d_model, seed):
    """Constructed heads over ``tokens`` (previous, same word, first, pronoun, then random), or None
    when d_k is too small for the word and position codes."""
    try:
        return heads.constructed(list(tokens), cycled_patterns(PATTERNS, h), d_model=d_model, seed=seed)
    except ValueError:
        return None


def shape_table_html(rows):
    """An HTML table of :func:`mha_core.shape_table` rows: name, shape, meaning."""
    cells = []
    for row in rows:
        try:
            name, shape, meaning = row
        except (TypeError, ValueError):
            raise ValueError(f"rows must hold (name, shape, meaning) triples, got {row!r}") from None
        cells.append((str(name), " × ".join(str(s) for s in shape), str(meaning)))
    return render("shape_table.html", rows=cells, td=TD)


def positions(n):
    """Labels for ``n`` tokens when no sentence is given: their positions, "1" to "n"."""
    return [str(k) for k in range(1, n + 1)]


def heads_pages(h, shown):
    """The "show" choices: pages of ``shown`` heads (the last page ends at head h), as (label, first head)."""
    starts = sorted({min(start, h - shown + 1) for start in range(1, h + 1, shown)})
    return [(f"heads {a} to {a + shown - 1} of {h}" if shown > 1 else f"head {a} of {h}", a) for a in starts]


def shape_state(d_model, h, n, causal=False, seed=0, source="random", tokens=None, box=None, text_px=15,
                page=1):
    """What the shape explorer shows for these controls: d_k, the shape table, every head's weights and
    the panels drawn (masked arrays: the causal mask's hidden cells), their names, the note and readout.
    ``tokens`` are the words of the n rows (the first n are used; default: the positions 1 to n).

    With ``box`` = (width, height) pixels, the panels are those that fit it with every token labelled
    (``fit``), a page of heads: the one holding head ``page``."""
    d_k = head_dim(d_model, h)
    tokens = tuple(positions(n) if tokens is None else tokens)[:n]
    built = constructed_heads(tokens, h, d_model, seed) if source == "constructed" else None
    if built is None:
        x = example_embeddings(n, d_model, seed)  # (n, d_model)
        _, weights = random_block(d_model, h, seed)(x, causal=causal)  # (h, n, n)
        names = [f"head {k + 1}" for k in range(h)]
    else:
        _, weights = built.block(built.x, causal=causal)  # (h, n, n)
        names = [f"head {k + 1}: {PATTERN_TITLES[p]}" for k, p in enumerate(built.patterns)]
    untrained = built is None
    fit, pages, first = None, None, 1
    if box is None:
        shown = min(h, MAX_PANELS)
    else:
        fit = fit_head_grid(h, n, max(len(t) for t in tokens), box, text_px)
        shown = fit[0] * fit[1]
        pages = heads_pages(h, shown)
        first = max(a for _, a in pages if a <= max(1, min(page, h)))
    hidden = ~causal_mask(n) if causal else np.zeros((n, n), bool)
    panels = [np.ma.masked_array(weights[first - 1 + k], mask=hidden) for k in range(shown)]
    names = names[first - 1:first - 1 + shown]
    need = ("constructed heads need a wider d_k for these words and positions: showing random weights"
            if source == "constructed" and untrained else "")
    rows = shape_table(d_model, h, n)
    return {
        "d_model": d_model, "h": h, "n": n, "d_k": d_k, "causal": causal, "seed": seed, "source": source,
        "untrained": untrained, "tokens": list(tokens), "head_names": names, "first_head": first,
        "shown_heads": shown, "weights": weights, "panels": panels, "fit": fit, "pages": pages,
        "table": rows, "score_shape": (n, n), "output_shape": (n, d_model),
        "title": f"One n × n = {n} × {n} weight matrix per head" + (f"\n{UNTRAINED}" if untrained else ""),
        "readout": render("shape_readout.html", d_model=d_model, h=h, d_k=d_k),
        "table_html": shape_table_html(rows),
        "note": render("shape_note.html", shown=shown, h=h, paged=box is not None, first=first, causal=causal,
                       untrained=untrained, untrained_label=UNTRAINED, need=need),
        "alt": f"{shown} panels of {n} × {n} attention weights ({UNTRAINED if untrained else 'constructed heads'}). "
               + "; ".join(describe_panel(panels[k], names[k]) for k in range(shown)) + ".",
    }


class ShapeExplorer(Explorer):
    """The view of :func:`shape_state`: its controls, the readout, the table, the note and the heads."""

    def __init__(self, d_model=256, h=4, n=8, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80,
                 source="random", box=None, text_px=15, figure=True, max_d_model=None):
        d_model = check.positive_int("d_model", d_model)
        max_d_model = max(1024, d_model) if max_d_model is None else check.positive_int("max_d_model", max_d_model)
        if max_d_model < d_model:
            raise ValueError(f"max_d_model must be at least d_model = {d_model}, got {max_d_model}")
        if box is not None:
            box = tuple(check.positive_int("box", v) for v in box)
            if len(box) != 2:
                raise ValueError(f"box must be (width, height) in pixels, got {box}")
        self.box, self.text_px, self.grid = box, text_px, None
        head_dim(d_model, h)
        n = check.positive_int("n", n)
        tokens = positions(max(n, MAX_N)) if tokens is None else list(tokens)
        if len(tokens) < n:
            raise ValueError(f"tokens must hold at least n={n} tokens, got {len(tokens)}")
        self.tokens = tokens
        self.figure_width, self.dpi = float(figure_width), dpi
        max_n = max(n, min(MAX_N, len(tokens)))
        step = 8 if d_model % 8 == 0 and d_model <= 1024 and max_d_model % 8 == 0 else 1
        controls = {
            "d_model": widgets.IntSlider(value=d_model, min=step, max=max_d_model, step=step,
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
        self._layout = self._room = None
        self.labels = self._frame = None  # the grid's token labels as pixels, the frame they are pasted on
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

    def update(self, change=None):
        c = self.controls
        state = shape_state(*(c[k].value for k in ("d_model", "h", "n", "causal", "seed", "source")),
                            tokens=self.tokens, box=self.box, text_px=self.text_px,
                            page=c["heads"].value if "heads" in c else 1)
        if state["pages"] is not None:
            self._set_pages(state["pages"], state["first_head"])
        if self.canvas.drawing:
            if self.box is None:
                self._draw_notebook(state)
            else:
                self._draw_screen(state)
        self.readout.value = state["readout"]
        self.table.value = state["table_html"]
        self.note.value = state["note"]
        self.canvas.describe(state["alt"])
        drawn = self.canvas.drawing
        self.state = {**state, "grid": self.grid.shape if drawn and self.box is not None else None,
                      "shown": [image.get_array() for image in self.images] if drawn else state["panels"]}

    def _draw_notebook(self, state):
        """The per-head grid: laid out once per number of panels and title (its margins made for the
        widest labels the n slider reaches), then for each n its panels resized, its title drawn and its
        token labels, each drawn once, pasted over a frame drawn without them."""
        from ..figures import grid

        shown, n, untrained = state["shown_heads"], state["n"], state["untrained"]
        if (shown, n, untrained) == self._layout:
            self._set_images(state)
            self.canvas.refresh()
            return
        if (shown, untrained) != self._room:
            widest = self._widest_tokens()
            if self._room is not None and self._room[0] == shown:  # the same panels: re-use the figure
                figure, self.images = grid.relabel_head_grid(self.figure, self.images, widest, widest, state["title"])
            else:
                figure, self.images = grid.build_head_grid(shown, widest, widest, state["title"],
                                                           figure_width=self.figure_width, dpi=self.dpi)
            figure.set_layout_engine("constrained")  # margins for the widest labels, then kept for every n
            lay_out(figure)
            self.labels = grid.TokenLabels().capture(self.images)
            self.labels.hide()
            self.canvas.adopt(figure, self.images)
            self._frame = self.canvas.frame(hidden=[figure.suptitle(state["title"], fontsize=12)])
            self._room = (shown, untrained)
        figure, tokens = self.figure, state["tokens"]
        title = figure.suptitle(state["title"], fontsize=12)
        grid.resize_head_grid(self.images, n, n)
        self._layout = (shown, n, untrained)
        self._set_images(state)
        self.canvas.relabel(self._frame, lambda pixels: self.labels.paste(pixels, tokens, tokens, figure.dpi),
                            [title], text_px=grid.grid_fontsize(n, n) * figure.dpi / 72)

    def _widest_tokens(self):
        """The tokens, of those the n slider reaches, whose labels need the widest margins: the longest token
        in characters times the labels' size (smaller past 16 tokens); of equals, the most (vertical labels
        past 10 reach further down than slanted ones)."""
        from ..figures.grid import grid_fontsize

        reach = range(1, self.controls["n"].max + 1)
        n = max(reach, key=lambda n: (grid_fontsize(n, n) * max(len(t) for t in self.tokens[:n]), n))
        return self.tokens[:n]

    def _draw_screen(self, state):
        from ..figures.screen import ReadableHeadGrid

        layout = (state["fit"], state["n"], state["untrained"])
        if layout == self._layout:
            self._set_images(state)
            self.canvas.refresh()
            return
        if self.grid is None:
            self.grid = ReadableHeadGrid(self.box, self.text_px)
        fit = state["fit"]
        self.images = self.grid.layout(*fit[:3], state["tokens"], fit[3])
        self.grid.title.set_text(state["title"])
        self._layout = layout
        self._set_images(state)
        self.canvas.show(self.grid.figure, [*self.images, *(image.axes.title for image in self.images)])

    def _set_images(self, state):
        for image, panel, name in zip(self.images, state["panels"], state["head_names"]):
            image.set_data(panel)
            if self.box is None:
                image.axes.set_title(name, fontsize=9 if len(name) > 12 else 10)
            else:  # "head 3: same word elsewhere" on two lines: narrow panels' titles never meet
                image.axes.set_title(name.replace(": ", ":\n"), fontsize=self.text_px, linespacing=1.1)

    def _set_pages(self, options, first):
        """The "show" choices (pages of heads), set without an update of their own."""
        control = self.controls["heads"]
        if list(control.options) != options or control.value != first:
            was, self._paused = self._paused, True  # no update for the options' own change
            try:
                control.options = options
                control.value = first
            finally:
                self._paused = was


def shape_explorer(d_model=256, h=4, n=8, causal=False, tokens=None, seed=0, figure_width=10.0, dpi=80,
                   source="random", box=None, text_px=15, figure=True, max_d_model=None):
    """Explorer (a): sliders for d_model and n, h (divisors of d_model only), a causal
    switch and the weights' source (random, untrained projections or constructed heads:
    previous token, same word, first token, pronoun, then random); the d_k readout, the
    shape table and the per-head weights (at most 16 panels). ``tokens`` (a list of words) label
    the rows, and n goes up to their number (at most 24); without them the rows are numbered.

    ``figure_width`` (inches) and ``dpi`` size the heads' figure: the same pixels at a
    smaller width and a higher dpi give larger lettering. ``box`` = (width, height) in pixels
    draws the heads for a screen instead (the classroom demo): every text ``text_px`` pixels,
    as many heads as fit with every token labelled, and a "show" choice for the other heads.
    ``figure=False`` draws no figure at all (a screen that shows only the shapes). ``max_d_model`` is the
    d_model slider's end (default: 1024, or d_model if wider): a notebook keeps a graded block out of reach."""
    return ShapeExplorer(d_model, h, n, causal, tokens, seed, figure_width, dpi, source, box, text_px, figure,
                         max_d_model)
