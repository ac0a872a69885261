"""Explorer (b), Problem 2.3: one slider per score and a temperature T -> the weights
softmax(s / T) as bars, their entropy, and T = √d_k when linked (dividing the scores by √d_k, as
attention does, is a softmax at temperature √d_k).

:func:`softmax_state` is the state (no widget, no figure); :class:`SoftmaxPlayground` draws it.
"""

from decimal import ROUND_HALF_UP, Decimal

import ipywidgets as widgets
import numpy as np

from .. import _validate as check
from ..attention import softmax
from ..markup import render
from .base import Explorer, switch
from .canvas import FigureImage

D_K_OPTIONS = [1, 4, 16, 64, 256]  # sqrt: 1, 2, 4, 8, 16
# The temperature moves on a log scale, a quarter of a power of two per arrow press: the round values a
# student is asked to reach (0.25, 0.5, 1, 2, 4, 8, 16; √d_k for every d_k offered) are stops of the
# slider, each 4 presses from the next, and a drag moves T by the same factor anywhere on the track
# (0.05 to 16 in steps of 0.05 put T = 1 fifteen presses from T = 0.25). A value can also be typed.
T_BASE, T_MIN_EXP, T_MAX_EXP, T_STEP_EXP = 2, -4, 4, 0.25
MIN_T, MAX_T = T_BASE**T_MIN_EXP, T_BASE**T_MAX_EXP


def temperatures():
    """Every temperature the slider's arrow keys reach: 2^-4 = 0.0625 to 2^4 = 16, 33 stops."""
    stops = int(round((T_MAX_EXP - T_MIN_EXP) / T_STEP_EXP))
    return [float(T_BASE ** (T_MIN_EXP + k * T_STEP_EXP)) for k in range(stops + 1)]


def power_of_ten(log_value, digits=3, largest=1e6):
    """e^``log_value`` as (digits, power of ten or None): ``("20.086", None)`` below ``largest``, else
    ``("7.225", 86)`` for e^200: a readout as wide whatever the value (e^200 written out took 87 digits)."""
    if log_value < np.log(largest):
        return (f"{np.exp(log_value):.{digits}f}", None)
    exponent = int(np.floor(log_value / np.log(10)))
    mantissa = 10 ** (log_value / np.log(10) - exponent)
    if round(mantissa, digits) >= 10:  # 9.9996 rounds up to 10.000: 1.000 x 10^(exponent + 1)
        mantissa, exponent = mantissa / 10, exponent + 1
    return (f"{mantissa:.{digits}f}", exponent)


def as_slider_shows(value, places=2):
    """``value`` to ``places`` decimals as the slider's readout shows it (JavaScript's toFixed: the double's
    exact value rounded half up), so that the alt text says what the slider says: T = 2^-3 is "0.13" there,
    where Python's format gives "0.12"."""
    return str(Decimal(float(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def softmax_state(scores, temperature, labels=None, d_k=64, linked=False):
    """The weights softmax(scores / temperature), their entropy, the sum of e^(s/T), the readout and alt text."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = [f"token {i + 1}" for i in range(len(scores))] if labels is None else list(labels)
    T = float(temperature)
    w = softmax(scores / T)
    positive = w[w > 0]
    entropy = float(-(positive * np.log(positive)).sum())
    k = len(w)
    log_sum = float(np.logaddexp.reduce(scores / T))  # ln Σ e^(s/T), finite even where the sum is not
    sum_exp = float(np.exp(log_sum)) if log_sum < 700 else float("inf")
    top = int(np.argmax(w))
    return {
        "scores": scores, "temperature": T, "weights": w, "entropy": entropy, "d_k": d_k, "linked": linked,
        "sum_exp": sum_exp, "log_sum_exp": log_sum, "labels": labels,
        "readout": render("softmax_readout.html", weights=[f"{v:.4f}" for v in w], sum_exp=power_of_ten(log_sum),
                          entropy=entropy, k=k, log_k=float(np.log(k)), linked=linked, d_k=d_k,
                          root=f"{np.sqrt(d_k):g}"),
        "alt": f"Bar chart of the weights at T = {as_slider_shows(T)}: " + ", ".join(
            f"{label} {v:.2f}" for label, v in zip(labels, w)) + f"; {labels[top]} highest.",
    }


class SoftmaxPlayground(Explorer):
    """The view of :func:`softmax_state`: score and temperature sliders, the readout, the bars."""

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
        controls["temperature"] = widgets.FloatLogSlider(
            value=float(temperature), base=T_BASE, min=T_MIN_EXP, max=T_MAX_EXP, step=T_STEP_EXP,
            description="temperature T", readout_format=".2f", style={"description_width": "initial"},
            layout=widgets.Layout(width="400px"),
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
            from ..figures.base import WorkbookFigure, draw_bars

            figure = WorkbookFigure(figsize=(max(5.0, 1.0 + 0.9 * len(scores)), 3.2), dpi=dpi)
            ax = figure.add_subplot()
            self.bars, self.texts = draw_bars(ax, np.zeros(len(scores)), labels)
            ax.set_title("softmax(s / T): weights of one query", fontsize=12)
            self._set(self._state()["weights"])
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

    def _state(self):
        c = self.controls
        scores = [c[f"s{i + 1}"].value for i in range(len(self.labels))]
        return softmax_state(scores, c["temperature"].value, self.labels, c["d_k"].value, c["link"].value)

    def _set(self, w):
        if self.bars is None:
            return
        for bar, text, v in zip(self.bars.patches, self.texts, w):
            bar.set_height(v)
            text.set_y(v + 0.02)
            text.set_text(f"{v:.4f}")

    def update(self, change=None):
        state = self._state()
        self._set(state["weights"])
        self.canvas.refresh()
        self.readout.value = state["readout"]
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt}


def softmax_playground(scores=(1.0, 3.0, 2.0), labels=None, temperature=1.0, dpi=80, d_k=64, link=False):
    """Explorer (b), Problem 2.3: one slider per score and a temperature T; the
    weights softmax(s / T) as bars with their values, and the entropy. ``link=True``
    (or the "T is √d_k" switch) sets T = √d_k for the chosen ``d_k``: dividing by
    √d_k is a temperature. ``dpi`` scales the figure."""
    return SoftmaxPlayground(scores, labels, temperature, dpi, d_k, link)
