"""A function answer must be the student's own numpy: one that calls mha_core or autograders
earns nothing, however it reaches them (autograders.checks.own_work)."""

import functools
import shutil
import sys
import threading

import nbformat
import numpy as np
import pytest

import mha_core as mha
from autograders.grading import standalone
from autograders.checks import level2, level3, level4, own_work
from autograders.checks.feedback import WrongAnswer
from autograders.student import protocol
from tests.conftest import NOTEBOOKS, filled

SAYS = "Write it with numpy: this is the point of the problem"
SCORES = np.array([4.0, 2.0, 5.0])


def numpy_softmax(scores):
    e = np.exp(scores - scores.max())
    return e / e.sum()


def notebook(source):
    """The namespace of a notebook whose setup imports as the workbook's do, after running ``source``."""
    namespace = {}
    exec("import numpy as np\nimport mha_core as mha\nfrom autograders.checks import level2 as check\n" + source,
         namespace)
    return namespace


def refused(func, *args, name="softmax"):
    """own_work.call refuses ``func``; return the message."""
    with pytest.raises(own_work.NotOwnWork) as info:
        own_work.call(name, func, *(args or (SCORES.copy(),)))
    message = str(info.value)
    assert SAYS in message and f"`{name}`" in message, message
    return message


# --- numpy is allowed --------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "def softmax(scores):\n    e = np.exp(scores - scores.max())\n    return e / e.sum()",
        # a local variable may be called mha: it is not the library
        "def softmax(scores):\n    mha = np.exp(scores - np.max(scores))\n    return mha / mha.sum()",
        # the student's own helper, in another cell
        "def _exp(x):\n    return np.exp(x - x.max())\n\ndef softmax(scores):\n    return _exp(scores) / _exp(scores).sum()",
        # an attribute that happens to share a library name
        "import types\nbox = types.SimpleNamespace(softmax=lambda s: np.exp(s) / np.exp(s).sum())\n"
        "def softmax(scores):\n    return box.softmax(scores)",
        "import math\ndef softmax(scores):\n    e = [math.exp(s) for s in scores]\n    return np.array(e) / sum(e)",
    ],
)
def test_numpy_answers_pass_and_return_their_value(source):
    func = notebook(source)["softmax"]
    np.testing.assert_allclose(own_work.call("softmax", func, SCORES.copy()), numpy_softmax(SCORES), rtol=1e-12)


def test_blank_and_wrong_kind_keep_feedbacks_messages():
    for value, says in [(None, "no answer yet"), (3, "should be a function")]:
        with pytest.raises(WrongAnswer, match=says):
            own_work.call("softmax", value, SCORES)

    def blank(scores):
        raise NotImplementedError()

    with pytest.raises(WrongAnswer, match="not written yet"):
        own_work.call("softmax", blank, SCORES)
    with pytest.raises(WrongAnswer, match="raised ZeroDivisionError"):
        own_work.call("softmax", lambda s: 1 / 0, SCORES)


# --- however the library is reached, it is refused ------------------------------------


