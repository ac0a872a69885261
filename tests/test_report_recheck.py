"""A test that failed without a visible error (in its hidden tests, or not confirmed) is counted by what
the checks said: the check's misconception tag (a known one) or "not confirmed by the re-check", from the
grader's record in the cell's metadata, never from text a student's cell printed or metadata a
submission brought along."""

import html

import nbformat
import pytest

from autograders.checks import level1
from autograders.checks.feedback import WrongAnswer
from autograders.problems.misconception import NAMES
from autograders import report
from autograders.grading import checker
from autograders.grading import standalone
from tests.test_recheck import LEVEL1, TESTS, FakeGrade, graded_copy

LEVEL = "level1_recognition"
FAKE_LINES = ("Re-checked: scored 0 of 1. the re-check could not confirm this test, so it scores 0: forged\n"
              "[misconception: transposed]\n")
FORGED_RECORD = {"score": 0.0, "max_score": 1.0, "confirmed": True, "misconception": "forgot-w-o"}


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _stream(text, name="stdout"):
    return nbformat.v4.new_output("stream", name=name, text=text)


def _error(evalue):
    return nbformat.v4.new_output("error", ename="WrongAnswer", evalue=evalue, traceback=["shown"])


def _results_of(path, grades):
    """The report's reading of one autograded notebook with the gradebook's ``grades``."""
    results = report.Results(cells={LEVEL: list(TESTS)})
    scores = {g.name: (g.auto_score, g.max_score, g.cell_type) for g in grades}
    report.add_failed_tests(results, "student", LEVEL, nbformat.read(str(path), as_version=4), scores)
    return results


# Each test cell: what the checks say, and the category the report must count it under.
SCENARIO = {
    "q1_1_head_dim_test": (checker.Checked(0.0, 2.0, "wrong", misconception="multiplied-by-h", hidden=True),
                           NAMES["multiplied-by-h"]),
    "q1_1_d_k_test": (checker.Checked(0.0, 1.0, f"{checker.NOT_CONFIRMED}: timed out", confirmed=False), report.UNCONFIRMED),
    "q1_2_output_shape_test": (checker.Checked(0.0, 1.0, "wrong", error={"ename": "WrongAnswer", "evalue": "wrong",
                                                                    "traceback": ["shown"]}), report.OTHER),
    "q1_2_why_test": (checker.Checked(0.0, 1.0, "wrong", misconception=None, hidden=True), report.OTHER),
}
GRADES = [FakeGrade(gid, 0.0, TESTS[gid]) for gid in SCENARIO]


def _write(path, given):
    """The checks' verdicts ``given`` written into the autograded notebook at ``path``, as the grading does."""
    nb = nbformat.read(str(path), as_version=4)
    checker.write_outputs(nb, given)
    nbformat.write(nb, str(path))


def test_a_failed_test_counts_the_checks_tag_or_unconfirmed_and_fakes_change_nothing(tmp_path, monkeypatch):
    path = graded_copy(tmp_path, "autograded", {})
    nb = nbformat.read(str(path), as_version=4)
    # The student's forgeries: the grader's line and a tag printed by an answer cell and left in a test
    # cell's outputs, and the grader's record written into the submission.
    _cell(nb, "q1_1_head_dim").outputs = [_stream(FAKE_LINES)]
    _cell(nb, "q1_2_output_shape_test").outputs = [_stream(FAKE_LINES), _stream("warning\n", "stderr")]
    for gid in ("q1_2_output_shape_test", "q1_1_d_k", "q1_1_head_dim_test"):
        _cell(nb, gid).metadata[checker.RECHECKED] = dict(FORGED_RECORD)
    nbformat.write(nb, str(path))

    _write(path, {gid: verdict for gid, (verdict, _) in SCENARIO.items()})
    counts, where = _results_of(path, GRADES).misconception_counts()
    expected = {}
    for gid, (_, category) in SCENARIO.items():
        expected[category] = expected.get(category, 0) + 1
    assert counts == expected
    assert where[report.UNCONFIRMED] == {report.problem_label("q1_1_d_k_test"): 1}

    # Only the grader's records stay, on the tests that failed without a visible error.
    graded = nbformat.read(str(path), as_version=4)
    kept = {c.metadata["nbgrader"]["grade_id"]: c.metadata[checker.RECHECKED] for c in graded.cells
            if checker.RECHECKED in c.metadata}
    assert set(kept) == {"q1_1_head_dim_test", "q1_1_d_k_test", "q1_2_why_test"}
    assert kept["q1_1_head_dim_test"]["misconception"] == "multiplied-by-h"
    assert kept["q1_1_d_k_test"]["confirmed"] is False and kept["q1_2_why_test"]["misconception"] is None
    assert [r.grade_id for r in checker.unconfirmed(graded)] == ["q1_1_d_k_test"]


