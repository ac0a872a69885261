"""A misconception is data: checks raise WrongAnswer with a tag, the error output carries it,
the report counts tags (never phrases of the message) and treats them as hostile input."""

import importlib
import pickle

import pytest

from autograders.checks import feedback
from autograders.checks.feedback import WrongAnswer, error_value, named
from autograders.problems.misconception import NAMES
from autograders import report
from tests.conftest import level_notebooks, mistakes_for

# Which misconception each hand-written fixture mistake's ``says`` names: a phrase of it -> the name the
# report shows (the first row that matches wins): the test's independent reading of the fixtures. A
# mistake derived from a declaration (tests/fixtures, declared_mistakes) carries its declared tag.
SAYS = [
    ('no answer yet', ('no answer yet', 'not written yet')),
    ('answer of the wrong kind (type or shape)', (
        'should be a single number', 'should be a shape', 'should be one of', 'should be a function', 'should be an array', 'should be a whole number')),
    ('multiplied by h instead of dividing', ('multiplied instead of divided',)),
    ('split h by d_model (roles swapped)', ('swapped roles',)),
    ('a head keeps the full width d_model', ('full width of a token',)),
    ('transposed shape', ('instead of the keys',)),
    ('one head confused with all heads', ('one head only',)),
    ('heads summed or stacked instead of concatenated', ('concatenated, not summed',)),
    ('scaled by d_k instead of √d_k', ('instead of √d_k',)),
    ('no scaling by √d_k', ('no scaling',)),
    ('softmax as a linear normalisation', ('linear normalisation',)),
    ('softmax not normalised', ('forgot to normalise',)),
    ('softmax that overflows', ('overflows',)),
    ('softmax with flipped signs', ('signs are flipped',)),
    ('weights as percentages', ('percentages',)),
    ('token numbers counted from 0', ('python index',)),
    ('softmax reorders the scores', ('softmax keeps the order',)),
    ('ratio of weights misread', ('a difference of weights', 'upside down', 'compares the winner with token 2')),
    ('causal mask applied wrongly', ('causal mask applied wrongly', 'causal mask wrongly')),
    ('forgot the softmax', ('forgot the softmax',)),
    ('weighted sum of the keys, not the values', ('weighted sum of the keys',)),
    ('forgot W^O', ('forgot w^o',)),
    ('counted biases', ('you counted biases',)),
    ("a formula of the example's numbers only", ('not numbers from the example', 'returned 64')),
    ('more heads cost more', ('h heads cost h times more', 'parameters grow with h')),
    ('the weights never matter', ('the weights never matter', 'only holds when every value is the same')),
    ('shared projections give different heads', (
        'shared projections still give different heads', 'distinct numbers, not distinct heads')),
    ('heads split without the transpose (tokens and heads mixed)', ('tokens and heads mixed',)),
    ('a sum or maximum without keepdims (broadcast over the wrong axis)', ('one axis fewer than',)),
    ('.T on a 3-D array (every axis reversed, not the last two)', ('reverses every axis',)),
    ('softmax over the wrong axis', ('softmax over the wrong axis',)),
    ('causal mask the wrong way round or after the softmax', ('wrong way round', 'applied after the softmax')),
    ("X @ W.T instead of X @ W (the transpose of the sheet's convention)", (
        'rows instead of columns', 'x @ w.t instead of x @ w')),
    ('a leading batch dimension not handled', ('batch dimension',)),
    ('the library called instead of written with numpy', ('with numpy: this is the point', 'calls mha_core')),
    ("a shape error inside the student's function", ('raised valueerror: ',)),
    ('a previous-token head that attends to the token itself', ('token itself (the diagonal)',)),
    ('a previous-token head that attends to the first token', ('largest weight on the first token',)),
    ('a head whose queries match keys the causal mask hides (the shift the wrong way)', ('a key the causal mask hides',)),
    ('the right pattern, too flat (scores not scaled up)', ('scale the scores up', 'scale the query up')),
    ('a pattern of positions built from the words', ('your scores depend on the words',)),
    ('a query built from the values, not the keys', ('matched against the keys, not the values',)),
    ('a query that picks one key instead of two', ('almost all the weight is on one key',)),
    ("the scores' rank taken as n (the d_k bottleneck forgotten)", ('that is n: q_i k_i^t is n × n',)),
    ("the scores' rank taken as d_k even when n is smaller", ('rank at most n too',)),
    ('equivariance tested without permuting the output', ('must be permuted too',)),
    ('the output permuted with the inverse permutation', ('inverse permutation',)),
    ('floats compared exactly instead of within a tolerance', ('compares floats exactly',)),
    ('a causal mask taken to keep permutation equivariance', ('says true for a causal self-attention',)),
    ('permuting the tokens taken to mix them', ('permuting the tokens mixes them',)),
    ('positions taken to make the heads differ', ('confuses positions with projections',)),
    ('positions taken to lift the rank bottleneck', ('confuses positions with the rank bottleneck',)),
    ('the previous-token and induction heads swapped', (
        'that is the induction head', 'that is the previous-token head')),
    ("a learned head's pattern misread", (
        'do not look one position back', 'sits in a later layer', 'does not look at the token after')),
    ('token numbers counted from 0', ('counted from 1 here',)),
]
TAG_OF_NAME = {name: tag for tag, name in NAMES.items()}


