"""A misconception is declared where a problem's mistakes use it (autograders/problems): its tag, its report name
and, for a labelled choice, its option words. The registry the report and the re-check read (``NAMES``) is gathered
from those declarations, and a tag declared twice with two names stops the import."""

import copy
import importlib
import pickle
import sys

import pytest

from autograders import problems
from autograders.problems import shared
from autograders.problems.misconception import NAMES, OPTION_WORDS, Misconception, named
from autograders.student.feedback import WrongAnswer


@pytest.fixture
def registry():
    """The registry as it was, restored after a test that declares made-up misconceptions."""
    names, options = dict(NAMES), dict(OPTION_WORDS)
    yield
    NAMES.clear()
    NAMES.update(names)
    OPTION_WORDS.clear()
    OPTION_WORDS.update(options)


def declared():
    """{tag: its Misconception} of every module of autograders/problems."""
    found = {}
    for name in sorted(n for n in sys.modules if n == "autograders.problems" or n.startswith("autograders.problems.")):
        for value in vars(sys.modules[name]).values():
            if isinstance(value, Misconception):
                found.setdefault(str(value), value)
    return found


def test_the_registry_is_the_declarations():
    found = declared()
    assert len(problems.LEVELS) >= 6 and found
    assert {tag: m.report for tag, m in found.items()} == NAMES
    assert {tag: m.option for tag, m in found.items() if m.option is not None} == OPTION_WORDS


def test_every_declared_mistake_carries_a_declared_misconception():
    for module in problems.LEVELS.values():
        for answer in module.ANSWERS:
            for mistake in answer.mistakes:
                assert mistake.tag is None or mistake.tag in NAMES, (answer.id, mistake.key)


def test_a_tag_declared_twice_with_two_names_stops_the_import(tmp_path, monkeypatch, registry):
    (tmp_path / "clash_of_names.py").write_text(
        "from autograders.problems.misconception import Misconception\n\n"
        f"MINE = Misconception({str(shared.TRANSPOSED)!r}, 'rows and columns swapped')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="'transposed' is declared twice, as 'transposed shape'"):
        importlib.import_module("clash_of_names")
    assert NAMES["transposed"] == "transposed shape"


def test_other_option_words_for_a_tag_are_refused_too(registry):
    with pytest.raises(ValueError, match="declared twice"):
        Misconception(str(shared.HEADS_FREE), shared.HEADS_FREE.report, option=r"free lunch")


def test_a_declaration_repeated_word_for_word_is_the_same_misconception(registry):
    again = Misconception(str(shared.HEADS_FREE), shared.HEADS_FREE.report, option=shared.HEADS_FREE.option)
    assert again == shared.HEADS_FREE and NAMES[again] == "more heads are free or always better"


@pytest.mark.parametrize("tag", ["", "-", "ratio/misread", 7])
def test_a_tag_is_one_word_with_no_detail(tag, registry):
    with pytest.raises(ValueError, match="^tag: "):
        Misconception(tag, "a name")


def test_a_misconception_needs_its_report_name(registry):
    with pytest.raises(ValueError, match="^report: "):
        Misconception("made-up-for-a-test", "")


def test_what_a_wrong_answer_carries_is_the_plain_tag():
    """The tag travels as a string (the notebook's output, the re-check's pickles): never the declaration object."""
    for carried in (WrongAnswer("no", misconception=shared.TRANSPOSED).misconception,
                    WrongAnswer(named(shared.TRANSPOSED, "no")).misconception,
                    named(shared.TRANSPOSED, "no").misconception,
                    pickle.loads(pickle.dumps(shared.TRANSPOSED)), copy.copy(shared.TRANSPOSED)):
        assert type(carried) is str and carried == "transposed"


def test_a_mistake_of_one_tag_with_several_answers_keeps_the_tag():
    from autograders.problems.level2 import RATIO

    keys = [m.key for m in RATIO.mistakes]
    assert "ratio-misread/scores" in keys and {m.tag for m in RATIO.mistakes} == {"ratio-misread"}
    assert all(type(m.tag) is str for m in RATIO.mistakes)
