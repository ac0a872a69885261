"""Level 1 checks: right answers pass, each known wrong answer is named, wrong types say "should be"."""

import contextlib
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograders.checks import level1 as check
from autograders.feedback import WrongAnswer
from tests.fixtures import level1 as fixtures

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "level1_recognition.ipynb"


def rejects(func, value, says, hidden=False):
    with pytest.raises(WrongAnswer) as info:
        func(value, hidden=hidden)
    assert says in str(info.value), str(info.value)
    return str(info.value)


@pytest.mark.parametrize("hidden", [False, True])
def test_right_answers_pass(hidden, capsys):
    check.q1_1_head_dim(lambda d_model, h: d_model // h, hidden=hidden)
    check.q1_1_head_dim(lambda d_model, h: d_model / h, hidden=hidden)
    check.q1_1_d_k(64, hidden=hidden)
    check.q1_1_d_k(np.float64(64.0), hidden=hidden)
    check.q1_2_output_shape((6, 768), hidden=hidden)
    check.q1_2_output_shape([6, 768], hidden=hidden)
    check.q1_2_why(" b ", hidden=hidden)
    assert capsys.readouterr().out.count("✔ Correct.") == 7


@pytest.mark.parametrize(
    "body, says",
    [
        (lambda d_model, h: d_model * h, "Multiplied instead of divided"),
        (lambda d_model, h: h / d_model, "Swapped roles"),
        (lambda d_model, h: d_model, "the full width of a token"),
        (lambda d_model, h: h, "the number of heads"),
        (lambda d_model, h: 64, "returned 64, but should be 128"),
        (lambda d_model, h: "64", "should be a single number"),
        (lambda d_model: 64, "raised TypeError"),
        (64, "should be a function"),
        (None, "no answer yet"),
    ],
)
def test_head_dim_mistakes(body, says):
    rejects(check.q1_1_head_dim, body, says)


def _blank(d_model, h):
    raise NotImplementedError()


def test_head_dim_blank_and_hidden_cases():
    rejects(check.q1_1_head_dim, _blank, "has no answer yet")
    # Right on the sheet's sizes only: the hidden test catches it without naming the answer.
    message = rejects(check.q1_1_head_dim, lambda d_model, h: 64 if d_model == 768 else d_model // 4, "", hidden=True)
    assert "not one head's width" in message and "should be" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        (9216, "Multiplied instead of divided"),
        (12 / 768, "Swapped roles"),
        (768, "the full width of a token"),
        (12, "the number of heads"),
        (32, "use your formula"),
        ("64", "should be a single number"),
        ([64], "should be a single number"),
        (None, "no answer yet"),
    ],
)
def test_d_k_mistakes(value, says):
    rejects(check.q1_1_d_k, value, says)


def test_d_k_hidden_gives_nothing_away():
    message = rejects(check.q1_1_d_k, 64.5, "", hidden=True)
    assert "64" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        ((6, 64), "Only one head's width"),
        ((6, 9216), "(n, h·d_model)"),
        ((6, 6), "score matrix"),
        ((768, 6), "Rows and columns swapped"),
        ((12, 6, 64), "the h heads stacked"),
        ((6, 12), "one number per head"),
        ((6, 512), "Rows: one per token"),
        ((6, 768, 1), "should be a 2-D shape"),
        ("6x768", "should be a shape"),
        ((6.0, 768.0), "should be a shape"),
        (None, "no answer yet"),
    ],
)
def test_output_shape_mistakes(value, says):
    rejects(check.q1_2_output_shape, value, says)


def test_output_shape_hidden_gives_nothing_away():
    message = rejects(check.q1_2_output_shape, (6, 64), "", hidden=True)
    assert "768" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        ("A", "does *not* keep the full width"),
        ("c", "says nothing about the width"),
        ("D", "concatenated, not summed"),
        ("E", "should be one of"),
        (2, "should be one of"),
        (None, "no answer yet"),
    ],
)
def test_why_mistakes(value, says):
    rejects(check.q1_2_why, value, says)


# --- the notebook's cells, run in order without a kernel ---------------------------


def _cells():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return [(c.metadata.get("nbgrader", {}), c) for c in nb.cells]


def _run(replace=None):
    """Run the setup, answer and test cells; return {test grade_id: failure message or None}."""
    namespace, results = {}, {}
    for meta, cell in _cells():
        gid = meta.get("grade_id")
        if cell.cell_type != "code" or gid is None:
            continue
        source = replace[1] if replace and gid == replace[0] else cell.source
        if meta.get("grade"):
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(source, namespace)
                results[gid] = None
            except WrongAnswer as exc:
                results[gid] = str(exc)
        else:
            exec(source, namespace)
    return results


def test_source_notebook_passes_every_test_cell():
    results = _run()
    assert results and all(message is None for message in results.values()), results


@pytest.mark.parametrize("mistake", fixtures.MISTAKES, ids=lambda m: f"{m.cell}:{m.code.strip()[-30:]}")
def test_each_mistake_fails_exactly_its_cells_and_names_itself(mistake):
    results = _run((mistake.cell, mistake.code))
    failed = {gid for gid, message in results.items() if message is not None}
    assert failed == set(mistake.fails), results
    assert any(mistake.says in results[gid] for gid in mistake.fails), results


def test_every_answer_cell_has_a_mistake():
    answers = {m["grade_id"] for m, c in _cells() if m.get("solution") and c.cell_type == "code"}
    assert answers == {m.cell for m in fixtures.MISTAKES}


def test_numbers_are_computed_and_every_decimal_in_markdown_is_listed():
    text = "\n".join(c.source for _, c in _cells())
    for number in fixtures.NUMBERS:
        assert number.literal in text, number.literal
        assert number.formatted() == number.literal, (number.literal, number.formatted())
    markdown = "\n".join(c.source for _, c in _cells() if c.cell_type == "markdown")
    markdown = re.sub(r"(Problem|Solution|Level)s? \d+\.\d+", "", markdown)
    decimals = set(re.findall(r"(?<![\d.])\d+\.\d+(?![\d.])", markdown))
    assert decimals <= {n.literal for n in fixtures.NUMBERS}, decimals - {n.literal for n in fixtures.NUMBERS}


def test_points_and_cells_follow_the_conventions():
    for meta, cell in _cells():
        if meta.get("grade"):
            assert meta["points"] in (1, 2), meta
        if meta.get("grade") and cell.cell_type == "code":
            assert meta["locked"] and not meta["solution"] and meta["grade_id"].endswith("_test")
            assert cell.source.startswith('"""Problem 1.')
            assert "### BEGIN HIDDEN TESTS" in cell.source
    worked = [c.source.splitlines()[0] for _, c in _cells() if "worked-solution" in c.metadata.get("tags", [])]
    assert worked == ["**Solution 1.1**", "**Solution 1.2**"]