def expected_tag(says):
    text = says.lower()
    name = next((name for name, phrases in SAYS if any(p.lower() in text for p in phrases)), None)
    return TAG_OF_NAME.get(name)


CASES = [pytest.param(path, mistake, id=f"{path.stem}-{index:02d}-{mistake.cell}")
         for path in level_notebooks() for index, mistake in enumerate(mistakes_for(path)) if mistake.tag != ""]


def test_every_fixture_mistake_says_a_known_misconception():
    unnamed = sorted({m.says for n in range(1, 6) for m in importlib.import_module(f"tests.fixtures.level{n}").MISTAKES
                      if m.tag is None and expected_tag(m.says) is None})  # a declared mistake: its own tag
    assert not unnamed, f"no misconception for these fixtures' `says`: {unnamed}"


@pytest.mark.parametrize("path, mistake", CASES)
def test_every_fixture_mistake_carries_the_tag_the_report_expects(path, mistake, graded_cells):
    raised = {gid: wrong for gid, wrong in graded_cells(path, (mistake.cell, mistake.code)).items() if wrong is not None}
    tags = {gid: raised[gid].misconception for gid in mistake.fails if gid in raised}
    expected = mistake.tag or expected_tag(mistake.says)  # a declared mistake carries its tag
    assert expected in tags.values(), f"{mistake.says!r}: expected tag {expected!r}, the failed tests carry {tags}"
    name = report.misconception_name(expected)
    assert name == NAMES[expected]
    # ... through the error output the notebook records (its value, never shown to the student)
    gid = next(g for g, t in tags.items() if t == expected)
    output = {"output_type": "error", "ename": "WrongAnswer", "evalue": error_value(raised[gid]),
              "traceback": [feedback.shown(raised[gid])]}
    assert report.tag_of_outputs([output]) == expected
    assert "[misconception:" not in "".join(output["traceback"])


# --- WrongAnswer and its tag ------------------------------------------------------------------


def test_the_form_helpers_tag_no_answer_and_the_wrong_kind():
    def tag(fn, *args):
        with pytest.raises(WrongAnswer) as caught:
            fn(*args)
        return caught.value.misconception

    assert tag(feedback.as_number, "x", None) == "no-answer"
    assert tag(feedback.as_number, "x", "3") == "wrong-kind"
    assert tag(feedback.as_shape, "s", (1.5, 2)) == "wrong-kind"
    assert tag(feedback.as_choice, "c", "Z", ["A", "B"]) == "wrong-kind"
    assert tag(feedback.call, "f", lambda: 1 / 0) == "raised"

    def blank():
        raise NotImplementedError()

    assert tag(feedback.call, "f", blank) == "no-answer"
    assert WrongAnswer("plain").misconception is None