def test_a_report_of_the_same_cells_without_the_printed_lines_counts_the_same(tmp_path, monkeypatch):
    """The printed forgeries change nothing: the counts equal those of a notebook without them."""
    counts = []
    for name, forged in (("plain", False), ("forged", True)):
        path = graded_copy(tmp_path, name, {})
        if forged:
            nb = nbformat.read(str(path), as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = [_stream(FAKE_LINES)]
            nbformat.write(nb, str(path))
        _write(path, {gid: verdict for gid, (verdict, _) in SCENARIO.items()})
        counts.append(_results_of(path, GRADES).misconception_counts()[0])
    assert counts[0] == counts[1] and sum(counts[0].values()) == len(SCENARIO)


@pytest.mark.parametrize("given", [
    {},  # no verdict for any test
    {gid: checker.Checked(0.0, p, "?", misconception="transposed", confirmed=False) for gid, p in TESTS.items()},
])
def test_a_test_the_checks_could_not_confirm_is_its_own_category(tmp_path, given):
    path = graded_copy(tmp_path, "autograded", {})
    _write(path, given)
    grades = [FakeGrade(gid, 0.0, points) for gid, points in TESTS.items()]
    counts, _ = _results_of(path, grades).misconception_counts()
    assert counts == {report.UNCONFIRMED: len(TESTS)}


def test_a_forged_record_is_taken_off_when_every_test_passes(tmp_path):
    path = graded_copy(tmp_path, "autograded", {})
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        cell.metadata[checker.RECHECKED] = dict(FORGED_RECORD)
    nbformat.write(nb, str(path))
    _write(path, {gid: checker.Checked(p, p) for gid, p in TESTS.items()})
    graded = nbformat.read(str(path), as_version=4)
    assert checker.unconfirmed(graded) == [] and not any(checker.RECHECKED in c.metadata for c in graded.cells)


# --- the report's reading of one failed cell ----------------------------------------------------


def _failed_cell(outputs=(), record=None):
    cell = nbformat.v4.new_code_cell("check.q1_1_d_k(d_k)")
    cell.outputs = list(outputs)
    if record is not None:
        cell.metadata[checker.RECHECKED] = record
    return cell


@pytest.mark.parametrize("record", [
    {"confirmed": True, "misconception": "no-such-tag"},
    {"confirmed": True, "misconception": "Transposed"},
    {"confirmed": True, "misconception": "<script>"},
    {"confirmed": True, "misconception": ["transposed"]},
    {"confirmed": True, "misconception": "[misconception: transposed]"},
    {"confirmed": "false", "misconception": "transposed"},  # not a bool: not the grader's
    {"confirmed": 0},
    {"misconception": "transposed"},
    "transposed",
    ["transposed"],
    None,
])
def test_a_malformed_record_or_an_unknown_tag_is_other(record):
    assert report.verdict_of_cell(_failed_cell([_stream(FAKE_LINES)], record)) == (None, False)


def test_a_record_gives_the_tag_or_unconfirmed():
    assert report.verdict_of_cell(_failed_cell(record={"confirmed": True, "misconception": "transposed"})) == (
        "transposed", False)
    assert report.verdict_of_cell(_failed_cell(record={"confirmed": False, "misconception": "transposed"})) == (
        None, True)


def test_a_cell_nbgrader_failed_keeps_its_errors_tag_whatever_its_metadata_says():
    """A test the re-check lowered is one nbgrader passed (no error output): a record on a cell with
    an error output is not the grader's, and the error output's tag decides."""
    tagged = _error("[misconception: forgot-w-o]\nmessage")
    assert report.verdict_of_cell(_failed_cell([tagged], {"confirmed": False})) == ("forgot-w-o", False)
    forged = {"confirmed": True, "misconception": "transposed"}
    assert report.verdict_of_cell(_failed_cell([_error("message")], forged)) == (None, False)


def test_the_page_shows_the_new_category(tmp_path):
    results = report.Results(cells={LEVEL: ["q1_1_d_k_test", "q1_1_head_dim_test"]})
    for i in range(3):
        key = (f"s{i}", LEVEL, "q1_1_d_k_test")
        results.messages[key], results.tags[key] = "m", "transposed"  # a tag does not outrank unconfirmed
        results.unconfirmed.add(key)
    results.messages[("s9", LEVEL, "q1_1_head_dim_test")], results.tags[("s9", LEVEL, "q1_1_head_dim_test")] = "m", None
    page = report.write_report(results, tmp_path / "report.html").read_text()
    row = f"<tr><td>{html.escape(report.UNCONFIRMED)}</td><td class=n>3</td>"
    assert row in page and f"<tr><td>{html.escape(report.OTHER)}</td><td class=n>1</td>" in page
    assert html.escape(NAMES["transposed"]) not in page.split("<table><tr><th>misconception")[1]


# --- the real re-check: its verdict carries the check's own tag ---------------------------------


def test_the_rechecks_verdict_carries_the_checks_tag_or_says_unconfirmed(tmp_path, kernels):
    with pytest.raises(WrongAnswer) as raised:  # the check's own verdict on the same wrong function
        level1.q1_1_head_dim(lambda d_model, h: d_model * h)
    assert raised.value.misconception in NAMES
    answers = {
        "q1_1_head_dim": "import numpy\nnumpy.allclose = lambda *a, **k: True\n"
                         "def head_dim(d_model, h):\n    return d_model * h",
        "q1_1_d_k": "for _ in range(100_000):\n    print('x' * 1000)\nd_k = 64",  # stopped at the output limit: no d_k
    }
    results = standalone.recheck(LEVEL1, graded_copy(tmp_path, "graded", answers), timeout=20)
    head_dim, d_k = results["q1_1_head_dim_test"], results["q1_1_d_k_test"]
    assert (head_dim.score, head_dim.confirmed, head_dim.misconception) == (0.0, True, raised.value.misconception)
    assert (d_k.score, d_k.confirmed, d_k.misconception) == (0.0, False, None)
    assert tuple(results["q1_2_why_test"]) == (1.0, 1.0, None) and results["q1_2_why_test"].misconception is None
