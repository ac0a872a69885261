"""Predict, then check: no output a student sees before answering a graded
question shows that question's answer.

Each practice notebook is executed headless (the session's ``executed_practice``),
as a student first opens it: every answer blank. The correct value of every autograded answer that is a number,
a shape or an array comes from running the source notebook's setup, data and
answer cells in this process. The text of that value, written the ways the
explorers, tables and prints write it, must not appear in any output of a cell
above the answer's test cell: stream and error text, ``text/plain``,
``text/html`` (tags removed, entities decoded), image alt text, and the texts of
the widgets an output shows (HTML readouts, labels, slider values, Output
widgets' outputs), read from the notebook's saved widget state. The test cell's
own output (the check's line for full credit) is not above it, so it never counts.
"""

import html
import numbers
import re

import numpy as np
import pytest

from tests.conftest import ANSI, answer_head, filled, ids, is_answer_cell, is_test_cell, level_notebooks, nbgrader_meta

LEVELS = level_notebooks()
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
TEXT_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex")
MODEL_REF = re.compile(r"^IPY_MODEL_([\w-]+)$")
PLACEHOLDER = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*None\b")


# --- the correct values ---------------------------------------------------------


def correct_values(path):
    """{test cell grade_id: (answer grade_id, correct value)} for the answer cells of
    ``path`` that set a variable (``name = None`` first line of code); function answers
    are left out. The source's setup, data and answer cells run in order, in this process."""
    namespace, found, pending = {}, {}, []
    for cell in filled(path).cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or "grade_id" not in meta:
            continue
        if is_test_cell(cell):
            for gid, name in pending:
                found[meta["grade_id"]] = (gid, namespace.get(name))
            pending = []
            continue
        exec(cell.source, namespace)
        if is_answer_cell(cell):
            match = PLACEHOLDER.match(answer_head(cell.source).split("\n")[-1])
            if match:
                pending.append((meta["grade_id"], match[1]))
    return found


def _significant(text):
    """How many significant digits ``text`` (a formatted number) shows."""
    return len(re.sub(r"^[-0.]+", "", text.replace(",", "")).replace(".", ""))


def number_texts(value):
    """The ways a number is written by the workbook's explorers, tables and prints."""
    value = float(value)
    if value == int(value):
        whole = int(value)
        # Single-digit whole numbers (1, 5.0, 8, ...) are left out: "1", "5.0" or "8.00"
        # appear everywhere (slider readouts, a standard deviation of 1.00, head counts),
        # so finding them says nothing. Such answers are guarded by the notebooks' prose.
        if abs(whole) < 10:
            return set()
        return {str(whole), f"{whole:,}", *(f"{value:.{d}f}" for d in range(1, 5))}
    texts = {f"{value:.3f}", f"{value:.4f}", f"{value:g}", repr(value)}
    # Two decimals only where they still say something ("2.72", not "0.04").
    texts |= {t for t in [f"{value:.2f}"] if _significant(t) >= 3}
    return {t for t in texts if _significant(t) >= 3}


def shape_texts(shape):
    """The ways a shape is written: "6 × 768", "6×768", "6 x 768", "6x768", "(6, 768)", "[6, 768]"."""
    dims = [str(int(s)) for s in shape]
    texts = {sep.join(dims) for sep in (" × ", "×", " x ", "x")}
    texts |= {f"({', '.join(dims)})", f"[{', '.join(dims)}]", f"({','.join(dims)})"}
    if len(dims) == 1:
        texts.add(f"({dims[0]},)")
    return texts


def array_texts(values):
    """A 1-D array of numbers as printed whole (at 4 decimals) and entry by entry."""
    values = np.asarray(values, float).ravel()
    texts = set()
    for d in (3, 4):
        entries = [f"{v:.{d}f}" for v in values]
        texts |= {", ".join(entries), " ".join(entries), f"({', '.join(entries)})", f"[{' '.join(entries)}]"}
    for v in values:
        texts |= number_texts(v)
    return texts


