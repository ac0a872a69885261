"""What a problem's declaration is made of: its numbers, its answers, each answer's misconceptions.

A teacher writes a problem once (``docs/adding-a-problem.md``)::

    NUMBERS = Numbers("q2_2", sheet={"d_k": 64, "dot": 40.0, "d_model": 512}, entries=..., valid=...)
    SCALED_SCORE = Answer(
        "q2_2_scaled_score", NUMBERS, kind="number", tolerance=1e-3,
        answer=lambda n: n.dot / math.sqrt(n.d_k),
        mistakes=[Mistake(shared.NO_SCALING, lambda n: n.dot, "No scaling: ..."), ...],
        right=lambda n: f"{n.dot:g}/√{n.d_k} = ...",
    )

each misconception declared with its tag and report name (a :class:`~.misconception.Misconception`: in the
problem's module, ``QT_K = Misconception("qt-k", "Q_i^T K_i instead of Q_i K_i^T")``, or in :mod:`.shared`
when several problems name it); :mod:`.engine` judges every answer so declared, and
:mod:`autograders.variants` draws each student's entry.

A message (``says``, ``right``, ``fallback``...) is a string, or a function of the numbers ``n`` (an
entry, its names readable as attributes: ``n.d_k``, plus what ``Numbers.derive`` adds) returning one.

A function the student writes (4.3's ``multi_head_attention``) is declared the same way, as a
:class:`Function`: the cases its check tries, the right output of each, and each mistake once, as a
:class:`Mistake` whose wrong answer is a wrong implementation (:class:`Written`, the code a student writes)
or whose ``matches`` is a predicate on the output; :mod:`autograders.checks.functions` runs it.
"""

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import shared
from .misconception import named
from .pools import same

SHEET_NUMBERS = ("That is the answer for the sheet's numbers, not for yours: use the numbers in the cell under "
                 "the problem.")
HIDDEN_PASSED = "Hidden checks passed too."  # what most hidden tests of the workbook say when they pass


def mismatch(name):
    """What a hidden test that names nothing says of ``name``."""
    return f"`{name}` passed the visible test but not the hidden one: re-read the problem and try again."


def close(value, expected, tol):
    """True when ``value`` is within ``tol`` of ``expected`` (arrays: every entry)."""
    return bool(np.all(np.abs(np.asarray(value, float) - np.asarray(expected, float)) <= tol))


