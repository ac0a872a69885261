"""Predict, then see: every prediction cell of the notebooks is registered, unlocks the cell under it, and
the figure or explorer stays locked while the prediction is blank (tested by setting values, no browser)."""

import math
import re

import numpy as np
import pytest

import mha_core
from autograders.checks import predictions
from autograders.checks.predictions import PREDICTIONS
from autograders.student.moments import MOMENTS, predict_first
from mha_core.explore.predict import PredictFirst, as_prediction
from tests.conftest import all_notebooks, answer_head, nbgrader_meta, read

pytestmark = pytest.mark.usefixtures("no_drawing")


def prediction_cells():
    """[(notebook stem, index, cell)] of every cell tagged prediction."""
    return [(path.stem, i, cell) for path in all_notebooks() for i, cell in enumerate(read(path).cells)
            if predictions.TAG in cell.metadata.get("tags", [])]


def test_every_prediction_cell_is_registered_once_and_unlocks_the_cell_under_it():
    names = []
    for stem, index, cell in prediction_cells():
        head = answer_head(cell.source).split("\n")  # what it asks, on a line above the placeholder
        name = head[-1].split("=", 1)[0].strip()
        assert head[-1] == f"{name} = None" and head[0].startswith("# your prediction: "), (stem, head)
        assert cell.cell_type == "code" and not nbgrader_meta(cell), (stem, name, "a prediction is never graded")
        nb = read(next(p for p in all_notebooks() if p.stem == stem))
        problems = {m[1].replace(".", "_") for c in nb.cells for m in [re.match(r"### Problem (\d+\.\d+)", c.source)] if m}
        assert name in PREDICTIONS and "_".join(name.split("_")[1:3]) in problems, (stem, name)  # its problem's notebook
        below = nb.cells[index + 1]
        assert f"predict_first({name!r}, {name})" in below.source, (stem, name, below.source)
        names.append(name)
    assert sorted(names) == sorted(PREDICTIONS) == sorted(MOMENTS)  # each once, none left unused
    required = {"predict_2_1_weight", "predict_4_2_position_2"}  # a prediction before a level's explorers
    assert required <= set(names)


def test_a_blank_prediction_reads_as_none_from_the_notebook():
    for stem, _, cell in prediction_cells():
        nb = read(next(p for p in all_notebooks() if p.stem == stem))
        found = predictions.read(nb)
        assert all(value is None for value in found.values()), (stem, found)


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_locked_until_the_prediction_is_in(name):
    locked = predict_first(name, None)
    assert locked.locked and locked.view is None and locked.children == (locked.line,)
    assert "Predict first" in locked.line.value and "None" in locked.line.value
    wrong_kind = predict_first(name, [0.5] if not MOMENTS[name].choices else "Z")
    assert wrong_kind.locked and wrong_kind.view is None and "Not a prediction yet" in wrong_kind.line.value


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_unlocked_it_shows_the_prediction_beside_the_right_value(name):
    moment = MOMENTS[name]
    guess = "D" if moment.choices else 0.5 if moment.in_bounds(0.5) else float(moment.bounds[0])
    shown = predict_first(name, guess)
    assert not shown.locked and shown.view is not None and shown.children == (shown.line, shown.view)
    assert f"You predicted <b>{guess if moment.choices else _shown(guess)}</b>" in shown.line.value
    right = moment.actual()
    assert f"it is <b>{right if moment.choices else _shown(right)}</b>" in shown.line.value
    assert shown.right is (guess == right if moment.choices else abs(guess - right) <= moment.tolerance)
    assert (": right, it is" in shown.line.value) is shown.right
    on_the_mark = predict_first(name, right)
    assert on_the_mark.right is True and "</b>: right, it is <b>" in on_the_mark.line.value


def _shown(value):
    return f"{int(value):,}" if value == int(value) else f"{value:.2f}"


def test_the_report_and_the_explorer_agree_on_what_is_right():
    for name, moment in MOMENTS.items():
        right = moment.actual()
        assert PREDICTIONS[name].judge(right) is True, name
        assert predictions.judge(name, right.lower() if isinstance(right, str) else right) is True, name