def is_shape(value):
    return (
        isinstance(value, tuple)
        and len(value) > 0
        and all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in value)
    )


def value_texts(value):
    """The texts that would give ``value`` away, or an empty set for answers that are not
    a number, a shape or an array (a letter, a function)."""
    if isinstance(value, bool) or value is None or isinstance(value, str) or callable(value):
        return set()
    if is_shape(value):
        return shape_texts(value)
    if isinstance(value, numbers.Number):
        return number_texts(value)
    if isinstance(value, (list, tuple, np.ndarray)) and np.asarray(value).dtype.kind in "iuf":
        return array_texts(value)
    return set()


def found_in(text, candidate):
    """``candidate`` in ``text`` as a whole number: "64" is not found in "640", "1.64" or "64.5"."""
    pattern = rf"(?<![\d.]){re.escape(candidate)}(?!\.?\d)"
    return re.search(pattern, text) is not None


# --- what a cell shows ----------------------------------------------------------


def _html_text(markup):
    alts = re.findall(r"""alt\s*=\s*["']([^"']*)["']""", markup)
    return html.unescape(re.sub(r"<[^>]+>", " ", markup)) + "\n" + "\n".join(alts)


def _widget_texts(model_id, state, seen):
    """The texts a widget and its children show, from the saved widget state."""
    if model_id in seen or model_id not in state:
        return []
    seen.add(model_id)
    model = state[model_id].get("state", {})
    texts = []
    for key in ("value", "description", "placeholder", "tooltip"):
        item = model.get(key)
        if isinstance(item, str):
            texts.append(_html_text(item))
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and key == "value":
            texts.append(str(item))
    labels, index = model.get("_options_labels"), model.get("index")
    if labels and isinstance(index, int) and 0 <= index < len(labels):
        texts.append(str(labels[index]))  # a selection shows its chosen option
    texts += [_output_text(output, state, seen) for output in model.get("outputs", [])]  # an Output widget
    for item in model.values():  # children, and any other widget it holds
        for ref in item if isinstance(item, list) else [item]:
            match = MODEL_REF.match(ref) if isinstance(ref, str) else None
            if match:
                texts += _widget_texts(match[1], state, seen)
    return texts


def _output_text(output, state, seen):
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        return "\n".join([output.get("ename", ""), output.get("evalue", ""), *output.get("traceback", [])])
    data, parts = output.get("data", {}), []
    for mime in TEXT_MIMES:
        if mime in data:
            item = data[mime]
            item = "".join(item) if isinstance(item, list) else str(item)
            parts.append(_html_text(item) if mime == "text/html" else item)
    for meta in output.get("metadata", {}).values():
        if isinstance(meta, dict) and isinstance(meta.get("alt"), str):
            parts.append(meta["alt"])
    if WIDGET_VIEW in data:
        parts += _widget_texts(data[WIDGET_VIEW].get("model_id"), state, seen)
    return "\n".join(parts)