EVASIONS = {
    "the library's function itself": ("softmax = mha.softmax", "is mha_core.attention.softmax"),
    "through the setup's mha": ("def softmax(scores):\n    return mha.softmax(scores)", "refers to mha_core"),
    "from-import alias": ("from mha_core import softmax as s\ndef softmax(scores):\n    return s(scores)",
                          "refers to mha_core.attention.softmax (as `s`)"),
    "module alias": ("import mha_core as m\ndef softmax(scores):\n    return m.attention.softmax(scores)",
                     "refers to mha_core (as `m`)"),
    "submodule": ("from mha_core import attention\ndef softmax(scores):\n    return attention.softmax(scores)",
                  "refers to mha_core.attention"),
    "import inside": ("def softmax(scores):\n    import mha_core\n    return mha_core.softmax(scores)", "imports mha_core"),
    "from-import inside": ("def softmax(scores):\n    from mha_core.attention import softmax as s\n    return s(scores)",
                           "imports mha_core.attention"),
    "getattr with strings": (
        "import importlib\ndef softmax(scores):\n"
        "    return getattr(importlib.import_module('mha_' + 'core'), 'soft' + 'max')(scores)",
        "calls mha_core.attention.softmax"),
    "__import__ with a string": ("def softmax(scores):\n    return __import__('mha_core').softmax(scores)",
                                 "calls mha_core.attention.softmax"),
    "sys.modules": ("import sys\ndef softmax(scores):\n    return sys.modules['mha_' + 'core'].softmax(scores)",
                    "calls mha_core.attention.softmax"),
    "exec of a string": ("def softmax(scores):\n    ns = {'s': scores}\n"
                         "    exec('import mha_core; out = mha_core.softmax(s)', ns)\n    return ns['out']",
                         "calls mha_core.attention.softmax"),
    "partial": ("import functools\nsoftmax = functools.partial(mha.softmax, axis=-1)", "is mha_core.attention.softmax"),
    "default argument": ("def softmax(scores, f=mha.softmax):\n    return f(scores)", "refers to mha_core.attention.softmax"),
    "closure": ("def make(f):\n    def softmax(scores):\n        return f(scores)\n    return softmax\n"
                "softmax = make(mha.softmax)", "refers to mha_core.attention.softmax"),
    "the student's helper": ("def helper(x):\n    return mha.softmax(x)\ndef softmax(scores):\n    return helper(scores)",
                             "refers to mha_core"),
    "a callable object": ("class Soft:\n    def __call__(self, scores):\n        return mha.softmax(scores)\nsoftmax = Soft()",
                          "refers to mha_core"),
    "the check module's code": ("def softmax(scores):\n    return check.mha.softmax(scores)",
                                "refers to autograders.checks.level2 (as `check`)"),
    "a thread": ("import threading, sys\ndef softmax(scores):\n    out = []\n"
                 "    t = threading.Thread(target=lambda: out.append(sys.modules['mha_core'].softmax(scores)))\n"
                 "    t.start()\n    t.join()\n    return out[0]", "calls mha_core.attention.softmax"),
    "the watch switched off": ("import sys\ndef softmax(scores):\n    sys.setprofile(None)\n"
                               "    e = np.exp(scores)\n    return e / e.sum()", "switches off the check's watch"),
    "the library crashing": ("import sys\ndef softmax(scores):\n    return sys.modules['mha_core'].softmax(scores, axis=5)",
                             "calls mha_core.attention.softmax"),
}


@pytest.mark.parametrize("source, says", EVASIONS.values(), ids=EVASIONS.keys())
def test_every_route_to_the_library_is_refused_and_named(source, says):
    message = refused(notebook(source)["softmax"])
    assert says in message, message


def test_a_block_instance_and_its_class_are_refused():
    block = mha.MultiHeadAttention.from_seed(8, 2)
    X = np.random.default_rng(0).standard_normal((5, 8))
    assert "refers to mha_core.layer.MultiHeadAttention" in refused(
        lambda X, *rest: block(X)[0], X, name="multi_head_attention")
    ns = notebook("def f(X, W_Q, W_K, W_V, W_O, h, causal=False):\n"
                  "    return mha.layer.MultiHeadAttention(W_Q, W_K, W_V, W_O, h)(X, causal=causal)[0]")
    refused(ns["f"], X, block.W_Q, block.W_K, block.W_V, block.W_O, 2, False, name="multi_head_attention")