class Entry(dict):
    """One set of numbers, its names also readable as attributes (``n.d_model``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Later(Sequence):
    """A pool's entries made by ``rule()`` when first read, not at import: a pool whose rule vets many
    candidates (2.3's) costs nothing in a kernel that only reads a student's numbers (they come with the
    student's document). A rule gives entries, so the pool is known to have some before it runs."""

    def __init__(self, rule):
        self.rule = rule

    @functools.cached_property
    def entries(self):
        return tuple(self.rule())

    def __getitem__(self, index):
        return self.entries[index]

    def __len__(self):
        return len(self.entries)

    def __bool__(self):
        return True


@dataclass(frozen=True)
class Numbers:
    """The numbers a problem's statement uses: the sheet's and the pool of per-student entries.

    ``entries`` are drawn by a keyed hash in this order (never reorder a released pool: the records of a
    course would no longer regrade identically), a tuple or :class:`Later`; ``valid`` says why an entry is unusable (or None);
    ``derive`` adds names the messages use (``d_k`` from ``d_model`` and ``h``). No ``entries``: the
    problem keeps the sheet's numbers for everybody."""

    problem: str                     # the numbers cell's name: "q2_2" (its grade_id is "q2_2_numbers")
    sheet: dict
    entries: tuple = ()
    valid: Callable = lambda entry: None
    derive: Callable = lambda entry: {}
    symbols: dict = field(default_factory=dict)  # how the numbers cell names a number ("dot": "q k^T")

    def view(self, entry):
        return Entry({**entry, **self.derive(Entry(entry))})


NO_NUMBERS = Numbers("", {})  # a labelled choice, or a problem with no numbers of its own


@dataclass(frozen=True)
class Mistake:
    """One misconception's wrong answer. ``key``: its :class:`~.misconception.Misconception` (declared in the
    problem's module, or in :mod:`.shared`), ``f"{tag}/detail"`` when one tag has several wrong answers,
    ``-/detail`` for a wrong answer named without a tag. ``wrong``: the answer it gives, from the numbers. ``says``: the student's message. ``when``:
    whether it applies to these numbers. ``matches(value, n)``: a wider test than "equal to ``wrong``"."""

    key: str
    wrong: Callable
    says: object
    when: Callable = lambda n: True
    matches: Callable = None

    @property
    def tag(self):
        tag = self.key.split("/")[0]
        return None if tag == "-" else tag

    def message(self, n, **more):
        """The student's message at the numbers ``n``, carrying the tag (a hand-written check raises it as it is)."""
        says = text(self.says, n, **more)
        return named(self.tag, says) if self.tag else says


@dataclass(frozen=True)
class Coincidence:
    """Mistakes of one answer (``keys``: theirs) that give one value at some numbers, and the message for that
    value, true for each cause (``says``), with its report tag (``key``: ``tag/detail``). Where their answers
    agree (within twice the tolerance, as vetting compares them), :meth:`Answer.mistakes_of` gives this one in
    their place, where the first of them stood: the feedback never names one cause of several as the cause."""

    keys: tuple
    key: str
    says: object

    def joined(self, found, tolerance):
        """``found`` ([(Mistake, wrong answer)]) with this coincidence in place of its mistakes, where they all
        apply and agree; else ``found`` as it is."""
        mine = [(m, wrong) for m, wrong in found if m.key in self.keys]
        if len(mine) != len(self.keys) or not all(same(wrong, mine[0][1], 2 * tolerance) for _, wrong in mine):
            return found
        first, value = mine[0]
        at = next(i for i, (m, _) in enumerate(found) if m is first)
        rest = [(m, wrong) for m, wrong in found if m.key not in self.keys]
        return rest[:at] + [(Mistake(self.key, lambda n: value, self.says), value)] + rest[at:]


@dataclass(frozen=True)
class Answer:
    """One graded answer cell: what is right, what is accepted, what each known wrong answer means.

    ``kind``: "number", "int", "shape", "vector", "choice" or "head" (a pair (layer, head) among a model's heads,
    read by its ``convert``). ``answer``: the right answer from the numbers
    (a choice: its letter). ``right``: the confirmation; ``hidden_right`` the hidden test's (None: the same).
    ``hidden``: the hidden test's own recomputation, from the numbers (None: ``answer``) within
    ``hidden_tolerance``; ``hidden_says``: its message when the answer fails it (None: named as in the
    visible test). ``prefix``: what a named mistake's message starts with (``{name}``, ``{value}``).
    ``sheet_mistake``: the sheet's answer given for other numbers is named (within ``tolerance``, even when
    ``near`` recognises the misconceptions' answers otherwise). ``coinciding``: the
    :class:`Coincidence` of some of ``mistakes`` (a larger one first). ``fallback``: the message for
    an unknown wrong answer, ``fallback_tag`` its tag. ``trials``: the phrases by which the problem's prompt
    announces what the hidden test tries (tests/test_accepted_forms.py finds each in the prompt)."""

    id: str
    kind: str
    answer: Callable
    numbers: Numbers = NO_NUMBERS
    name: str = None                 # the variable; default: the grade_id's tail ("q2_2_scaled_score": scaled_score)
    mistakes: tuple = ()
    coinciding: tuple = ()           # Coincidence: mistakes giving one value, named together where they do
    tolerance: float = 1e-9
    near: Callable = None            # (value, wrong) -> a mistake's answer is recognised (default: within tolerance)
    right: object = ""
    hidden_right: object = None
    hidden: Callable = None
    hidden_tolerance: float = None
    hidden_says: object = None
    prefix: str = "`{name}` is {value}. "
    fallback: object = ""
    fallback_tag: str = None
    sheet_mistake: bool = False
    sheet_says: str = SHEET_NUMBERS
    options: tuple = ("A", "B", "C", "D")
    ndim: int = None                 # a shape: its number of dimensions, told by as_shape
    wrong_ndim: tuple = None         # a shape of another length, after the mistakes: (message, tag)
    size: Callable = None            # a vector: its number of entries, from the numbers
    judge: Callable = None           # a hand-written diagnosis for what the declaration cannot say
    convert: Callable = None         # (value, n) -> the value, for a conversion of its own (default: by kind)
    notes: dict = field(default_factory=dict)  # for the pool: "one-answer" when every entry has the same answer
    trials: tuple = ()               # what the hidden test tries beyond the visible one, in the prompt's words

    @property
    def variable(self):
        return self.name or self.id.split("_", 2)[2]

    def mistakes_of(self, entry, sheet=True):
        """[(Mistake, wrong answer)] that apply to ``entry``, the sheet's answer last (unless not ``sheet``), each
        :class:`Coincidence` that holds there in place of its mistakes."""
        n = self.numbers.view(entry)
        found = [(m, m.wrong(n)) for m in self.mistakes if m.when(n)]
        if sheet and self.sheet_mistake and entry != self.numbers.sheet:
            sheet = self.answer(self.numbers.view(self.numbers.sheet))
            if not same(self.answer(n), sheet, 2 * self.tolerance):
                found.append((Mistake(shared.EXAMPLE_NUMBERS_ONLY, lambda n: sheet, self.sheet_says), sheet))
        for coincidence in self.coinciding:
            found = coincidence.joined(found, self.tolerance)
        return found


class Written(str):
    """A function as a student writes it (its source; ``np`` is numpy): a declared mistake's wrong implementation.
    The check runs :meth:`function` to recognise an output; the tests run the same source as a student's answer
    cell."""

    def function(self):
        """The function this source defines (compiled once, in a namespace of its own holding ``np`` only)."""
        return _compiled(str(self))


@functools.cache
def _compiled(source):
    """The function ``source`` defines, as this package's own: its module and its file are the package's, so that
    a student's answer that is (or calls) a declared implementation is refused as not their own work
    (:mod:`autograders.checks.own_work` reads both), the unmistaken block included."""
    name = source.split("def ", 1)[1].split("(", 1)[0]
    namespace = {"np": np, "__name__": f"{__name__}.declared"}
    filename = os.path.join(os.path.dirname(__file__), "declared", f"{name}.py")  # no such file: it is only a name
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (the declaration's own source)
    return namespace[name]


@dataclass(frozen=True)
class Function:
    """A function the student writes (``def multi_head_attention(...)``), declared as a number is.

    ``cases``: what the visible test runs it on; ``hidden_cases``: what the hidden test adds after them. ``view(case)``:
    the case as the check and the messages read it (an :class:`Entry`: ``c.X``, ``c.h``, ``c.where``...).
    ``arguments(c)``: what the student's function is called with (fresh copies); ``answer(c)``: its right output;
    ``same(value, expected)``: whether an output agrees with an expected one.

    ``mistakes``: :class:`Mistake` s, each once, in the order they are tried. One with ``matches(value, c)`` (a
    predicate on the output) names it as soon as the output is read, before it is compared, with ``says`` as the
    whole message; one whose ``wrong`` is a wrong implementation (:class:`Written`) names an output that agrees with
    that implementation's, and not with the right one, on the first case where the student's is wrong, with
    ``prefix`` (``{where}``: the case's ``where``) before ``says``. An implementation that cannot run on a case
    (ValueError: its shapes do not fit) is not tried there.

    ``convert(value, c)``: the output as it is compared (raising WrongAnswer for what is wrong with its kind);
    ``wrong_output(value, c)``: raises WrongAnswer for what no predicate names (a wrong shape, NaN), or returns.
    ``hint`` and ``shapes`` (of ``c``): what the call adds after a crash or a shape error inside the function
    (:func:`autograders.checks.feedback.call`; a hint made by :func:`~.misconception.named` gives its tag).
    ``fallback``: the message for an unknown wrong output (a function of ``c``; its tag by
    :func:`~.misconception.named`). ``right``, ``hidden_right``: the confirmations. ``hidden_names``: whether
    the hidden test names mistakes too (else ``hidden_says``). ``trials``: what the hidden test tries, in the
    prompt's words."""

    id: str
    name: str
    cases: tuple
    view: Callable
    arguments: Callable
    answer: Callable
    same: Callable
    hidden_cases: tuple = ()
    mistakes: tuple = ()
    convert: Callable = lambda value, c: value
    wrong_output: Callable = lambda value, c: None
    prefix: str = "{where}: "
    hint: object = ""
    shapes: object = ""
    fallback: object = ""
    right: object = ""
    hidden_right: object = HIDDEN_PASSED
    hidden_names: bool = True
    hidden_says: object = None
    trials: tuple = ()

    @property
    def predicates(self):
        return tuple(m for m in self.mistakes if m.matches is not None)

    @property
    def implementations(self):
        return tuple(m for m in self.mistakes if isinstance(m.wrong, Written))


def text(message, n, **more):
    """``message`` for the numbers ``n`` (a string is taken as it is; a function is called with ``n``)."""
    if callable(message):
        return message(Entry({**n, **more}))
    return message


def choice(id, right_letter, says, **more):
    """A labelled choice: ``says`` maps each wrong letter to (its tag or None, its message); the options are
    these letters and the right one, in order."""
    mistakes = tuple(Mistake(f"{tag or '-'}/{letter}", lambda n, letter=letter: letter, message)
                     for letter, (tag, message) in says.items())
    options = tuple(sorted({*says, right_letter}))
    more.setdefault("trials", ("the same letter",))
    return Answer(id, "choice", lambda n: right_letter, mistakes=mistakes, options=options, **more)


def shape_of(*names):
    """The answer ``(n.a, n.b)`` for ``shape_of("a", "b")``."""
    return lambda n: tuple(n[name] for name in names)
