"""No explorer shows a graded answer above that answer's test cell, at any value its controls can reach.

tests/test_predict_first.py reads what the executed notebook shows at the explorers' start values.
Here every explorer cell of every level notebook is run in this process (drawing off, every
prediction entered, so that each explorer is unlocked: the worst case), and each explorer it shows
is moved through the values its controls reach: every option of a menu or a radio choice, every
step of a slider of at most ``SMALL`` steps, and for a wider slider its two ends, its start and
every number the notebook's prose or answers name that the slider can take (a seed slider, which only
draws other random weights, at its ends and its start). At each setting its
texts (readouts, tables, notes, labels, alt texts, the slider values: every text of its widgets)
are searched for every graded answer whose test cell is below the explorer, in the forms the checks
accept (64, 64.0, "64", 6 × 768, (6, 768), 1,048,576, 1048576, 0.67 and 0.665 at 2 and 3 decimals).

The examples of issue 21 (the old explorers at the settings where they gave answers away) are
reproduced below: each is found by the same detector.
"""

import ast
import functools
import itertools
import re

import ipywidgets as widgets
import numpy as np
import pytest

from autograders.student.sentences import ENGLISH, FRENCH
import mha_core
from mha_core.explore.base import Explorer
from autograders.student.moments import predict_first
from mha_core.explore.predict import PredictFirst
from tests.conftest import answer_head, filled, ids, is_test_cell, level_notebooks, nbgrader_meta
from tests.test_predict_first import correct_values, found_in, value_texts

pytestmark = pytest.mark.usefixtures("no_drawing")

LEVELS = level_notebooks()
SMALL = 16  # a slider of at most this many steps is moved to every step
MAX_SETTINGS = 20_000  # an explorer above a graded answer must stay enumerable
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")

# --- the answers, in the forms the checks accept -----------------------------------------------


def answer_texts(value):
    """The texts that give ``value`` away: those of test_predict_first, and a number's 2 and 3 decimals."""
    texts = set(value_texts(value))
    numbers = []
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        numbers = [float(value)]
    elif isinstance(value, (list, np.ndarray)) and np.asarray(value).dtype.kind in "iuf":
        numbers = [float(v) for v in np.ravel(value)]
    for v in numbers:
        if v != int(v):
            texts |= {f"{v:.2f}", f"{v:.3f}"} - {"0.00", "-0.00", "0.000"}
    return texts


# Answers the student designs: the checks accept any value with the property asked (a head whose weights
# sit on the previous token, a query that averages two values), so the source's one solution is not
# "the answer" and its entries (a 20 in a matrix) give nothing away when an explorer shows them.
DESIGNED = {"q4_4_previous_token", "q4_4_average_query"}
# Answers that pick one of the items the problem shows, like a letter among options: 5.4's heads, given
# as (layer, head) among the four heads its figure labels. Not shapes: "1 × 2" says nothing of them.
PICKS = {"q5_4_previous_token_head", "q5_4_induction_head"}


@functools.lru_cache(maxsize=None)
def guarded(path):
    """[(index of the test cell, answer grade_id, value, texts)] of the answers with texts to guard."""
    cells = filled(path).cells
    where = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(cells) if is_test_cell(c)}
    found = []
    for test_gid, (answer_gid, value) in correct_values(path).items():
        if answer_gid in DESIGNED | PICKS:
            continue
        texts = answer_texts(value)
        if texts:
            found.append((where[test_gid], answer_gid, value, texts))
    return found


@functools.lru_cache(maxsize=None)
def notable_numbers(path):
    """Every number the notebook's markdown and answers name (the settings a student is sent to)."""
    numbers = set()
    for cell in filled(path).cells:
        if cell.cell_type == "markdown":
            numbers |= {float(m) for m in NUMBER.findall(cell.source)}
    for _, (_, value) in correct_values(path).items():
        if isinstance(value, tuple):
            numbers |= {float(v) for v in value if isinstance(v, (int, np.integer))}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers.add(float(value))
    return frozenset(numbers)


# --- the explorers of a notebook ----------------------------------------------------------------


def _last_value(source, namespace):
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        exec(compile(ast.Module(tree.body[:-1], []), "<cell>", "exec"), namespace)
        return eval(compile(ast.Expression(tree.body[-1].value), "<cell>", "eval"), namespace)
    exec(source, namespace)
    return None


