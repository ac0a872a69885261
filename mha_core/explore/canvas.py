"""The canvas that redraws in place: an Agg figure shown as PNG bytes in an ``ipywidgets.Image``.

A figure is laid out and drawn once per layout (:meth:`FigureImage.show`) and saved as the
background; a change of data draws only the artists that changed over it (blitting) and
re-encodes the PNG (:meth:`FigureImage.refresh`). An explorer computes with one BLAS thread
(:func:`one_blas_thread`). When drawing is switched off (:func:`mha_core.drawing`) nothing is drawn.

Why blitting: a student moving a slider notices. ``python -m benchmarks widgets`` (the shape explorer at
d_model = 512, h = 8, n = 16, medians of one run on a loaded 2-core machine): a data change blitted
0.24-0.31 s, the same figure redrawn whole 5.0 s, about 19 times slower.
"""

import functools
import io

import ipywidgets as widgets
import numpy as np
from matplotlib.backend_bases import FigureCanvasBase
from PIL import Image as PILImage

from ..access import AltImage, live
from ..figures.base import headless
from ..figures.screen import min_text_px
from ..markup import render

PNG_COMPRESS_LEVEL = 1  # fast zlib: a 16-panel grid encodes in a few ms


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

    def mark_text_size(self, pasted_px=None):
        """Name the figure's smallest text in a CSS class of the image, ``mha-text-<px>px`` (rounded
        down, at the figure's own size): a browser test reads it and the displayed scale. ``pasted_px``:
        the size of texts pasted as pixels (:meth:`relabel`), which the figure does not hold as texts."""
        px = min(p for p in (min_text_px(self.figure), pasted_px, float("inf")) if p is not None)
        px = None if px == float("inf") else px
        classes = [c for c in self.widget._dom_classes if not c.startswith("mha-text-")]
        if px is not None:
            classes.append(f"mha-text-{int(px + 1e-6)}px")
        self.widget._dom_classes = tuple(classes)

    def describe(self, text):
        """Set the alt text: the caption under the image, announced when it changes."""
        self.alt = text
        self.widget.tooltip = text
        self.caption.value = render("caption.html", text=text)

    def restage(self):
        """Draw the static artists again (their data changed), save them as the background and refresh;
        no new layout is counted."""
        if not self.drawing:
            return
        self.figure.canvas.draw()
        self.background = self.figure.canvas.copy_from_bbox(self.figure.bbox)
        self.refresh()

    def adopt(self, figure, dynamic):
        """Show ``figure`` from now on, ``dynamic`` its artists drawn over the background, without drawing
        it: :meth:`relabel` draws the first picture over a :meth:`frame`."""
        self.figure = figure
        self.animate(dynamic)
        if self.drawing:
            width, _ = figure.canvas.get_width_height()
            self.widget.layout.width, self.widget.layout.max_width, self.widget.layout.height = (
                f"{width}px", "100%", "auto")

    def frame(self, hidden=()):
        """The figure drawn without its dynamic artists and without ``hidden`` (texts the next layouts
        change): a saved region for :meth:`relabel`."""
        for artist in hidden:
            artist.set_visible(False)
        try:
            self.figure.canvas.draw()
        finally:
            for artist in hidden:
                artist.set_visible(True)
        return self.figure.canvas.copy_from_bbox(self.figure.bbox)

    def relabel(self, frame, paint, artists=(), text_px=None):
        """A new layout over a saved ``frame`` (:meth:`frame`) without drawing the figure again: ``paint``
        writes pixels into the canvas (token labels), ``artists`` are drawn over them (a title); the
        result is the new background, and the dynamic artists are drawn over it."""
        if not self.drawing:
            return
        canvas = self.figure.canvas
        canvas.restore_region(frame)
        paint(np.asarray(canvas.buffer_rgba()))
        for artist in artists:
            self.figure.draw_artist(artist)
        self.background = canvas.copy_from_bbox(self.figure.bbox)
        self.builds += 1
        self.mark_text_size(text_px)
        self.refresh()

    def refresh(self):
        if not self.drawing:
            return
        canvas = self.figure.canvas
        canvas.restore_region(self.background)
        for artist in self.dynamic:
            self.figure.draw_artist(artist)
        self.widget.value = self.png()

    def release(self):
        """Let the figure go (the explorer was closed): its artists are cleared and its canvas, which
        holds the pixels, is replaced by a bare one, so an explorer kept by ``Out[n]`` or by its own
        references to artists holds no picture; the image keeps its last PNG."""
        if self.figure is not None:
            self.figure.clear()
            FigureCanvasBase(self.figure)  # the figure's canvas from now on: no Agg buffer
        self.figure, self.background, self.dynamic = None, None, []

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


def axes_contents(figure):
    """What a new d_model or n changes in a figure of counts against h: every axes' bars, lines, texts, title
    and both axes (ticks and labels). The rest (the figure's title, the axes' frames, the legends) is the
    background they are drawn over."""
    return [artist for ax in figure.axes for artist in (ax.xaxis, ax.yaxis, ax.title, *ax.patches, *ax.lines,
                                                        *ax.texts)]


def lay_out(figure):
    """Lay ``figure`` out (constrained) once and keep that layout: the layout's draw only measures the texts
    (matplotlib's ``draw_without_rendering``), so the pixels are rendered once, by the draw that shows them."""
    figure.draw_without_rendering()
    figure.set_layout_engine("none")


def lay_out_once(canvas, figure):
    """Lay ``figure`` out (constrained) once, then show it on ``canvas`` with its axes' contents dynamic."""
    lay_out(figure)
    canvas.show(figure, axes_contents(figure))


def redraw_contents(canvas):
    """Draw the axes' contents of ``canvas``'s figure (changed in place, new bars maybe) over its frame."""
    canvas.animate(axes_contents(canvas.figure))
    canvas.refresh()

