"""The hidden-test regions of a test cell (autograders/common/regions.py), the one parser the
autograde, the feedback, the re-check and the graded edition share. The expected lines are
written out by hand for each case."""

import pytest

from autograders.common import regions
from autograders.common.regions import Region

CELL = "\n".join([
    '"""Problem 2.2."""',
    "_checks.q(x)",
    "### BEGIN HIDDEN TESTS",
    "_checks.q(x, hidden=True)",
    "### END HIDDEN TESTS",
    "print('after')",
])


def test_one_region_its_lines_and_its_replacement():
    assert regions.regions(CELL) == [Region(2, 4, "")]
    assert regions.hidden_line_numbers(CELL) == {3, 4, 5}
    assert regions.hidden_lines(CELL) == ["### BEGIN HIDDEN TESTS", "_checks.q(x, hidden=True)", "### END HIDDEN TESTS"]
    assert regions.replace_hidden(CELL, "# hidden") == '"""Problem 2.2."""\n_checks.q(x)\n# hidden\nprint(\'after\')'
    assert regions.first_hidden_line(CELL) == 2


def test_no_region():
    source = "_checks.q(x)\nprint(1)\n"
    assert regions.regions(source) == [] and regions.hidden_line_numbers(source) == set()
    assert regions.replace_hidden(source, "# hidden") == source and regions.first_hidden_line(source) is None


def test_two_regions_keep_what_lies_between():
    source = "a\n### BEGIN HIDDEN TESTS\nb\n### END HIDDEN TESTS\nc\n### BEGIN HIDDEN TESTS\nd\n### END HIDDEN TESTS\n"
    assert [(r.begin, r.end) for r in regions.regions(source)] == [(1, 3), (5, 7)]
    assert regions.replace_hidden(source, "# h") == "a\n# h\nc\n# h\n"
    assert regions.hidden_line_numbers(source) == {2, 3, 4, 6, 7, 8}


def test_an_unterminated_region_runs_to_the_end():
    source = "a\n### BEGIN HIDDEN TESTS\nsecret()\nmore()"
    assert regions.regions(source) == [Region(1, None, "")]
    assert regions.hidden_lines(source) == ["### BEGIN HIDDEN TESTS", "secret()", "more()"]
    assert regions.replace_hidden(source, "# h") == "a\n# h"
    assert regions.hidden_line_numbers(source) == {2, 3, 4}


def test_a_nested_begin_does_not_end_the_region_early():
    source = "### BEGIN HIDDEN TESTS\nx()\n### BEGIN HIDDEN TESTS\ny()\n### END HIDDEN TESTS\nz()\n### END HIDDEN TESTS\nw()"
    assert [(r.begin, r.end) for r in regions.regions(source)] == [(0, 4)]
    # the stray END after it hides no code of its own: its marker goes, z() and w() stay
    assert regions.replace_hidden(source, "# h") == "# h\nz()\nw()"


def test_a_missing_begin_hides_nothing():
    source = "x()\n### END HIDDEN TESTS\ny()"
    assert regions.regions(source) == [] and regions.hidden_line_numbers(source) == set()
    assert regions.replace_hidden(source, "# h") == "x()\ny()"


def test_crlf_and_lone_cr_line_endings_number_lines_as_python_does():
    for newline in ("\r\n", "\r"):
        source = newline.join(["a = 1", "### BEGIN HIDDEN TESTS", "raise ValueError('h')", "### END HIDDEN TESTS", "b = 2"])
        assert regions.hidden_line_numbers(source) == {2, 3, 4}
        assert regions.hidden_lines(source) == ["### BEGIN HIDDEN TESTS", "raise ValueError('h')", "### END HIDDEN TESTS"]
        assert regions.replace_hidden(source, "# h") == newline.join(["a = 1", "# h", "b = 2"])
        try:
            exec(compile(source, "<cell>", "exec"), {})  # noqa: S102
        except ValueError as error:
            tb = error.__traceback__
            while tb.tb_next:
                tb = tb.tb_next
            assert tb.tb_lineno == 3  # the compiler's numbering is the parser's
        else:
            pytest.fail("the hidden line did not run")


def test_indentation_is_kept_for_the_placeholder():
    source = "for v in values:\n    ### BEGIN HIDDEN TESTS\n    check(v)\n    ### END HIDDEN TESTS\n    print(v)"
    assert regions.regions(source) == [Region(1, 3, "    ")]
    replaced = regions.replace_hidden(source, "pass  # h")
    assert replaced == "for v in values:\n    pass  # h\n    print(v)"
    compile(replaced, "<cell>", "exec")  # still valid Python


def test_markers_and_code_on_one_line():
    source = "x()  ### BEGIN HIDDEN TESTS ... ### END HIDDEN TESTS\ny()"
    assert regions.regions(source) == [Region(0, 0, "")]
    assert regions.replace_hidden(source, "# h") == "# h\ny()"


def test_every_user_calls_this_parser():
    """The feedback, the checks and the graded edition give what the parser gives."""
    from autograders.editions import editions
    from autograders.grading import checker, feedback_html

    source = "a\r\n    ### BEGIN HIDDEN TESTS\r\n    s()\r\n    ### END HIDDEN TESTS\r\n"
    assert feedback_html.strip_hidden(source) == "a\r\n    " + feedback_html.PLACEHOLDER + "\r\n"
    assert feedback_html.hidden_lines is regions.hidden_lines and checker.hidden_line_numbers is regions.hidden_line_numbers
    assert editions.first_hidden_line is regions.first_hidden_line