def entered(name):
    """A prediction entered for ``name``: the right one (an explorer unlocked, the worst case)."""
    from autograders.checks.predictions import PREDICTIONS

    return PREDICTIONS[name].right


def explorer_cells(path):
    """[(cell index, widget)] of the notebook's cells that show a widget, run in order in this process with
    every answer's solution and every prediction entered (the source's setup, data and answer cells run too)."""
    namespace, shown = {}, []
    for index, cell in enumerate(filled(path).cells):
        if cell.cell_type != "code" or is_test_cell(cell):
            continue
        if "prediction" in cell.metadata.get("tags", []):
            name = answer_head(cell.source).split("\n")[-1].split("=", 1)[0].strip()
            namespace[name] = entered(name)
            continue
        meta = nbgrader_meta(cell)
        if "grade_id" in meta:
            exec(cell.source, namespace)
        elif "mha.widgets." in cell.source or "predict_first(" in cell.source:
            value = _last_value(cell.source, namespace)
            if isinstance(value, widgets.Widget):
                shown.append((index, value))
    return shown


def explorers_in(widget):
    """The explorers a widget shows (itself, or those its children hold)."""
    found, stack = [], [widget]
    while stack:
        item = stack.pop()
        if isinstance(item, Explorer):
            found.append(item)
        stack.extend(getattr(item, "children", ()))
    return found


def texts_of(widget):
    """Every text a widget and its children show: HTML and labels, descriptions, tooltips, a slider's
    value, a selection's chosen label."""
    parts, stack = [], [widget]
    while stack:
        item = stack.pop()
        for key in ("value", "description", "tooltip", "placeholder"):
            value = getattr(item, key, None) if item.has_trait(key) else None
            if isinstance(value, str):
                parts.append(re.sub(r"<[^>]+>", " ", value))
            elif key == "value" and isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.append(f"{value:g}" if isinstance(value, float) else str(value))
        if isinstance(item, (widgets.Dropdown, widgets.RadioButtons, widgets.ToggleButtons, widgets.Select)):
            if item.index is not None:
                parts.append(str(item.label))
        stack.extend(getattr(item, "children", ()))
    import html

    return html.unescape("\n".join(parts))


def slider_values(slider, notable):
    if slider.description == "seed":
        return sorted({slider.min, slider.max, slider.value})
    steps = int(round((slider.max - slider.min) / slider.step))
    grid = [slider.min + k * slider.step for k in range(steps + 1)]
    if steps <= SMALL:
        return grid
    on_grid = {round(v, 9) for v in grid}
    picked = {slider.min, slider.max, slider.value} | {v for v in notable if round(v, 9) in on_grid}
    return sorted(picked)


def reachable(control, notable):
    if isinstance(control, widgets.FloatLogSlider):  # its grid is on the exponents
        exponents = slider_values(widgets.FloatSlider(min=control.min, max=control.max, step=control.step,
                                                      value=np.log(control.value) / np.log(control.base)),
                                  [np.log(v) / np.log(control.base) for v in notable if v > 0])
        return [float(control.base ** e) for e in exponents]
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        values = slider_values(control, notable)
        return [int(v) for v in values] if isinstance(control, widgets.IntSlider) else values
    if isinstance(control, widgets.Checkbox):
        return [False, True]
    if hasattr(control, "options"):
        return [value for _, value in _pairs(control.options)]
    raise AssertionError(f"a control of a kind the enumeration does not know: {type(control).__name__}")


def _pairs(options):
    return [o if isinstance(o, tuple) else (str(o), o) for o in options]


def settings(explorer, notable):
    """How many settings :func:`visit` will go through (options read at the start values)."""
    return int(np.prod([len(reachable(c, notable)) for c in explorer.controls.values() if not c.disabled]))


def visit(explorer, notable, seen):
    """Move ``explorer`` through every reachable setting (a menu's options read again once the controls
    before it are set: h's options follow d_model) and call ``seen(texts)`` at each."""
    controls = [c for c in explorer.controls.values() if not c.disabled]
    start = [c.value for c in controls]

    def walk(k):
        if k == len(controls):
            seen(texts_of(explorer))
            return
        for value in reachable(controls[k], notable):
            if controls[k].value != value:
                controls[k].value = value
            walk(k + 1)

    walk(0)
    for control, value in zip(controls, start):
        if hasattr(control, "options") and value not in [v for _, v in _pairs(control.options)]:
            continue
        control.value = value


