"""Level 4's parameter explorer (Problem 4.1): d_model -> the parameters of W_Q, W_K, W_V, W_O against
every h that divides d_model: 4·d_model², whatever h.

:func:`parameter_state` is the state (no widget, no figure); :class:`ParameterExplorer` lays its figure
(:mod:`mha_core.figures.counts`) out once and redraws its axes in place.
"""

import ipywidgets as widgets

from .. import _validate as check
from ..counting import parameter_count
from ..examples import head_options
from ..markup import render
from .base import Explorer
from .canvas import FigureImage, lay_out_once, redraw_contents


def parameter_state(d_model):
    """The parameters of W_Q, W_K, W_V, W_O at every h that divides d_model (4·d_model² each time)."""
    hs = head_options(d_model)
    total = 4 * d_model**2
    return {
        "d_model": d_model, "hs": hs, "counts": [parameter_count(d_model, h) for h in hs],
        "readout": render("parameter_readout.html", d_model=d_model, total=total, hs=hs),
        "alt": f"Stacked bars of parameters against h (log scale) for d_model = {d_model}: W_Q, W_K, W_V and W_O "
               f"are {d_model * d_model:,} each, {total:,} in all, the same bar for each of the {len(hs)} values of h.",
    }


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
        state = parameter_state(self.controls["d_model"].value)
        if self.canvas.drawing:
            from ..figures.base import WorkbookFigure
            from ..figures.counts import draw_parameters, update_parameters

            if self.canvas.figure is None:
                figure = WorkbookFigure(figsize=(8, 4.4), dpi=self.dpi)
                draw_parameters(figure.add_subplot(), state["d_model"], state["hs"])
                figure.suptitle("Problem 4.1: parameters of a block against h", fontsize=12)
                from ..figures.screen import readable_in_lab

                readable_in_lab(figure)  # the legend's 9 points were 10 px
                lay_out_once(self.canvas, figure)
            else:  # new bars in place, drawn over the saved frame and legend
                update_parameters(self.figure.axes[0], state["d_model"], state["hs"])
                redraw_contents(self.canvas)
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}


def parameter_explorer(d_model=256, dpi=80):
    """Level 4, Problem 4.1: a d_model slider; the parameters of the block against every
    h that divides d_model, flat at 4·d_model²."""
    return ParameterExplorer(d_model, dpi)
