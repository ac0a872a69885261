"""What h costs, for a screen (the classroom demo): d_model, n and which count -> Problem 3.1's FLOPs or
Problem 4.1's parameters against h, both figures laid out once at a projector's size (every text at
least ``text_px`` pixels), a change redrawing their axes. Its state is :func:`.flops.flop_state` and
:func:`.parameters.parameter_state`.
"""

import ipywidgets as widgets

from .. import _validate as check
from .base import Explorer
from .canvas import FigureImage, axes_contents, lay_out_once, redraw_contents
from .flops import flop_state
from .parameters import parameter_state


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
        from matplotlib.transforms import offset_copy

        from ..figures.base import WorkbookFigure
        from ..figures.counts import draw_flops, draw_parameters
        from ..figures.screen import raise_text

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
        for ax in figure.axes:  # the y label at a fixed distance: wider tick labels later never push it out
            ax.yaxis.set_label_coords(0, 0.5, transform=offset_copy(ax.transAxes, figure, x=-4.6 * self.text_px,
                                                                     units="dots"))
        lay_out_once(self.canvas, figure)
        return figure

    def update(self, change=None):
        d_model, n, count = (self.controls[k].value for k in ("d_model", "n", "count"))
        flops, params = flop_state(d_model, n), parameter_state(d_model)
        hs = flops["hs"]
        if self.canvas.drawing:
            from ..figures.counts import update_flops, update_parameters

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
        counts = flops["flops"]
        if count == "FLOPs":
            self.canvas.describe(f"Operation counts against h for d_model = {d_model}, n = {n}: every matrix "
                                 f"product together is {counts[0]['multiply_adds']:,} multiply-adds for every h; the "
                                 f"softmax's exponentials grow from {counts[0]['softmax']:,} to {counts[-1]['softmax']:,}.")
        else:
            self.canvas.describe(f"Parameters against h for d_model = {d_model}: 4·d_model² = {4 * d_model**2:,} "
                                 f"for every one of the {len(hs)} possible h.")
        self.state = {"d_model": d_model, "n": n, "count": count, "hs": hs, "flops": counts,
                      "parameters": params["counts"], "alt": self.canvas.alt}


def cost_explorer(d_model=512, n=10, count="FLOPs", width=1180, height=470, text_px=15):
    """What h costs, for a screen (the classroom demo): d_model and n sliders and a FLOPs / parameters
    switch; Problem 3.1's or 4.1's figure, ``width`` x ``height`` pixels, every text ``text_px`` pixels."""
    return CostExplorer(d_model, n, count, width, height, text_px)