def leaks_of(widget, answers, notable=()):
    """["<answer gid> = <text>: <line>"] for each of ``answers`` [(gid, texts)] that ``widget`` shows at
    a setting it can reach (a static widget: at its one setting)."""
    problems = {}

    def seen(text):
        for gid, texts in answers:
            for candidate in texts:
                if (gid, candidate) not in problems and found_in(text, candidate):
                    line = next(line for line in text.splitlines() if found_in(line, candidate))
                    problems[gid, candidate] = f"{gid} = {candidate!r}: ...{line.strip()[:140]}"

    seen(texts_of(widget))
    for explorer in explorers_in(widget):
        count = settings(explorer, notable)
        assert count <= MAX_SETTINGS, (f"{type(explorer).__name__} above a graded answer reaches {count} settings: "
                                       "narrow its controls or move it after the test")
        visit(explorer, notable, seen)
    return sorted(problems.values())


# --- the notebooks ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_no_explorer_shows_an_answer_above_its_test_at_any_reachable_value(path):
    answers, notable = guarded(path), notable_numbers(path)
    cells = explorer_cells(path)
    assert cells or not path.stem.startswith("level"), f"{path.stem}: no explorer cell found"  # every level has one
    problems = []
    for index, widget in cells:
        below = [(gid, texts) for test_index, gid, _, texts in answers if test_index > index]
        problems += [f"cell {index}: {p}" for p in leaks_of(widget, below, notable)] if below else []
    assert not problems, "\n".join(problems)


def test_every_explorer_above_a_graded_answer_is_enumerated():
    """The test above does not skip: the explorers above numbers, shapes and arrays are moved."""
    moved = []
    for path in LEVELS:
        answers = guarded(path)
        for index, widget in explorer_cells(path):
            if any(test_index > index for test_index, *_ in answers):
                moved += [(path.stem, type(e).__name__) for e in explorers_in(widget)]
    assert {("level3_analysis", "FlopExplorer"), ("level4_synthesis", "ParameterExplorer")} <= set(moved), moved


# --- the examples: the old explorers give the answers away ---------------------------------


def _answers(**values):
    return [(gid, answer_texts(value)) for gid, value in values.items()]


def test_old_level1_shape_explorer_showed_d_k_and_the_output_shape():
    old = mha_core.widgets.shape_explorer(d_model=384, h=4, n=5)  # above Problem 1.1, as it was
    with old.paused():
        old.controls["d_model"].value = 768
    old.controls["h"].value, old.controls["n"].value = 12, 6
    found = leaks_of(widgets.VBox(old.children), _answers(q1_1_d_k=64, q1_2_output_shape=(6, 768)))
    assert any(p.startswith("q1_1_d_k = '64'") for p in found), found
    assert any(p.startswith("q1_2_output_shape = '6 × 768'") for p in found), found


def test_old_level1_shape_explorer_is_found_by_the_enumeration():
    """At the start values it shows neither: only moving its controls finds them."""
    old = mha_core.widgets.shape_explorer(d_model=384, h=4, n=5)
    answers = _answers(q1_1_d_k=64.0, q1_2_output_shape=(6, 768))
    for name in ("seed", "source", "causal"):  # kept at their start: a shorter walk
        old.controls[name].disabled = True
    assert not [p for p in leaks_of(widgets.VBox([old.readout]), answers)]
    found = leaks_of(old, answers, notable={768.0, 12.0, 6.0})
    assert any("q1_2_output_shape" in p for p in found) and any("q1_1_d_k = '64" in p for p in found), found


def test_old_level2_softmax_playground_showed_the_weights():
    old = mha_core.widgets.softmax_playground(scores=(1.0, 3.0, -1.0), labels=("token 1", "token 2", "token 3"))
    with old.paused():
        for name, value in zip(("s1", "s2", "s3"), (4.0, 2.0, 5.0)):  # as its prompt asked
            old.controls[name].value = value
    weights = np.exp([4.0, 2.0, 5.0]) / np.exp([4.0, 2.0, 5.0]).sum()
    found = leaks_of(widgets.VBox(old.children), _answers(q2_3_weights=weights))
    assert any("0.7054" in p for p in found) and any("0.2595" in p for p in found), found


def test_old_level4_parameter_explorer_showed_the_count_for_512():
    old = mha_core.widgets.parameter_explorer(d_model=256)  # above Problem 4.1, as it was
    found = leaks_of(old, _answers(q4_1_params_512=1048576), notable={512.0})
    assert any("1,048,576" in p for p in found), found