def test_a_tag_is_known_or_refused_where_it_is_raised():
    assert WrongAnswer("m", misconception="transposed").misconception == "transposed"
    assert WrongAnswer(named("transposed", "That is transposed.")).misconception == "transposed"
    with pytest.raises(ValueError, match="misconception"):
        WrongAnswer("m", misconception="transposd")
    with pytest.raises(ValueError, match="tag"):
        named("no-such-tag", "text")


def test_the_tag_survives_pickle_and_is_the_first_line_of_the_error_value():
    wrong = pickle.loads(pickle.dumps(WrongAnswer("That is transposed.", misconception="transposed")))
    assert wrong.misconception == "transposed" and str(wrong) == "That is transposed."
    assert error_value(wrong).split("\n") == ["[misconception: transposed]", "That is transposed."]
    assert error_value(WrongAnswer("no tag")) == "no tag"


def test_two_flops_is_a_misconception_of_its_own():
    from autograders.checks import level3

    with pytest.raises(WrongAnswer) as caught:
        level3.q3_1_attention_cost(lambda d, h, n: 2 * 2 * n * n * d)
    assert caught.value.misconception == "two-flops"
    assert "2 FLOPs" in report.misconception_name("two-flops")


def test_short_tracebacks_writes_the_tag_into_the_error_value_and_shows_the_message_alone():
    shell_mod = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_mod.InteractiveShell.instance()
    shown = []
    shell._showtraceback = lambda etype, evalue, stb: shown.append((etype.__name__, str(evalue), stb))
    import builtins

    builtins.get_ipython = lambda: shell
    try:
        feedback.short_tracebacks()
        shell.run_cell("from autograders.checks.feedback import WrongAnswer\n"
                       "raise WrongAnswer('That is transposed.', misconception='transposed')")
    finally:
        del builtins.get_ipython
        shell.set_custom_exc((), None)
    (ename, evalue, stb), = shown
    assert ename == "WrongAnswer" and evalue.split("\n")[0] == "[misconception: transposed]"
    assert not any("misconception" in line for line in stb) and "That is transposed." in "".join(stb)


# --- the report: tags counted, hostile tags are "other" --------------------------------------------


def _error(evalue, ename="WrongAnswer"):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": ["shown"]}


@pytest.mark.parametrize("outputs", [
    [_error("[misconception: no-such-tag]\nmessage")],  # unknown
    [_error("[misconception: Transposed]\nmessage")],  # not the exact tag
    [_error("message\n[misconception: transposed]")],  # not the first line
    [_error(" [misconception: transposed]")],  # not exactly the line
    [_error("[misconception: transposed] and more")],
    [_error("[misconception: " + "a" * 5000 + "]")],
    [{"output_type": "stream", "name": "stdout", "text": "[misconception: transposed]\n"}],  # printed
    [_error(["[misconception: transposed]"])],  # not a string
    [_error(None)],
    [],
    None,
    ["not an output"],
])
def test_a_tag_the_report_does_not_know_is_other(outputs):
    assert report.tag_of_outputs(outputs) is None


def test_the_last_error_output_is_the_one_read():
    outputs = [_error("[misconception: transposed]\nfirst"), _error("[misconception: forgot-w-o]\nlast")]
    assert report.tag_of_outputs(outputs) == "forgot-w-o"


def test_misconception_counts_count_tags_and_show_their_names():
    results = report.Results()
    tags = ["transposed", "transposed", "two-flops", None, "<script>"]
    for i, tag in enumerate(tags):
        key = (f"s{i}", "level1_recognition", "q1_1_head_dim_test")
        results.messages[key] = "a message that says 'transposed' and 'forgot W^O' in words"
        results.tags[key] = tag
    counts, where = results.misconception_counts()
    assert counts == {NAMES["transposed"]: 2, NAMES["two-flops"]: 1, report.OTHER: 2}
    assert where[NAMES["transposed"]] == {"1.1 head_dim": 2}
    assert report.misconception_name("<script>") is None and report.misconception_name(None) is None
