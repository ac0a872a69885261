"""Level 3's FLOPs explorer (Problem 3.1): d_model and n -> the operation counts against h: every matrix
product stacked (flat in h), and on their own log scale the scores and weighted sum (flat) next to the
claim "h heads cost h times more" and the softmax's exponentials.

:func:`flop_state` is the state (no widget, no figure); :class:`FlopExplorer` lays its figure
(:mod:`mha_core.figures.counts`) out once and redraws its axes in place.
"""

import ipywidgets as widgets

from .. import _validate as check
from ..counting import flop_count
from ..examples import head_options
from ..markup import render
from .base import Explorer
from .canvas import FigureImage, lay_out_once, redraw_contents


def flop_state(d_model, n, exponentials=True):
    """The operation counts at every h that divides d_model: scores + weighted sum (flat), the claim
    "h times more", the softmax's exponentials (left out of the state, the readout and the alt text when
    ``exponentials`` is False); the readout and alt text."""
    hs = head_options(d_model)
    counts = [flop_count(d_model, h, n) for h in hs]
    attention = [c["scores"] + c["weighted_sum"] for c in counts]
    claim = [h * attention[0] for h in hs]
    softmax_counts = [c["softmax"] for c in counts]
    alt = (f"Operation counts against h (log scale) for d_model = {d_model}, n = {n}: every matrix product "
           f"together is {counts[0]['multiply_adds']:,} for every h; scores plus weighted sum stay flat at "
           f"{attention[0]:,} while the claimed h-times line rises to {claim[-1]:,}")
    if exponentials:
        alt += f"; the softmax's exponentials grow from {softmax_counts[0]:,} to {softmax_counts[-1]:,}"
    else:
        counts = [{k: v for k, v in c.items() if k not in ("softmax", "total")} for c in counts]
    return {
        "d_model": d_model, "n": n, "hs": hs, "flops": counts, "attention": attention, "claim": claim,
        "softmax": softmax_counts if exponentials else None, "multiply_adds": [c["multiply_adds"] for c in counts],
        "readout": render("flop_readout.html", n=n, d_model=d_model, attention=attention[0], claim=claim[-1],
                          h_first=hs[0], h_last=hs[-1], exponentials=exponentials, softmax_first=softmax_counts[0],
                          softmax_last=softmax_counts[-1]),
        "alt": alt + ".",
    }


class FlopExplorer(Explorer):
    """d_model and n -> the operation counts against h (figure of :func:`mha_core.plots.flop_plot`)."""

    def __init__(self, d_model=256, n=8, dpi=80, exponentials=True):
        d_model, n = check.positive_int("d_model", d_model), check.positive_int("n", n)
        self.exponentials = bool(exponentials)
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
        state = flop_state(self.controls["d_model"].value, self.controls["n"].value, self.exponentials)
        if self.canvas.drawing:
            from ..figures.base import WorkbookFigure
            from ..figures.counts import draw_flops, update_flops

            if self.canvas.figure is None:
                figure = WorkbookFigure(figsize=(12, 4.8), dpi=self.dpi)
                left, right = figure.subplots(1, 2)
                figure.suptitle("Problem 3.1: FLOPs against h at a fixed d_model", fontsize=12)
                draw_flops(left, right, state["d_model"], state["n"], state["hs"], self.exponentials)
                lay_out_once(self.canvas, figure)
            else:  # new numbers (new bars for a new d_model) in place, drawn over the saved frame and legends
                update_flops(*self.figure.axes[:2], state["d_model"], state["n"], state["hs"], self.exponentials)
                redraw_contents(self.canvas)
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}


def flop_explorer(d_model=256, n=8, dpi=80, exponentials=True):
    """Level 3, Problem 3.1: d_model and n sliders; every matrix product stacked against h,
    and, on their own log scale, the scores and weighted sum (flat) next to the claim
    "h heads cost h times more" and the softmax's exponentials. ``exponentials=False`` leaves the
    exponentials out of the figure, the readout and the alt text: what grows with h is 3.1's written
    answer to find, and the explorer sits where a student checks their counts."""
    return FlopExplorer(d_model, n, dpi, exponentials)