def test_old_level5_cross_explorer_showed_the_score_shape():
    old = mha_core.widgets.cross_attention_explorer(n_q=3, n_k=5, d_model=32, h=2, source_tokens=ENGLISH,
                                                    target_tokens=FRENCH)  # above 5.3's tests
    found = leaks_of(old, _answers(q5_3_score_shape=(4, 6)))
    assert any("q5_3_score_shape = '4 × 6'" in p for p in found), found


def test_the_forms_the_checks_accept_are_searched():
    assert {"64", "64.0", "64.00"} <= answer_texts(64) and {"1,048,576", "1048576"} <= answer_texts(1048576)
    assert {"6 × 768", "(6, 768)", "6 x 768", "6x768"} <= answer_texts((6, 768))
    assert {"0.67", "0.665"} <= answer_texts(0.6652)
    assert found_in("weights 0.67 and 0.33", "0.67") and not found_in("0.675", "0.67")


# --- "What the figure shows" stays folded until the prediction ------------------------------------


WHAT = re.compile(r"\*\*What the figure shows")


def open_explanations(source):
    """The explanations of a markdown cell that are not folded in a <details> block."""
    outside = re.sub(r"<details>.*?</details>", "", source, flags=re.S)
    return WHAT.findall(outside)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_figure_explanations_are_folded(path):
    cells = filled(path).cells
    problems = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and open_explanations(c.source)]
    assert not problems, f"{path.stem}: 'What the figure shows' open in cells {problems}"


def test_an_open_explanation_is_found():
    old = "**What the figure shows.** The row of *it* puts 0.88 of its weight on *cat*."
    assert open_explanations(old)
    assert not open_explanations(f"<details><summary><b>What the figure shows</b></summary>\n\n{old}\n\n</details>")


def test_an_unlocked_moment_is_what_the_enumeration_reads():
    """The leak test runs every moment unlocked; locked, a moment shows its line only."""
    locked = predict_first("predict_4_1_growth", None)
    assert isinstance(locked, PredictFirst) and not explorers_in(locked) and "1,048,576" not in texts_of(locked)
    unlocked = predict_first("predict_4_1_growth", 2)
    assert explorers_in(unlocked) and "1,048,576" in texts_of(unlocked)


def test_enumeration_visits_every_option_and_every_step():
    explorer = mha_core.widgets.parameter_explorer(d_model=64)
    seen = []
    explorer.controls["d_model"].max = 128  # 16 steps of 8: each one visited
    visit(explorer, (), seen.append)
    counts = {int(m) for text in seen for m in re.findall(r"4·d_model² = 4·(\d+)²", text)}
    assert counts == set(range(8, 129, 8))
    assert explorer.controls["d_model"].value == 64  # put back where it started
    assert list(itertools.islice(slider_values(widgets.IntSlider(min=8, max=1024, step=8, value=256),
                                               {512.0, 513.0, 2000.0}), 10)) == [8, 256, 512, 1024]


def test_max_d_model_keeps_a_graded_block_out_of_reach():
    explorer = mha_core.widgets.shape_explorer(d_model=16, h=16, n=8, max_d_model=16)
    assert (explorer.controls["d_model"].min, explorer.controls["d_model"].max) == (8, 16)
    assert mha_core.widgets.shape_explorer(d_model=16, h=2, n=4).controls["d_model"].max == 1024  # as before
    with pytest.raises(ValueError, match="max_d_model must be at least d_model = 32"):
        mha_core.widgets.shape_explorer(d_model=32, h=2, n=4, max_d_model=16)


def test_designed_answers_accept_other_values_than_the_solution():
    """An answer is left out of the search only when the checks take a value other than the source's."""
    from tests.test_accepted_forms import ACCEPTED

    for gid in DESIGNED:
        check, forms = ACCEPTED[gid]
        solution = np.asarray(forms[0], float) if not isinstance(forms[0], tuple) else np.concatenate(
            [np.ravel(np.asarray(part, float)) for part in forms[0]])
        others = [np.concatenate([np.ravel(np.asarray(p, float)) for p in f]) if isinstance(f, tuple)
                  else np.ravel(np.asarray(f, float)) for f in forms[1:]]
        assert any(o.shape != np.ravel(solution).shape or not np.allclose(o, np.ravel(solution)) for o in others), gid