def shown_above(nb, test_gid):
    """Everything the cells above the test cell ``test_gid`` of the executed ``nb`` show."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    parts = []
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == test_gid:
            return ANSI.sub("", "\n".join(parts))
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            parts.append(_output_text(output, state, set()))
    raise AssertionError(f"no test cell {test_gid} in the executed notebook")


def revealed(nb, answers):
    """["<test gid>: <answer gid> = <text> is shown above its test"] for ``nb``."""
    problems = []
    for test_gid, (answer_gid, value) in answers.items():
        above = shown_above(nb, test_gid)
        for text in sorted(value_texts(value)):
            if found_in(above, text):
                line = next(line for line in above.splitlines() if found_in(line, text))
                problems.append(f"{answer_gid} = {text!r} is shown above {test_gid}: ...{line.strip()[:160]}")
    return problems


# --- the tests ------------------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_every_level_has_answers_to_guard(path):
    answers = correct_values(path)
    guarded = {gid for gid, (_, value) in answers.items() if value_texts(value)}
    assert guarded, f"{path.stem}: no number, shape or array answer found"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_no_output_above_a_test_shows_its_answer(path, executed_practice):
    nb, _ = executed_practice[path.stem]
    problems = revealed(nb, correct_values(path))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_no_output_above_a_choice_or_written_answer_states_it(path, executed_practice):
    """A labelled choice's right option and a written answer's rubric, in the formulas they state
    (tests/test_silent_until_asked.py's telltales, written plain: ``h · n²`` is ``h \\cdot n^2``), are
    in no output above the answer."""
    from tests.test_silent_until_asked import plain, telltales

    nb, _ = executed_practice[path.stem]
    problems = []
    for gid, formulas in telltales(filled(path)).items():
        above = plain(shown_above(nb, gid))
        problems += [f"{gid}: its answer ${formula}$ is shown above it" for formula in sorted(formulas) if formula in above]
    assert not problems, "\n".join(problems)


# --- the detector itself ----------------------------------------------------------


def test_number_shape_and_array_texts():
    assert {"64", "64.0", "64.0000"} <= number_texts(64)
    assert number_texts(8) == set() and number_texts(5.0) == set()  # single digits are left out
    assert "1,048,576" in number_texts(1048576)
    assert {"2.718", "2.7183", "2.72"} <= number_texts(np.e)
    assert "0.04" not in number_texts(0.0351) and "0.0351" in number_texts(0.0351)
    assert {"6 × 768", "(6, 768)", "6x768", "[6, 768]"} <= value_texts((6, 768))
    weights = np.exp([4.0, 2.0, 5.0]) / np.exp([4.0, 2.0, 5.0]).sum()
    assert {"0.2595, 0.0351, 0.7054", "0.2595", "0.705"} <= value_texts(weights)
    assert value_texts("B") == set() and value_texts(len) == set() and value_texts(None) == set()


def test_an_output_is_read_as_a_formula():
    import nbformat

    from tests.test_silent_until_asked import plain

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("plot", outputs=[nbformat.v4.new_output("stream", text="exponentials: h · n² = 800")]),
        nbformat.v4.new_markdown_cell("answer", metadata={"nbgrader": {"grade_id": "q9_1_explain"}})])
    assert plain("h \\cdot n^{2}") in plain(shown_above(nb, "q9_1_explain"))


def test_found_in_matches_whole_numbers_only():
    assert found_in("d_k = 64.", "64") and found_in("shape 6 × 768 here", "6 × 768")
    assert not found_in("640", "64") and not found_in("1.64", "64") and not found_in("64.5", "64")
    assert not found_in("16 × 7680", "6 × 768")


def _view(model_id):
    return {"output_type": "display_data", "data": {WIDGET_VIEW: {"model_id": model_id}, "text/plain": "VBox(...)"},
            "metadata": {}}


def test_widget_texts_are_read_from_the_saved_state():
    import nbformat

    state = {
        "box": {"state": {"children": ["IPY_MODEL_html", "IPY_MODEL_slider", "IPY_MODEL_out"]}},
        "html": {"state": {"value": "<b>d_k</b> = <b>64</b> &times; 2"}},
        "slider": {"state": {"value": 768, "description": "d_model"}},
        "out": {"state": {"outputs": [{"output_type": "stream", "name": "stdout", "text": "output (6, 768)"}]}},
    }
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("explorer", outputs=[nbformat.from_dict(_view("box"))]),
        nbformat.v4.new_code_cell("check", metadata={"nbgrader": {"grade_id": "q_test", "grade": True}},
                                  outputs=[nbformat.v4.new_output("stream", name="stdout", text="✔ 7 × 9 = 63")]),
    ])
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": state}}
    above = shown_above(nb, "q_test")
    assert "d_k = 64 × 2" in " ".join(above.split()) and "768" in above and "(6, 768)" in above
    assert "63" not in above  # the test cell's own output is not above it
    assert revealed(nb, {"q_test": ("q", (6, 768))})
    assert not revealed(nb, {"q_test": ("q", (7, 9))})
