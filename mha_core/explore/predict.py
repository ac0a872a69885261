"""Predict, then see: a figure or an explorer that stays locked until the student's prediction is in.

A prediction is a notebook cell ``predict_<level>_<problem>_<what> = None`` (its contract:
``autograders.checks.predictions``). The cell under it calls ``predict_first`` with the moment's
id and the value: while the value is None (or not of the moment's kind) only a line asking for the
prediction shows, and the figure or explorer is not even built; once it is in, the line says
"You predicted 0.5; it is 0.67, because ..." above the figure or explorer.

A moment says what one prediction asks (``question``, ``kind``, ``what`` it unlocks), its right value
(``actual()``, judged by ``judge``, read within ``choices`` or ``in_bounds``), why (``because``) and
builds what it unlocks (``view()``); the workbook's moments are its content, not the library's
(``autograders.student.moments``).
"""

import numbers

import ipywidgets as widgets

from ..markup import render


def figure_view(figure):
    """A figure of :mod:`mha_core.plots` as a widget: its PNG and alt text (when drawing is off, its line)."""
    if isinstance(figure, str):
        return widgets.HTML(render("caption.html", text=figure))
    from ..access import AltImage, aria_script
    from ..figures.base import png_bytes

    png = png_bytes(figure)  # as the figure shows itself in a notebook (never in pyplot's list: nothing to close)
    width = int.from_bytes(png[16:20], "big")  # the PNG header's width: shown at its size, narrower in a narrow window
    alt = getattr(figure, "alt", "")
    # AltImage: the alt text as the image's accessible name; aria_script copies it to the <img>'s alt
    image = AltImage(value=png, format="png", tooltip=alt,
                     layout=widgets.Layout(width=f"{width}px", max_width="100%", height="auto"))
    return widgets.VBox([image, widgets.HTML(render("caption.html", text=alt)), aria_script()])


def as_prediction(moment, value):
    """The prediction ``value`` as the moment reads it (a number within the moment's bounds, or an
    upper-case label among its choices), or None when it is blank, of another kind or out of range."""
    if moment.choices:
        label = value.strip().upper() if isinstance(value, str) else None
        return label if label in moment.choices else None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and moment.in_bounds(float(value)):
        return float(value)
    return None


def shown(value):
    """A number as a prediction line writes it: 0.67, 32, 1,048,576."""
    if isinstance(value, str):
        return value
    value = float(value)
    return f"{int(value):,}" if value == int(value) else f"{value:.2f}"


class PredictFirst(widgets.VBox):
    """The prediction's line and, once a prediction is in, the view it unlocks (``.view``, else None)."""

    def __init__(self, moment, value):
        self.moment, self.value = moment, value
        self.prediction = as_prediction(moment, value)
        self.locked = self.prediction is None
        self.line = widgets.HTML()
        self.view = None
        common = {"question": moment.question, "kind": moment.kind, "what": moment.what}
        if value is None:
            self.line.value = render("prediction_line.html", state="locked", value="", actual="", because="",
                                     **common)
        elif self.locked:
            self.line.value = render("prediction_line.html", state="invalid", value=repr(value), actual="",
                                     because="", **common)
        else:
            self.line.value = render("prediction_line.html", state="open", value=shown(self.prediction),
                                     actual=shown(moment.actual()), because=moment.because,
                                     right=moment.judge(self.prediction), **common)
            self.view = moment.view()
        super().__init__([self.line] if self.view is None else [self.line, self.view])

    @property
    def right(self):
        """True or False for an entered prediction, None while locked."""
        return None if self.locked else self.moment.judge(self.prediction)