def test_hooks_are_restored_after_a_pass_a_refusal_and_a_crash():
    def mine(frame, event, arg):
        return None

    previous = (sys.getprofile(), threading.getprofile())
    sys.setprofile(mine)
    threading.setprofile(mine)
    try:
        own_work.call("softmax", numpy_softmax, SCORES)
        assert sys.getprofile() is mine and threading.getprofile() is mine
        with pytest.raises(own_work.NotOwnWork):
            own_work.call("softmax", notebook("import sys\ndef softmax(s):\n    return sys.modules['mha_core'].softmax(s)")
                          ["softmax"], SCORES)
        assert sys.getprofile() is mine and threading.getprofile() is mine
        with pytest.raises(WrongAnswer, match="raised ValueError"):
            own_work.call("softmax", lambda s: np.zeros(2) + np.zeros(3), SCORES)
        assert sys.getprofile() is mine and threading.getprofile() is mine
    finally:
        sys.setprofile(previous[0])
        threading.setprofile(previous[1])


def test_the_library_itself_is_untouched_while_the_answer_runs():
    """Nothing is replaced (only running library code is noted): looking at it is not calling it."""
    seen = {}

    def student(scores):
        library = sys.modules["mha_core"]
        seen["softmax"] = library.softmax is library.attention.softmax and library.softmax.__module__ == "mha_core.attention"
        e = np.exp(scores)
        return e / e.sum()

    own_work.call("softmax", student, SCORES)
    assert seen == {"softmax": True}


# --- the pieces --------------------------------------------------------------------------


def test_the_refusal_is_tagged_and_survives_pickling():
    import pickle

    with pytest.raises(own_work.NotOwnWork) as info:
        own_work.call("softmax", mha.softmax, SCORES)
    copy = pickle.loads(pickle.dumps(info.value))
    assert isinstance(copy, WrongAnswer) and str(copy) == str(info.value)
    assert copy.uses == info.value.uses == "is mha_core.attention.softmax"
    assert copy.misconception == info.value.misconception == "not-own-work"  # the report's tag


def test_library_name():
    assert own_work.library_name(mha) == "mha_core"
    assert own_work.library_name(mha.softmax) == "mha_core.attention.softmax"
    assert own_work.library_name(mha.MultiHeadAttention) == "mha_core.layer.MultiHeadAttention"
    assert own_work.library_name(mha.MultiHeadAttention.from_seed(4, 2)) == "mha_core.layer.MultiHeadAttention"
    assert own_work.library_name(functools.partial(mha.softmax, axis=0)) == "mha_core.attention.softmax"
    assert own_work.library_name(level4) == "autograders.checks.level4"
    for allowed in (np, np.exp, np.linalg.norm, np.zeros(3), numpy_softmax, len, 3, "mha_core", None):
        assert own_work.library_name(allowed) is None, allowed


def test_module_of_file():
    assert own_work.module_of_file(mha.attention.__file__) == "mha_core.attention"
    assert own_work.module_of_file(mha.__file__) == "mha_core"
    assert own_work.module_of_file(level4.__file__) == "autograders.checks.level4"
    for other in (np.__file__, __file__, "<string>", ""):
        assert own_work.module_of_file(other) is None


# --- the re-check's remote functions ------------------------------------------------------


class _FakeSession:
    """Stands in for the re-check's session: runs ``func`` here, as the student side would."""

    def __init__(self, func):
        self.func = func

    def call(self, handle, args, name="function"):
        return self.func(*args)


def test_a_remote_function_is_judged_by_what_runs_here():
    remote = protocol.RemoteFunction(_FakeSession(numpy_softmax), 0, "softmax")
    np.testing.assert_allclose(own_work.call("softmax", remote, SCORES), numpy_softmax(SCORES))
    sneaky = protocol.RemoteFunction(_FakeSession(lambda s: sys.modules["mha_core"].softmax(s)), 0, "softmax")
    assert "calls mha_core.attention.softmax" in refused(sneaky)


# --- the three problems -------------------------------------------------------------------


def test_problem_2_3_softmax():
    level2.q2_3_softmax(numpy_softmax)
    for answer in (mha.softmax, lambda s: mha.softmax(s), notebook("from mha_core import softmax")["softmax"]):
        for hidden in (False, True):
            with pytest.raises(own_work.NotOwnWork, match=SAYS):
                level2.q2_3_softmax(answer, hidden=hidden)


