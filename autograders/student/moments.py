"""The workbook's "predict first" moments: what each asks, its right value (computed with ``mha_core``,
never typed in), the short reason shown beside it, and the figure or explorer it unlocks.

An id is the prediction cell's name, ``predict_<level>_<problem>_<what>``; the notebooks call
``predict_first(id, value)``, which shows the moment with the library's
:class:`~mha_core.explore.predict.PredictFirst`, and :mod:`autograders.checks.predictions` judges the
class's predictions against :meth:`Moment.actual`.
"""

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .sentences import SENTENCE, TOKENS


@dataclass(frozen=True)
class Moment:
    """A prediction: ``question``; ``actual()`` the right value, a number (right within ``tolerance``) or a
    label among ``choices``; ``because`` the reason; ``view()`` builds what it unlocks, named by ``what``."""

    question: str
    actual: Callable
    because: str
    view: Callable
    what: str = "the explorer"
    tolerance: float = 0.0
    choices: tuple = ()
    bounds: tuple = ()  # (low, high): the range a numeric prediction must fall in, ends included

    @property
    def kind(self):
        if self.choices:
            return f"one of {', '.join(self.choices)}, in quotes"
        return f"a number from {self.bounds[0]:g} to {self.bounds[1]:g}" if self.bounds else "a number"

    def in_bounds(self, value):
        return not self.bounds or self.bounds[0] <= value <= self.bounds[1]

    def judge(self, value):
        """True or False for a prediction read by :func:`mha_core.explore.predict.as_prediction`."""
        right = self.actual()
        return value == right if self.choices else abs(value - right) <= self.tolerance + 1e-9


def predict_first(prediction_id, value):
    """The moment ``prediction_id`` (see :data:`MOMENTS`) for the student's ``value``: locked while ``value``
    is None, else the value beside the right one and the figure or explorer."""
    from mha_core.explore.predict import PredictFirst  # alone: not every explorer (mha_core.explore)

    if prediction_id not in MOMENTS:
        raise ValueError(f"prediction_id must be one of {sorted(MOMENTS)}, got {prediction_id!r}")
    return PredictFirst(MOMENTS[prediction_id], value)


def _figure(build):
    def view():
        from mha_core.widgets import figure_view

        return figure_view(build())

    return view


# --- the right values, from the library ---------------------------------------------------------


def _pronoun_weight():
    from mha_core.plots import sentence_weights

    weights, _ = sentence_weights(SENTENCE, ("pronoun",))
    return round(float(weights[0][SENTENCE.index("it"), SENTENCE.index("cat")]), 2)


def _hot_weight():
    from mha_core.attention import softmax

    return round(float(softmax(np.array([4.0, 2.0, 5.0]) / 2.0).max()), 2)


def _parameter_growth():
    from mha_core.counting import parameter_count

    return parameter_count(1024, 8) / parameter_count(512, 8)


def _masked_weight():
    from mha_core.widgets import step_state

    return round(float(step_state((1.0, 0.0), 2, *_keys_4_2())["weights"][0]), 2)


def _keys_4_2():
    """Problem 4.2's keys and values, (K, V), as the sheet gives them."""
    from .sheet import SHEET_4_2

    return SHEET_4_2["keys"], SHEET_4_2["values"]


LEARNED_HEADS = ((1, 1), (1, 2), (2, 1), (2, 2))  # the options A to D of predict_5_4_most_needed


@functools.cache
def _ablations():
    """{(layer, head): accuracy with that head switched off} of the shipped learned model."""
    from mha_core import learned

    model = learned.load()
    return {head: model.accuracy(ablate=[head]) for head in LEARNED_HEADS}


def _most_needed():
    accuracy = _ablations()
    worst = min(accuracy, key=accuracy.get)
    return "ABCD"[LEARNED_HEADS.index(worst)]


# --- what each unlocks (mha_core's figures and explorers, imported when a moment opens) ------------------


def _widgets():
    from mha_core import widgets

    return widgets


def _plots():
    from mha_core import plots

    return plots


def _ablation_table():
    import ipywidgets as widgets

    from mha_core import learned
    from mha_core.markup import render

    model = learned.load()
    lines = [f"all heads on: accuracy {model.accuracy():.3f}"]
    lines += [f"layer {layer}, head {head} off: accuracy {accuracy:.3f}, first letter "
              f"{model.first_token_accuracy(ablate=[(layer, head)]):.3f}" for (layer, head), accuracy in _ablations().items()]
    return widgets.VBox([widgets.HTML(render("caption.html", text=line)) for line in lines])


MOMENTS = {
    "predict_1_1_d_k_h24": Moment(
        "The block of Problem 1.1 with twice the heads: d_k for d_model = 768 and h = 24?",
        lambda: 768 // 24, "d_k = d_model / h = 768 / 24: twice the heads, each half as wide (the explorer "
        "below starts at Problem 1.1's block; pick h = 24 in its menu).",
        lambda: _widgets().shape_explorer(d_model=768, h=12, n=6, tokens=TOKENS)),
    "predict_2_1_weight": Moment(
        "In the row of \"it\", the weight on \"cat\" (a number between 0 and 1)?", _pronoun_weight,
        "this head's W_Q and W_K were written so that a pronoun's query matches the keys of the nouns it can "
        "stand for (and in its small lexicon it stands for an animal, never a thing).",
        _figure(lambda: _plots().sentence_heatmap(SENTENCE, pattern="pronoun")),
        what="figure s01", tolerance=0.1, bounds=(0, 1)),
    "predict_2_3_weight_t2": Moment(
        "Problem 2.3's scores (4, 2, 5) at temperature T = 2: the largest weight?", _hot_weight,
        "T divides every score before softmax: the gaps between the scores halve, so the weights move "
        "towards a third each (the playground below starts there).",
        lambda: _widgets().softmax_playground(scores=(4.0, 2.0, 5.0), labels=("token 1", "token 2", "token 3"),
                                              temperature=2.0), what="the playground",
        tolerance=0.03, bounds=(0, 1)),
    "predict_4_1_growth": Moment(
        "How many times more parameters has a block with d_model = 1024 than one with d_model = 512?",
        _parameter_growth, "the count is 4·d_model², so doubling d_model multiplies it by 2² = 4, "
        "whatever h.",
        lambda: _widgets().parameter_explorer(d_model=512)),
    "predict_4_2_position_2": Moment(
        "The query q = (1, 0) moved to position 2: its weight on key 1?", _masked_weight,
        "at position 2 the causal mask leaves keys 1 and 2 only: scaled scores 1/√2 and 0, so "
        "w_1 = e^0.71 / (e^0.71 + 1).",
        lambda: _widgets().causal_step_explorer((1.0, 0.0), *_keys_4_2(), position=2), tolerance=0.03, bounds=(0, 1)),
    "predict_5_4_most_needed": Moment(
        "Which head, switched off, costs the learned model the most accuracy? \"A\" layer 1 head 1, \"B\" "
        "layer 1 head 2, \"C\" layer 2 head 1, \"D\" layer 2 head 2.", _most_needed,
        "the induction head (layer 2, head 2) is the one that copies the answer: without it almost nothing "
        "is right; without the previous-token head it can no longer find the token after α, but the "
        "remaining heads still guess some.", _ablation_table, what="the ablation table", choices=tuple("ABCD")),
}