def test_the_right_values_against_an_independent_computation():
    """Each right value recomputed here with numpy or plain Python, not through the moments."""
    assert MOMENTS["predict_1_1_d_k_h24"].actual() == 32
    w = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + math.exp(0))
    assert MOMENTS["predict_4_2_position_2"].actual() == round(w, 2) == 0.67
    e = np.exp(np.array([4.0, 2.0, 5.0]) / 2)
    assert MOMENTS["predict_2_3_weight_t2"].actual() == round(float(e.max() / e.sum()), 2)
    assert MOMENTS["predict_4_1_growth"].actual() == 4 * 1024**2 / (4 * 512**2)
    assert 0.8 <= MOMENTS["predict_2_1_weight"].actual() <= 0.95
    from mha_core import learned  # each head switched off, measured on the model itself

    model = learned.load()
    costs = {head: model.accuracy() - model.accuracy(ablate=[head]) for head in model.heads}
    assert "ABCD"[sorted(model.heads).index(max(costs, key=costs.get))] == MOMENTS["predict_5_4_most_needed"].actual() == "D"


def test_the_unlocked_explorer_can_be_moved():
    """Unlocked, the view is a live explorer: setting a control changes its readout."""
    shown = predict_first("predict_4_2_position_2", 0.5)
    explorer = shown.view
    before = explorer.state["weights"][0]
    explorer.controls["position"].value = 4
    assert explorer.state["weights"][0] != before and np.isclose(explorer.state["weights"].sum(), 1)


@pytest.mark.parametrize("name", sorted(n for n, m in MOMENTS.items() if m.bounds))
def test_a_prediction_out_of_its_range_is_refused_with_the_range(name):
    """88 for a weight in [0, 1] is not taken silently: the line names the range and asks again."""
    moment = MOMENTS[name]
    low, high = moment.bounds
    assert low <= moment.actual() <= high  # the right value is a possible prediction
    for outside in (high + 87, low - 0.5, float("nan")):
        refused = predict_first(name, outside)
        assert refused.locked and refused.view is None
        assert f"is not a number from {low:g} to {high:g}" in refused.line.value
        assert "Change the cell above" in refused.line.value
    assert not predict_first(name, high).locked and not predict_first(name, low).locked


def test_the_weights_and_counts_a_student_predicts_have_ranges():
    weights = {n for n, m in MOMENTS.items() if "weight" in m.question.lower() and not m.choices}
    assert weights and all(MOMENTS[n].bounds == (0, 1) for n in weights)


def test_readings():
    moment = MOMENTS["predict_5_4_most_needed"]
    assert as_prediction(moment, " b ") == "B" and as_prediction(moment, "E") is None and as_prediction(moment, 2) is None
    number = MOMENTS["predict_4_2_position_2"]
    assert as_prediction(number, 1) == 1.0 and as_prediction(number, True) is None and as_prediction(number, "0.5") is None
    with pytest.raises(ValueError, match="prediction_id"):
        predict_first("predict_0_0_nothing", 1)
    assert isinstance(predict_first("predict_2_1_weight", 0.5), PredictFirst)


def _predictions_of(nb):
    return [(c.source, c.metadata.get("tags")) for c in nb.cells if predictions.TAG in c.metadata.get("tags", [])]


def test_the_practice_edition_keeps_every_prediction_cell():
    from autograders.editions import editions

    for path in all_notebooks():
        source = read(path)
        assert _predictions_of(editions.practice_notebook(source)) == _predictions_of(source), path.stem


def test_the_release_keeps_every_prediction_cell(course):
    kept = 0
    for name in course.names:
        source = read(next(p for p in all_notebooks() if p.stem == name))
        released = read(course.root / "release" / name / f"{name}.ipynb")
        assert _predictions_of(released) == _predictions_of(source), name
        kept += len(_predictions_of(released))
    assert kept == len(MOMENTS)


def test_an_unlocked_figure_is_the_notebooks_own_picture_and_fits_its_column():
    """The figure a prediction opens: the PNG the figure shows in a notebook (tight, its colour bar's
    label whole), at its own width but never wider than the output area."""
    from mha_core.widgets import figure_view

    was = mha_core._drawing
    mha_core.drawing(True)
    try:
        figure = mha_core.plots.heatmap(np.full((10, 10), 0.1), [f"t{i}" for i in range(10)], [f"t{i}" for i in range(10)])
        expected = figure._repr_png_()
        image = figure_view(figure).children[0]
    finally:
        mha_core._drawing = was
    import io

    import matplotlib.image

    shown, own = (matplotlib.image.imread(io.BytesIO(bytes(png)), format="png") for png in (image.value, expected))
    assert shown.shape == own.shape and np.abs(shown - own).max() < 0.02
    assert image.layout.width == f"{int.from_bytes(expected[16:20], 'big')}px"
    assert (image.layout.max_width, image.layout.height) == ("100%", "auto")