def _cost(d_model, h, n):
    stages = sys.modules["mha_core"].flop_count(d_model, h, n)
    return stages["scores"] + stages["weighted_sum"]


def test_problem_3_1_attention_cost():
    level3.q3_1_attention_cost(lambda d_model, h, n: 2 * n * n * d_model, hidden=True)
    for answer in (_cost, lambda d, h, n: level3.problems.attention_cost(d, h, n)):
        for hidden in (False, True):
            with pytest.raises(own_work.NotOwnWork, match=SAYS):
                level3.q3_1_attention_cost(answer, hidden=hidden)


def _own_masked_softmax(scores, valid_lens, causal=False):
    from tests.test_checks_today import masked_softmax

    return masked_softmax(scores, valid_lens, causal)


def _delegated_masked_softmax(scores, valid_lens, causal=False):
    n_q, n_k = scores.shape[-2:]
    allowed = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, None, :] & (
        np.tri(n_q, n_k, dtype=bool) if causal else True)
    return mha.attention._masked_softmax(scores, np.broadcast_to(allowed, scores.shape))  # mha_core's code


def _own_blocks(q, K, V, block_size):
    from tests.test_checks_today import attention_in_blocks

    return attention_in_blocks(q, K, V, block_size)


def _delegated_distinct(weights):
    return len({mha.softmax(w).tobytes() for w in weights})  # runs mha_core's code


@pytest.mark.parametrize("check, right, delegated", [
    ("level1.q1_1_head_dim", lambda d_model, h: d_model // h, mha.head_dim),
    ("level4.q4_1_parameter_count", lambda d_model, h: 4 * d_model**2, mha.parameter_count),
    ("level4.q4_1_parameter_count", lambda d_model, h: 4 * d_model**2, lambda d_model, h: mha.parameter_count(d_model, h)),
    ("level3.q3_3_count_distinct_heads", lambda weights: len(np.unique(np.reshape(weights, (len(weights), -1)), axis=0)),
     _delegated_distinct),
    ("level5.q5_2_attention_output", lambda weights, values: weights @ values,
     lambda weights, values: mha.attention.scaled_dot_product_attention(np.log(weights), np.zeros((len(values), 1)),
                                                                        values, scale=1)[0]),
    ("beyond.q3_4_max_rank", lambda n, d_k: min(n, d_k), lambda n, d_k: mha.head_dim(min(n, d_k), 1)),
    ("beyond.q4_6_masked_softmax", _own_masked_softmax, _delegated_masked_softmax),
    ("beyond.q4_7_attention_in_blocks", _own_blocks,
     lambda q, K, V, block_size: mha.scaled_dot_product_attention(q[None], K, V)[0][0]),
], ids=lambda x: x if isinstance(x, str) else "")
def test_every_graded_function_refuses_the_library(check, right, delegated):
    """No free points from the library: mha.head_dim passes 1.1, mha.parameter_count 4.1 (issue 35)."""
    from autograders.checks import beyond, level1, level3, level4, level5  # noqa: F401 (named in ``check``)

    module, name = check.split(".")
    judge = getattr(locals()[module], name)
    judge(right)
    for hidden in (False, True):
        with pytest.raises(own_work.NotOwnWork, match=SAYS):
            judge(delegated, hidden=hidden)


def test_problem_4_3_multi_head_attention():
    ns = notebook(
        "def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):\n"
        "    return mha.multi_head_attention(X, None, W_Q, W_K, W_V, W_O, h, causal=causal)[0]\n"
        "def by_string(X, W_Q, W_K, W_V, W_O, h, causal=False):\n"
        "    f = getattr(__import__('importlib').import_module('mha_core.attention'), 'multi_head_attention')\n"
        "    return f(X, None, W_Q, W_K, W_V, W_O, h, causal=causal)[0]\n"
    )
    for answer in (ns["multi_head_attention"], ns["by_string"]):
        for hidden in (False, True):
            with pytest.raises(own_work.NotOwnWork, match=SAYS):
                level4.q4_3_multi_head_attention(answer, hidden=hidden)


def test_a_declared_implementation_is_not_own_work():
    """4.3's declaration writes the block (right, then with each mistake) as source the check compiles: handed in,
    or called from the student's own function, it is refused, however it is reached."""
    from autograders.problems import attention_block

    declared = attention_block.written().function()  # the block without a mistake: right
    fetched = lambda *args: getattr(attention_block, "written")().function()(*args)  # noqa: E731 (reached while it runs)
    for answer in (declared, lambda *args: declared(*args), fetched):
        for hidden in (False, True):
            with pytest.raises(own_work.NotOwnWork, match=SAYS):
                level4.q4_3_multi_head_attention(answer, hidden=hidden)


# --- the re-check reads the student's source ------------------------------------------------

SETUP = "import numpy as np\nimport mha_core as mha\nfrom autograders.checks import level4 as check\n"
READS = {
    "numpy only": ("def f(X):\n    return np.exp(X)", None),
    "a local variable called mha": ("def f(X):\n    mha = np.exp(X)\n    return mha / mha.sum()", None),
    "mha_core used in another answer": ("w = mha.softmax(np.ones(3))\ndef f(X):\n    return np.exp(X) * w", None),
    "an inner helper": ("def f(X):\n    def split(A):\n        return A.T\n    return split(X)", None),
    "the setup's mha": ("def f(X):\n    return mha.softmax(X)", "refers to mha_core (as `mha`)"),
    "a from-import alias": ("from mha_core import softmax as s\ndef f(X):\n    return s(X)",
                            "refers to mha_core.softmax (as `s`)"),
    "a helper of the student's": ("def g(x):\n    return mha.softmax(x)\ndef f(X):\n    return g(X)", "refers to mha_core"),
    "an alias made in another cell": ("g = mha.softmax\ndef f(X):\n    return g(X)", "refers to mha_core"),
    "an import inside": ("def f(X):\n    import mha_core\n    return mha_core.softmax(X)", "imports mha_core"),
    "a string import": ("def f(X):\n    return __import__('mha_' + 'core').softmax(X)", "uses `__import__`"),
    "getattr on numpy": ("def f(X):\n    return getattr(np, 'exp')(X)", None),
    "sys for a constant": ("import sys\ndef f(X):\n    return X + sys.float_info.epsilon", None),
    "sys.modules": ("import sys\ndef f(X):\n    return getattr(sys.modules['mha_' + 'core'], 'softmax')(X)",
                    "uses `sys.modules`"),
    "exec": ("def f(X):\n    ns = {}\n    exec('import mha_core', ns)\n    return ns['mha_core'].softmax(X)", "uses `exec`"),
    "an assignment": ("f = mha.softmax", "refers to mha_core"),
    "a lambda": ("f = lambda X: mha.softmax(X)", "refers to mha_core"),
    "the check module": ("def f(X):\n    return check.q4_3_multi_head_attention(X)", "refers to autograders.checks.level4"),
}


@pytest.mark.parametrize("source, says", READS.values(), ids=READS.keys())
def test_source_references(source, says):
    found = own_work.source_references([SETUP, "x = 1", source], "f")
    assert found == says if says is None else says in found, found


def test_source_references_without_a_definition_or_source_find_nothing():
    assert own_work.source_references(None, "f") is None
    assert own_work.source_references([SETUP, "def g(X):\n    return mha.softmax(X)", "def broken(:"], "f") is None


class _Session:
    def __init__(self, cells):
        self.cells = [(f"cell {i}", source) for i, source in enumerate(cells)]


def test_a_remote_function_is_refused_by_its_source():
    """In the re-check the function runs in the student's process, where anything could be switched
    off: its source, which the re-check holds as data, decides."""
    class Remote(_FakeSession):
        session = _Session([SETUP, "def softmax(scores):\n    return mha.softmax(scores)"])

    remote = protocol.RemoteFunction(Remote(numpy_softmax), 0, "softmax")
    assert "refers to mha_core (as `mha`)" in refused(remote)
    Remote.session = _Session([SETUP, "def softmax(scores):\n    e = np.exp(scores)\n    return e / e.sum()"])
    own_work.call("softmax", remote, SCORES)


def test_the_real_recheck_refuses_an_answer_that_switched_the_check_off(tmp_path, kernels):
    """A submission that replaces own_work.call in its kernel passes nbgrader's run; the clean re-check does not."""
    source = NOTEBOOKS / "level4_synthesis.ipynb"
    nb = nbformat.read(str(source), as_version=4)
    attack = ("from autograders.checks import feedback, level4\nlevel4.own_work.call = feedback.call\n"
              "def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):\n"
              "    return mha.multi_head_attention(X, None, W_Q, W_K, W_V, W_O, h, causal=causal)[0]\n")
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "q4_3_multi_head_attention":
            cell.source = attack
    path = tmp_path / "level4_synthesis.ipynb"
    nbformat.write(nb, str(path))
    results = standalone.recheck(source, path, timeout=20)
    assert results["q4_3_multi_head_attention_test"].score == 0
    assert SAYS in results["q4_3_multi_head_attention_test"].message
    assert all(r.score == r.max_score for gid, r in results.items() if gid != "q4_3_multi_head_attention_test")


# --- when work is graded: the kernel's library answers no graded problem -------------------------------------

# Each function of the library that a graded function problem asks for (or reduces to), as a graded kernel
# would reach it; each must raise there (tests/test_sandbox.py runs them in the real sandbox).
ANSWERING = ["head_dim", "softmax", "flop_count", "parameter_count", "shape_table", "multi_head_attention",
             "split_heads", "concat_heads", "scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
             "summed_heads_attention", "shared_projection_attention", "attention.attention_heads",
             "heads.constructed", "learned.load"]


def test_the_grading_copy_holds_no_code_of_the_modules_that_answer(tmp_path):
    """Every module of mha_core is declared (a new one stops the build); the copy's modules that answer or draw
    are stand-ins of four lines, and nothing in the copy computes an exponential, a product or a count."""
    from autograders.grading import library_copy
    from mha_core import graded

    copy = library_copy.build(library_copy.ROOT / "mha_core", tmp_path)
    sources = {path.relative_to(copy): path.read_text() for path in copy.rglob("*.py")}
    for relative, text in sources.items():
        module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        if graded.kind(module) != "kept":
            assert text.count("\n") == 4 and "stand_in(__name__" in text, relative
    everything = "\n".join(sources.values())
    for code in ("np.exp", "def softmax", "def head_dim", "@ ", "einsum", "def _masked_softmax", "d_model // h"):
        assert code not in everything, code
    assert not list(copy.rglob("*.npz"))  # the learned model's weights stay behind
    (tmp_path / "source").mkdir()
    shutil.copytree(library_copy.ROOT / "mha_core", tmp_path / "source" / "mha_core")
    (tmp_path / "source" / "mha_core" / "shortcut.py").write_text("def softmax(x):\n    return x\n")
    with pytest.raises(RuntimeError, match="shortcut.py is not declared"):
        library_copy.build(tmp_path / "source" / "mha_core", tmp_path / "again")


def test_the_stand_ins_refuse_and_draw_nothing():
    from mha_core import graded

    withheld = graded.stand_in("mha_core.attention", answers=True)("softmax")
    with pytest.raises(graded.NotAvailable, match="mha_core.attention.softmax is not available while your work is "
                                                  "graded: the answer must compute it with numpy"):
        withheld(SCORES)
    for use in (lambda: withheld.__code__, lambda: graded.stand_in("mha_core.attention", True)("_masked_softmax")):
        with pytest.raises(AttributeError):
            use()
    with pytest.raises(graded.NotAvailable):
        graded.stand_in("mha_core.layer", True)("MultiHeadAttention").from_seed(8, 2)
    figure = graded.stand_in("mha_core.plots", answers=False)("heatmap")(np.eye(2), mask=None)
    assert repr(figure) == "mha_core.plots.heatmap: not drawn while your work is graded" and list(figure) == []


def test_a_remote_answer_that_reached_the_graded_kernels_library_is_refused_with_the_reason():
    """In the re-check the refusal crosses the hand-over by name; the check turns it into NotOwnWork."""
    from autograders.student.protocol import raised, raised_info
    from mha_core import graded

    def graded_kernels_softmax(scores):
        raise raised(raised_info(graded.NotAvailable(f"mha_core.attention.softmax {graded.WHY}")))

    class Remote(_FakeSession):
        session = _Session([SETUP, "_lib = __import__('mha' + '_core')\ndef softmax(scores):\n    return _lib.softmax(scores)"])

    message = refused(protocol.RemoteFunction(Remote(graded_kernels_softmax), 0, "softmax"))
    assert "calls mha_core.attention.softmax, which is not available while your work is graded" in message
    forged = raised(raised_info(graded.NotAvailable(f"anything else {graded.WHY}")))
    assert own_work.withheld(forged) == "mha_core" and own_work.withheld(ValueError(graded.WHY)) is None


def test_every_route_of_the_corpus_reaches_the_whole_library():
    """The control of the corpus's ``library-every-route``: in a student's own Python (the whole library) its
    routes find softmax; in a graded kernel none does (tests/test_corpus.py)."""
    from tests.corpus import EVERY_ROUTE

    namespace = {"np": np}
    exec(EVERY_ROUTE, namespace)
    assert len(namespace["FOUND"]) >= 8
    np.testing.assert_allclose(namespace["softmax"](SCORES), numpy_softmax(SCORES))


def test_every_level_runs_in_the_graded_kernel_with_the_grading_copy(tmp_path, kernels):
    """Each assignment's released notebook with the worked answers, graded as ``grade`` grades it (the kernel
    imports the grading copy of mha_core): no cell raises (the figures and explorers draw nothing) and every
    test scores full marks."""
    from autograders.editions import editions
    from autograders.grading.autograde import SandboxExecute
    from autograders.grading.checker import is_test, nbgrader_meta

    names = ["level1_recognition", "level2_application", "level3_analysis", "level4_synthesis", "level5_mastery",
             "beyond_the_sheet"]
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    for name in names:
        shutil.copy(NOTEBOOKS / f"{name}.ipynb", source_dir)
    editions.build_release(tmp_path / "course", source_dir, say=lambda message: None)
    for name in names:
        source = filled(NOTEBOOKS / f"{name}.ipynb")  # as the course's source/ has it
        answers = {nbgrader_meta(c)["grade_id"]: c.source for c in source.cells if nbgrader_meta(c).get("solution")}
        nb = nbformat.read(str(tmp_path / "course" / "release" / name / f"{name}.ipynb"), as_version=4)
        for cell in nb.cells:
            if nbgrader_meta(cell).get("solution"):
                cell.source = answers[nbgrader_meta(cell)["grade_id"]]
        executor = SandboxExecute(timeout=60, checks=True)
        executor.source_notebook = source
        work = tmp_path / f"run-{name}"
        work.mkdir()
        executor.preprocess(nb, {"metadata": {"path": str(work)}})
        errors = [(i, o.get("ename"), o.get("evalue")) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  and not is_test(c) for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert errors == [], (name, errors)
        assert executor.verdicts and all(v.score == v.max_score for v in executor.verdicts.values()), \
            (name, {g: v.message for g, v in executor.verdicts.items() if v.score != v.max_score})
        shown = "\n".join(str(o.get("text", o.get("data", {}).get("text/plain", ""))) for c in nb.cells
                          if c.cell_type == "code" and not is_test(c) for o in c.get("outputs", []))
        assert "FlopExplorer(" not in shown and "Figure" not in shown  # nothing drawn: the stand-ins answered
