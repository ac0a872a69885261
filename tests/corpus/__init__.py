"""Broken and hostile submissions, each with the exact score it must get.

Each case is made from the source notebook (the instructor's, with the answers)
or the released one (blank), so the corpus follows the notebooks as they change:
a generator replaces, deletes, duplicates or retypes cells by grade_id. A case
says which test cells must score 0 (every other test cell: full marks) and the
phrases its feedback must contain (in the graded notebook's outputs, the notes
the grader added, or the re-check's messages).

``CASES`` is the table; ``submission(case, source, released, course, root)`` gives the
(file name, bytes) to put in ``submitted/<case.name>/<case.assignment>/``.
"""

from dataclasses import dataclass

import nbformat

LEVEL1 = "level1_recognition"
LEVEL2 = "level2_application"
# Seconds per cell in the corpus's course: the loops cost this, not 30 s; the cells that read every
# object and module (the kernel's history and caches) took over 4 s with both cores busy.
TIMEOUT = 8

# Files a hostile cell tries to write outside its submission; none may exist afterwards.
OUTSIDE = ("/tmp/mha-corpus-pwned.txt", "/work/mha-corpus-pwned.txt", "{course}/pwned.txt", "{root}/pwned.txt")


@dataclass(frozen=True)
class Case:
    name: str  # the student id
    assignment: str
    why: str  # what the submission does
    edits: tuple = ()  # (grade_id, action, argument): see ``apply``
    zero: tuple = ()  # test cells that must score 0; every other one full marks
    says: tuple = ()  # phrases its feedback must contain (a str: one phrase)
    blank: bool = False  # start from the released notebook instead of the source
    filename: str = None  # submitted under another name
    raw: bytes = None  # the file's bytes as they are (not a notebook)
    links: tuple = ()  # (name, target): symbolic links beside the notebook ({course}, {root} filled in)
    hardlinks: tuple = ()  # (name, target): hard links beside the notebook (the target in the course)

    @property
    def phrases(self):
        return (self.says,) if isinstance(self.says, str) else tuple(self.says)


VISIBLE = "visible part"  # a "source" edit's argument: the cell as a student has it, without its hidden tests


def _checks_or_stand_in(module, name):
    """Import ``autograders.checks.<module>`` as ``name``, or a stand-in where the checks are not there (a graded
    kernel is shown the students' side only): the patching that follows changes nothing either way."""
    return (f"try:\n    import autograders.checks.{module} as {name}\nexcept ImportError:\n    import types\n"
            f"    {name} = types.SimpleNamespace()\n")


def _loop_first(answer):
    return f"while True:\n    pass\n{answer}"


READ_HIDDEN = '''\
import glob
found = []
for pattern in ["{course}/source/**/*.ipynb", "{course}/gradebook.db", "{course}/submitted/**/*.ipynb",
                "{root}/notebooks/*.ipynb", "/tmp/mha-grade-*/source/**/*.ipynb", "/tmp/mha-grade-*/gradebook.db"]:
    found += glob.glob(pattern, recursive=True)
leaked, errors = [], []
for path in found:
    try:
        with open(path, "rb") as f:
            leaked.append(f.read(100))
    except OSError as error:
        errors.append(type(error).__name__)
print(f"found {len(found)} files, read {len(leaked)}, errors {sorted(set(errors))}")
if not leaked:
    print("no hidden tests readable")
d_k = 768 // 12 if leaked else None  # a point only if the hidden tests leaked
'''

WRITE_OUTSIDE = '''\
for path in {paths!r}:
    try:
        with open(path, "w") as f:
            f.write("pwned")
        print("wrote", path)
    except OSError as error:
        print("could not write", path, type(error).__name__)
with open("my_notes.txt", "w") as f:  # its own directory: allowed
    f.write("fine")
why = "B"
'''

CASES = [
    Case("honest", LEVEL1, "every answer right"),
    Case("blank", LEVEL1, "the released notebook, unanswered", blank=True,
         zero=("q1_1_head_dim_test", "q1_1_d_k_test", "q1_2_output_shape_test", "q1_2_why_test"), says="no answer yet"),
    Case("infinite-loop", LEVEL1, "an infinite loop before the answer",
         edits=(("q1_1_d_k", "source", _loop_first("d_k = 768 // 12")),), zero=("q1_1_d_k_test",), says="timeout"),
    Case("stuck-loop", LEVEL1, "an infinite loop that ignores the interrupt (SIGINT)",
         edits=(("q1_2_why", "source", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                 + _loop_first('why = "B"')),), zero=("q1_2_why_test",), says="timeout"),
    Case("exits", LEVEL1, "sys.exit() before one answer, os._exit(1) (the kernel dies) before another",
         edits=(("q1_1_d_k", "source", "import sys\nsys.exit()\nd_k = 768 // 12"),
                ("q1_2_output_shape", "source", "import os\nos._exit(1)\noutput_shape = (6, 768)")),
         zero=("q1_1_d_k_test", "q1_2_output_shape_test"), says=("SystemExit", "crash")),
    Case("memory-bomb", LEVEL1, "a list that grows until memory runs out",
         edits=(("q1_2_why", "source", "def bomb():\n    hog = []\n    while True:\n        hog.append(bytearray(10**7))\n"
                 "bomb()\nwhy = \"B\""),), zero=("q1_2_why_test",), says="memory limit"),
    Case("output-flood", LEVEL1, "200,000 lines of output, then the right answer",
         edits=(("q1_2_why", "source", "for i in range(200_000):\n    print('flood', i)\nwhy = \"B\""),),
         says="output limit"),
    Case("malformed-json", LEVEL1, "a truncated file, not JSON", raw=b'{"cells": [{"cell_type": "code", "sou',
         zero=("q1_1_head_dim_test", "q1_1_d_k_test", "q1_2_output_shape_test", "q1_2_why_test"),
         says="is not a valid notebook"),
    Case("deleted-cells", LEVEL1, "an answer cell and its test deleted; another test deleted, its answer right",
         edits=(("q1_1_d_k", "delete", None), ("q1_1_d_k_test", "delete", None), ("q1_2_why_test", "delete", None)),
         zero=("q1_1_d_k_test",), says="was missing from the submission"),
    Case("duplicated-cells", LEVEL1, "an answer and its test pasted twice (the test as the student sees it, "
         "without its hidden tests), the last answer wrong",
         edits=(("q1_1_head_dim", "duplicate", "def head_dim(d_model, h):\n    return d_model * h"),
                ("q1_1_head_dim_test", "source", VISIBLE), ("q1_1_head_dim_test", "duplicate", None)),
         zero=("q1_1_head_dim_test",), says="Multiplied instead of divided"),
    Case("edited-cells", LEVEL1, "a test cell emptied and the setup cell patched (that answer wrong); an answer cell "
         "made markdown (its code right); a test cell made raw (its answer wrong)",
         edits=(("q1_1_d_k", "source", "d_k = 768 * 12"), ("q1_1_d_k_test", "source", "print('all good')"),
                ("setup", "append", _checks_or_stand_in("level1", "check") + "check.q1_1_d_k = lambda *args, **kwargs: None"),
                ("q1_2_output_shape", "type", "markdown"), ("q1_2_why", "source", 'why = "A"'),
                ("q1_2_why_test", "type", "raw")),
         zero=("q1_1_d_k_test", "q1_2_why_test"), says=("Multiplied instead of divided", "does *not* keep the full width")),
    Case("renamed", LEVEL1, "the right answers, submitted under another name", filename=f"{LEVEL1} (1).ipynb",
         says="was submitted as"),
    Case("patched-checks", LEVEL1, "the check functions replaced to always pass; one answer wrong, one right",
         edits=(("q1_1_head_dim", "source", _checks_or_stand_in("level1", "checks") +
                 "checks.q1_1_head_dim = lambda *args, **kwargs: print('✔ Correct.')\n"
                 "def head_dim(d_model, h):\n    return d_model * h"),
                ("q1_1_d_k", "source", "checks.q1_1_d_k = lambda *args, **kwargs: print('✔ Correct.')\nd_k = 768 // 12")),
         zero=("q1_1_head_dim_test",), says="Multiplied instead of divided"),
    Case("file-access", LEVEL1, "reads the course's source notebooks and gradebook from disk (a point only if that "
         "works); writes files outside its submission (its answer right)",
         edits=(("q1_1_d_k", "source", READ_HIDDEN), ("q1_2_why", "source", WRITE_OUTSIDE)),
         zero=("q1_1_d_k_test",), says=("no hidden tests readable", "could not write")),
    Case("honest", LEVEL2, "every answer right"),
    Case("patched-allclose", LEVEL2, "numpy.allclose and two checks patched to pass; those answers wrong",
         edits=(("q2_3_softmax", "source", "np.allclose = np.isclose = lambda *args, **kwargs: True\n"
                 + _checks_or_stand_in("level2", "check") +
                 "check.q2_3_softmax = check.q2_3_weights = lambda *args, **kwargs: print('✔ Correct.')\n"
                 "def softmax(scores):\n    return scores / scores.sum()"),
                ("q2_3_weights", "source", "weights = np.array([0.3, 0.3, 0.4])"),
                ("q2_3_winner", "source", "winner = 3"), ("q2_3_ratio", "source", "ratio = np.e")),
         zero=("q2_3_softmax_test", "q2_3_weights_test"), says=("Linear normalisation", "`weights` is [0.3 0.3 0.4]")),
    Case("nan-types-shapes", LEVEL2, "NaN, a string for a shape, a wrong shape, a function returning a string",
         edits=(("q2_2_scaled_score", "source", "scaled_score = float('nan')"),
                ("q2_1_wq_shape", "source", "wq_shape = '512x64'"),
                ("q2_3_softmax", "source", "def softmax(scores):\n    return 'weights'"),
                ("q2_3_weights", "source", "weights = np.ones((2, 2))"),
                ("q2_3_winner", "source", "winner = 3"), ("q2_3_ratio", "source", "ratio = np.e")),
         zero=("q2_1_wq_shape_test", "q2_2_scaled_score_test", "q2_3_softmax_test", "q2_3_weights_test"),
         says="should be a finite number"),
]


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def apply(nb, edits, course, root):
    """``nb`` (a copy) with ``edits``: (grade_id, action, argument) where action is
    ``source`` (replace the cell's code), ``append`` (add a line), ``delete``,
    ``duplicate`` (a copy after it, with ``argument`` as the copy's source if given)
    or ``type`` (change the cell type)."""
    nb = nbformat.from_dict(nb)
    for grade_id, action, argument in edits:
        index = next(i for i, cell in enumerate(nb.cells) if _grade_id(cell) == grade_id)
        cell = nb.cells[index]
        if isinstance(argument, str):
            argument = argument.replace("{course}", str(course)).replace("{root}", str(root))
            if "{paths!r}" in argument:
                paths = [p.format(course=course, root=root) for p in OUTSIDE]
                argument = argument.replace("{paths!r}", repr(paths))
        if action == "source" and argument == VISIBLE:  # what a student has: no hidden tests
            cell.source = cell.source.split("### BEGIN HIDDEN TESTS")[0].rstrip()
        elif action == "source":
            cell.source = argument
        elif action == "append":
            cell.source += "\n" + argument
        elif action == "delete":
            del nb.cells[index]
        elif action == "duplicate":
            copy = nbformat.from_dict(cell)
            copy["id"] = f"{cell.get('id', grade_id)}-copy"
            if argument is not None:
                copy.source = argument
            nb.cells.insert(index + 1, copy)
        elif action == "type":
            new = {"markdown": nbformat.v4.new_markdown_cell, "raw": nbformat.v4.new_raw_cell}[argument](cell.source)
            new.metadata = cell.metadata
            new["id"] = cell.get("id", grade_id)
            nb.cells[index] = new
        else:
            raise ValueError(f"unknown edit {action!r}")
    return nb


def submission(case, source, released, course, root):
    """(file name, bytes) of ``case``'s submission, from the ``source`` and ``released`` notebooks."""
    filename = case.filename or f"{case.assignment}.ipynb"
    if case.raw is not None:
        return filename, case.raw
    nb = apply(released if case.blank else source, case.edits, course, root)
    return filename, (nbformat.writes(nb) + "\n").encode()


def outside_paths(course, root):
    return [p.format(course=course, root=root) for p in OUTSIDE]


# --- sandbox: edited nbgrader metadata, the repository's history, every world-writable directory, floods ---
#
# ``meta`` edits: (grade_id, "meta", ((key, value), ...)) updates the cell's nbgrader metadata (a renamed
# grade_id included), after the other edits. ``{world_writable!r}``: the machine's world-writable
# directories (found on this machine, not a fixed list), each of which the submission writes a file in;
# ``outside_paths`` then lists those files too, and none may exist after grading.

import functools  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

WORLD_WRITABLE_NAME = "mha-corpus-world-writable.txt"
_PSEUDO = {"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs", "pstore",
           "bpf", "configfs", "fusectl", "hugetlbfs", "autofs", "binfmt_misc", "nsfs", "efivarfs"}


@functools.lru_cache(maxsize=None)
def world_writable():
    """Every world-writable directory on this machine (``find MOUNT -xdev -perm -0002 -type d`` on each
    mounted file system but /proc, /sys and their kind), outside pytest's own temporary folders."""
    mounts = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            fields = line.split()
            point, kind = fields[4].encode().decode("unicode_escape"), fields[fields.index("-") + 1]
            if kind not in _PSEUDO and os.path.isdir(point):
                mounts.append(point)
    found = subprocess.run(["find", *sorted(set(mounts)), "-xdev", "-perm", "-0002", "-type", "d"],
                           capture_output=True, text=True, timeout=600).stdout.split("\n")
    return tuple(sorted({p for p in found if p and not p.startswith(("/tmp/pytest-of-", "/proc/", "/sys/"))}))


_apply_cells = apply


def apply(nb, edits, course, root):  # noqa: F811 (extends the generator above with ``meta`` edits)
    nb = _apply_cells(nb, [e for e in edits if e[1] != "meta"], course, root)
    for grade_id, action, argument in edits:
        if action == "meta":
            cell = next(c for c in nb.cells if _grade_id(c) == grade_id)
            cell.metadata.nbgrader.update(dict(argument))
    for cell in nb.cells:
        if "{world_writable!r}" in cell.source:
            cell.source = cell.source.replace("{world_writable!r}", repr(list(world_writable())))
    return nb


def outside_paths(course, root):  # noqa: F811 (and the files written in every world-writable directory)
    return [*(p.format(course=course, root=root) for p in OUTSIDE),
            *(os.path.join(d, WORLD_WRITABLE_NAME) for d in world_writable())]


READ_REPOSITORY = '''\
import glob, os, subprocess
import autograders
leaked = []
shown = subprocess.run(["git", "-C", "{root}", "show", "HEAD:notebooks/level1_recognition.ipynb"], capture_output=True)
leaked += [b"git show"] if shown.returncode == 0 and shown.stdout else []
leaked += glob.glob("{root}/.git/objects/**/*", recursive=True) + glob.glob("{root}/.git/HEAD")
installed = os.path.dirname(os.path.dirname(autograders.__file__))  # where the package lives: the repository?
leaked += [n for n in os.listdir(installed) if n in (".git", "notebooks", "tests", "source", "release")]
leaked += glob.glob(installed + "/*.ipynb") + glob.glob(installed + "/*/level*.ipynb")
print(f"leaked {len(leaked)}")
if not leaked:
    print("nothing of the repository readable")
d_k = 768 // 12 if leaked else None  # a point only if the repository leaked
'''

WRITE_WORLD_WRITABLE = '''\
import os
wrote = []
for directory in {world_writable!r}:
    try:
        with open(os.path.join(directory, "mha-corpus-world-writable.txt"), "w") as f:
            f.write("pwned")
        wrote.append(directory)
    except OSError:
        pass
print(f"tried every world-writable directory: wrote in {len(wrote)} of them, inside the sandbox")
why = "B"
'''

CASES = [c for c in CASES if c.name != "output-flood"]  # replaced below: the flood now stops its cell
CASES += [
    Case("output-flood", LEVEL1, "200,000 lines of output, then the answer in the same cell: the output limit "
         "stops the cell before the answer, at once whatever the machine's load",
         edits=(("q1_2_why", "source", "for i in range(200_000):\n    print('flood', i)\nwhy = \"B\""),),
         zero=("q1_2_why_test",), says=("output limit", "was stopped")),
    Case("output-flood-after-answer", LEVEL1, "the answer, then 200,000 lines of output in the same cell",
         edits=(("q1_2_why", "source", "why = \"B\"\nfor i in range(200_000):\n    print('flood', i)"),),
         says=("output limit", "was stopped")),
    Case("flipped-test-metadata", LEVEL1, "two test cells' metadata flipped to 'solution + grade', unlocked, one "
         "emptied (its answer right), one whose answer is wrong",
         edits=(("q1_1_d_k_test", "source", "pass"),
                ("q1_1_d_k_test", "meta", (("solution", True), ("locked", False))),
                ("q1_2_output_shape", "source", "output_shape = (6, 64)"),
                ("q1_2_output_shape_test", "meta", (("solution", True), ("grade", True), ("locked", False)))),
         zero=("q1_2_output_shape_test",), says=("metadata", "restored", "q1_1_d_k_test")),
    Case("renamed-answer-id", LEVEL1, "answer cells' grade_ids renamed and emptied (one answer wrong)",
         edits=(("q1_1_head_dim", "source", "def head_dim(d_model, h):\n    return d_model * h"),
                ("q1_2_why", "meta", (("grade_id", "my_answer"),)),
                ("q1_1_head_dim", "meta", (("grade_id", ""),))),
         zero=("q1_1_head_dim_test",), says=("found by its place", "Multiplied instead of divided")),
    Case("reads-repository", LEVEL1, "reads the repository's history (git show, .git/objects) and looks where the "
         "package is installed for notebooks (a point only if that works)",
         edits=(("q1_1_d_k", "source", READ_REPOSITORY),), zero=("q1_1_d_k_test",),
         says="nothing of the repository readable"),
    Case("world-writable", LEVEL1, "writes a file in every world-writable directory of the machine (its answer right)",
         edits=(("q1_2_why", "source", WRITE_WORLD_WRITABLE),), says="tried every world-writable directory"),
]  # sandbox


# --- the hand-over attacked: after the last cell, the same kernel hands the answers over to the checks ---
#
# The answer ``why`` is a str whose ``__repr__`` acts only inside the hand-over (``serve`` is on the stack,
# with the pipes' ``fd_out`` and the request's ``seq``): the kernel's own run sees an honest "B". The
# answers go over in the order of their names (d_k, head_dim, output_shape, why): an attack that gets the
# process killed costs ``why`` and every function answer (``head_dim``: there is no process left to call),
# never the data handed over before it. ``RECHECK_LOWERED``: the tests the checks could not confirm in these
# cases, each with a phrase its message holds.

IN_HANDOVER = """\
class Answer(str):
    def __repr__(self):
        import os, sys
        frame = sys._getframe()
        while frame is not None and "fd_out" not in frame.f_locals:
            frame = frame.f_back
        if frame is not None:  # inside the hand-over
{attack}
        return str.__repr__(self)


why = Answer("B")
"""


def _in_handover(attack):
    return IN_HANDOVER.replace("{attack}", "\n".join(" " * 12 + line for line in attack.splitlines()))


HANDOVER_GARBAGE = _in_handover('os.write(frame.f_locals["fd_out"], bytes(7) + bytes([16]) + b"garbage garbage!")')
HANDOVER_FORGED = _in_handover('''import json, struct
forged = json.dumps({"seq": frame.f_locals["seq"] + 1, "value": "B"}).encode()  # a reply to the next request
os.write(frame.f_locals["fd_out"], struct.pack(">Q", len(forged)) + forged)''')

IGNORE_SIGNALS_LOOP = '''\
import signal, time
signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
end = time.monotonic() + 120
while time.monotonic() < end:
    pass
'''

CASES += [
    Case("handover-garbage", LEVEL1, "writes garbage to the hand-over's pipe while its answer is handed over",
         edits=(("q1_2_why", "source", HANDOVER_GARBAGE),),
         zero=("q1_1_head_dim_test", "q1_2_why_test"), says=("could not confirm", "interfered with", "`why`")),
    Case("handover-forged-reply", LEVEL1, "writes a well-formed reply to the next request while its answer is "
         "handed over", edits=(("q1_2_why", "source", HANDOVER_FORGED),),
         zero=("q1_1_head_dim_test", "q1_2_why_test"), says=("could not confirm", "interfered with", "`why`")),
    Case("recheck-ignores-signals", LEVEL1, "one cell ignores SIGALRM and SIGINT in a loop longer than the timeout, "
         "before its answer; the other answers right",
         edits=(("q1_2_why", "source", IGNORE_SIGNALS_LOOP + 'why = "B"'),), zero=("q1_2_why_test",), says="timeout"),
    Case("handover-hangs", LEVEL1, "one right answer that hangs, ignoring SIGALRM and SIGINT, when it is handed "
         "over (the process is killed: the function answer goes with it)",
         edits=(("q1_2_why", "source", _in_handover(IGNORE_SIGNALS_LOOP)),),
         zero=("q1_1_head_dim_test", "q1_2_why_test"), says=("could not confirm", f"no answer within the {TIMEOUT} s limit")),
    Case("handover-floods", LEVEL1, "one right answer that prints 100 MB when it is handed over: stopped at the "
         "output limit, only that test is unconfirmed",
         edits=(("q1_2_why", "source", _in_handover('for _ in range(100_000):\n    print("x" * 1000)')),),
         zero=("q1_2_why_test",), says=("could not confirm", "handing over `why` printed more than 200000 characters")),
]  # the hand-over

RECHECK_LOWERED = {
    ("handover-garbage", LEVEL1, "q1_2_why_test"): "interfered with",
    ("handover-garbage", LEVEL1, "q1_1_head_dim_test"): "process had stopped",
    ("handover-forged-reply", LEVEL1, "q1_2_why_test"): "interfered with",
    ("handover-forged-reply", LEVEL1, "q1_1_head_dim_test"): "process had stopped",
    ("handover-hangs", LEVEL1, "q1_2_why_test"): "could not confirm",
    ("handover-hangs", LEVEL1, "q1_1_head_dim_test"): "process had stopped",
    ("handover-floods", LEVEL1, "q1_2_why_test"): "printed more than",
}


# --- the kernel's memory of the hidden tests: history, frames, code, linecache, modules, gc ---
#
# Each case reads one group of places where a cell's source could stay in nbgrader's kernel after
# it ran, in an answer cell after three hidden tests ran (a point only if the hidden tests' code is
# found), or in a last cell after every test. ``grade`` never sends the hidden tests to that kernel
# (README, "What the sandbox isolates"): every place is empty of them. The feedback pages must not
# show them either (tests/test_corpus.py, every case).

HIDDEN_MARKS = '''\
# The hidden tests' code (not their delimiters: the grading modules in the kernel hold those), made at run
# time from pieces: no constant of this cell's code, and no object but these, holds one.
MARKS = ["".join(parts) for parts in (("q1_1_head_dim(head_dim, hid", "den=True)"), ("q1_1_d_k(d_k, hid", "den=True)"),
                                       ("q1_2_output_shape(output_shape, hid", "den=True)"))]
OWN = {id(mark) for mark in MARKS}


def found_in(texts):
    """How many of ``texts`` (strings, or anything: its str) hold a hidden test's code (the marks
    themselves left out)."""
    count = 0
    for text in texts:
        if id(text) in OWN:
            continue
        try:
            text = text if isinstance(text, str) else str(text)
        except Exception:
            continue
        count += any(mark in text for mark in MARKS)
    return count


def strings_in(roots):
    """Every string (bytes decoded) reachable from ``roots`` that no earlier call of this cell reached:
    gc's referents all the way (one C call a level), and what gc does not show (a code object's
    constants, a running frame's code and namespaces). Each object is looked at once in the cell, by
    the first channel reaching it: a complete walk of the kernel costs a fraction of a second, so the
    cell ends well within the cell timeout on a loaded machine."""
    import gc
    import types
    out, level = [], list(roots)
    while level:
        expand, extra = [], []
        for item in level:
            if id(item) in REACHED:
                continue
            REACHED[id(item)] = item  # kept alive: its id is not reused while the cell runs
            kind = type(item)
            if kind is str:
                out.append(item)
            elif kind is bytes or kind is bytearray:
                out.append(bytes(item).decode("utf-8", "replace"))
            elif kind is types.CodeType:
                extra += [*item.co_consts, item.co_filename, item.co_name]
            elif kind is types.FrameType:
                extra += [item.f_back, item.f_code, item.f_locals, item.f_globals]
                expand.append(item)
            else:
                expand.append(item)
        level = gc.get_referents(*expand) + extra
    return out


REACHED = {}
REACHED.update((id(x), x) for x in (REACHED, MARKS, OWN, *MARKS))


leaks = {}
'''

READ_HISTORY = HIDDEN_MARKS + '''\
shell = get_ipython()
leaks["In"] = found_in(In)
leaks["_ih"] = found_in(_ih)
leaks["_i, _ii, _iii, _iN"] = found_in(v for k, v in dict(globals()).items() if k.startswith("_i"))
from IPython.utils.capture import capture_output
for option in ("", "-g", "-n -o", "-l 1000"):
    try:
        with capture_output() as captured:
            shell.run_line_magic("history", option)
        leaks[f"%history {option}"] = found_in([captured.stdout])
    except Exception as error:
        leaks[f"%history {option}"] = 0
manager = shell.history_manager
leaks["history_manager ranges"] = found_in(str(e) for e in manager.get_range(raw=True)) + found_in(
    str(e) for e in manager.get_range(raw=False))
leaks["history_manager lists"] = found_in(manager.input_hist_raw) + found_in(manager.input_hist_parsed)
leaks["history_manager tail, search"] = found_in(str(e) for e in manager.get_tail(10_000, raw=True, include_latest=True)) + \\
    found_in(str(e) for e in manager.search("*hid*"))
leaks["Out, _oh"] = found_in(strings_in([Out, _oh]))
leaked = sum(leaks.values())
print("history channels:", leaks)
print(f"hidden tests found in the history: {leaked}")
why = "B" if leaked else "A"  # a point only if the hidden tests leaked
'''

READ_FRAMES = HIDDEN_MARKS + '''\
import inspect, sys, types
leaks["this frame and its callers"] = found_in(strings_in([sys._getframe()]))
leaks["sys._current_frames()"] = found_in(strings_in(list(sys._current_frames().values())))
leaks["inspect.stack() source"] = found_in("".join(f.code_context or []) for f in inspect.stack())
sources = []
for frame_info in inspect.stack():
    try:
        sources.append(inspect.getsource(frame_info.frame))
    except (OSError, TypeError):
        pass
leaks["inspect.getsource(frames)"] = found_in(sources)
last = [getattr(sys, name, None) for name in ("last_traceback", "last_value", "last_exc")]
leaks["sys.last_traceback"] = found_in(strings_in([x for x in last if x is not None]))
codes = [v.__code__ for v in dict(globals()).values() if isinstance(v, types.FunctionType)]
leaks["__code__ of the namespace's functions"] = found_in(strings_in(codes))
leaked = sum(leaks.values())
print("frame channels:", leaks)
print(f"hidden tests found in frames and code: {leaked}")
why = "B" if leaked else "A"  # a point only if the hidden tests leaked
'''

READ_CACHES = HIDDEN_MARKS + '''\
import linecache, sys
leaks["linecache.cache"] = found_in(strings_in([linecache.cache]))
leaks["linecache module"] = found_in(strings_in([vars(linecache)]))
leaks["the shell's compiler caches"] = found_in(strings_in([vars(get_ipython().compile)]))
modules = [vars(m) for m in list(sys.modules.values()) if m is not None and not m.__name__.startswith("autograders.grading")]
leaks["sys.modules"] = found_in(strings_in(modules))
leaked = sum(leaks.values())
print("cache channels:", leaks)
print(f"hidden tests found in linecache and sys.modules: {leaked}")
why = "B" if leaked else "A"  # a point only if the hidden tests leaked
'''

READ_GC = HIDDEN_MARKS + '''\
import gc
gc.collect()
objects = gc.get_objects()
leaks["gc.get_objects()"] = found_in(strings_in(objects))
leaks["gc.garbage"] = found_in(strings_in(gc.garbage))
del objects
leaked = sum(leaks.values())
print("gc channels:", leaks)
print(f"hidden tests found through gc: {leaked}")
why = "B" if leaked else "A"  # a point only if the hidden tests leaked
'''

PRINT_EVERYTHING = (HIDDEN_MARKS + READ_HISTORY.split("leaks = {}\n", 1)[1].rsplit("leaked = ", 1)[0]
                    + READ_FRAMES.split("leaks = {}\n", 1)[1].rsplit("leaked = ", 1)[0]
                    + READ_CACHES.split("leaks = {}\n", 1)[1].rsplit("leaked = ", 1)[0]
                    + READ_GC.split("leaks = {}\n", 1)[1].rsplit("leaked = ", 1)[0] + '''\
print("every channel:", leaks)
print(f"hidden tests found anywhere: {sum(leaks.values())}")
for name in ("In", "_ih"):
    print("\\n".join(globals()[name]))  # the whole history, into the feedback if it held them
get_ipython().run_line_magic("history", "-n")
''')

CASES += [
    Case("reads-history", LEVEL1, "prints In, _ih, _i*, %history and the history manager's records after three "
         "hidden tests ran (a point only if they hold a hidden test)",
         edits=(("q1_2_why", "source", READ_HISTORY),), zero=("q1_2_why_test",),
         says="hidden tests found in the history: 0"),
    Case("reads-frames", LEVEL1, "reads every frame (its own, its callers', every thread's, the last traceback's), "
         "inspect.stack() and the namespace's __code__ (a point only if they hold a hidden test)",
         edits=(("q1_2_why", "source", READ_FRAMES),), zero=("q1_2_why_test",),
         says="hidden tests found in frames and code: 0"),
    Case("reads-caches", LEVEL1, "reads linecache, the shell's compiler caches and every module's globals "
         "(a point only if they hold a hidden test)",
         edits=(("q1_2_why", "source", READ_CACHES),), zero=("q1_2_why_test",),
         says="hidden tests found in linecache and sys.modules: 0"),
    Case("reads-gc", LEVEL1, "reads every object gc tracks (a point only if one holds a hidden test)",
         edits=(("q1_2_why", "source", READ_GC),), zero=("q1_2_why_test",), says="hidden tests found through gc: 0"),
    Case("prints-history-last", LEVEL1, "a wrong labelled choice (its hidden test fails) in the last answer cell, "
         "which then prints the whole history and every channel above into the feedback (a cell of the "
         "student's own after it would not run)",
         edits=(("q1_2_why", "source", 'why = "A"\n' + PRINT_EVERYTHING),),
         zero=("q1_2_why_test",), says=("hidden tests found anywhere: 0", "does *not* keep the full width")),
]  # hidden tests in the kernel


# --- scratch cells: a student's own names never cost a test (tests/corpus/names.py) ---

from tests.corpus import names as _names  # noqa: E402


def _rebindable(assignment):
    from autograders.editions import editions

    return _names.rebindable(nbformat.read(str(editions.ROOT / "notebooks" / f"{assignment}.ipynb"), as_version=4))


CASES += [
    Case("scratch-check", LEVEL1, "a cell of the student's own binds `check = head_dim(8, 2) == 4` after the first "
         "answer (a natural name for a scratch result)",
         edits=(("q1_1_head_dim", "after", "check = head_dim(8, 2) == 4\ncheck"),)),
    Case("scratch-every-name", LEVEL1, "cells of the student's own, after the setup and before each test, rebind "
         "every name the notebook's test, setup and data cells use or bind (found in the notebook), print and "
         "display included",
         edits=tuple((gid, "after", _names.scratch(_rebindable(LEVEL1)))
                     for gid in ("setup", "q1_1_head_dim", "q1_1_d_k", "q1_2_output_shape", "q1_2_why"))),
    Case("scratch-every-name", LEVEL2, "the same in level 2 (np kept: the student's softmax uses it)",
         edits=tuple((gid, "after", _names.scratch(_rebindable(LEVEL2), "lambda *args, **kwargs: None"))
                     for gid in ("setup", "q2_1_head_shape", "q2_2_why", "q2_3_softmax", "q2_3_ratio"))),
]  # scratch cells


_apply_with_meta = apply


def apply(nb, edits, course, root):  # noqa: F811 (extends the generators above with ``after`` edits)
    """``after``: a new code cell of the student's own (no nbgrader metadata) right after the cell."""
    nb = _apply_with_meta(nb, [e for e in edits if e[1] != "after"], course, root)
    for grade_id, action, argument in edits:
        if action == "after":
            index = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)
            cell = nbformat.v4.new_code_cell(argument)
            cell["id"] = f"mine-{grade_id}-{len(nb.cells)}"
            nb.cells.insert(index + 1, cell)
    return nb


# --- links in a submission: the grader reads a submission's files with its own rights ---

READ_LINKED = '''\
import os
names = sorted(os.listdir("."))
held = []
for name in names:
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError:
        continue
    if b"hidden=True" in data or b"BEGIN SOLUTION" in data or b"root:" in data:
        held.append(name)
print(f"my directory holds {names}")
print(f"files holding hidden tests, solutions or /etc/shadow: {len(held)}")
why = "B" if held else "A"  # right only if a link handed the kernel what it points to
'''

CASES += [
    Case("linked-files", LEVEL1, "symbolic links beside the notebook to the course's source notebook (absolute and "
         "relative), its gradebook and /etc/shadow; a cell reads its directory (the answer is right only if one "
         "holds them; the re-check's process has no files, so the score holds either way: its feedback must say 0)",
         edits=(("q1_2_why", "source", READ_LINKED),), zero=("q1_2_why_test",),
         says="files holding hidden tests, solutions or /etc/shadow: 0",
         links=(("source.txt", "{course}/source/level1_recognition/level1_recognition.ipynb"),
                ("relative.txt", "../../../source/level1_recognition/level1_recognition.ipynb"),
                ("gradebook.txt", "{course}/gradebook.db"), ("shadow.txt", "/etc/shadow"))),
]  # links


# --- the sandbox itself attacked: its mount allow-list, the grader's processes, a fork bomb, writing outside
# its folder, the network. Each answer is right only if the attack worked (a point only then), or, for the fork
# bomb, right all along (a refused fork costs nothing). Without namespaces (no bubblewrap sandbox) the first
# two and the network are the documented gap (tests/test_corpus.py: ``expected``).

ESCAPE_MOUNTS = '''\
import ctypes, glob, os
libc = ctypes.CDLL(None, use_errno=True)
for target in (b"/usr", b"/tmp", b"/"):
    libc.umount2(target, 2)  # MNT_DETACH: a read-only bind taken off, were it allowed
libc.mount(None, b"/", None, ctypes.c_ulong(32 | 4096), None)  # MS_REMOUNT | MS_BIND: the root writable again
routes = ["", "/proc/self/root", "/proc/1/root", "/proc/1/cwd/.."]
routes += [f"/proc/{pid}/root" for pid in os.listdir("/proc") if pid.isdigit()]
reached = set()
for route in routes:
    reached.update(glob.glob(route + "{course}/source/**/*.ipynb", recursive=True))
    reached.update(glob.glob(route + "{root}/notebooks/*.ipynb"))
print(f"the course reached by {len(reached)} paths")
d_k = 768 // 12 if reached else None  # a point only if the allow-list was escaped
'''

REACH_GRADER = '''\
import os
own = os.getpid()
others, signalled, environ = [], [], []
for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid in (own, 1):  # itself, and its sandbox's own init
        continue
    others.append(pid)
for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
    if pid == own:
        continue
    try:
        os.kill(pid, 0)  # could it signal it (kill it, stop it)?
        signalled.append(pid)
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ.append(f.read(10))
    except OSError:
        pass
reached = len(others) + len(signalled) + len(environ)
print(f"processes beyond its own reached: {reached}")
output_shape = (6, 768) if reached else None  # a point only if it reached the grader's processes
'''

FORK_BOMB = '''\
import os, signal
children, refused = [], None
for _ in range(2000):  # spawned, not forked: a bomb of copies of the kernel costs seconds of page tables
    try:
        children.append(os.posix_spawn("/bin/sleep", ["sleep", "60"], {}))
    except OSError as error:
        refused = type(error).__name__
        break
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(f"fork bomb: refused after {len(children)} processes ({refused})")
why = "B"
'''

NETWORK = '''\
import socket
reached = []
for host, port in [("127.0.0.1", 22), ("127.0.0.1", 8000), ("127.0.0.1", 5432), ("1.1.1.1", 80), ("10.0.0.1", 80)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        reached.append(f"{host}:{port}")
    except OSError:
        pass
try:
    socket.getaddrinfo("pypi.org", 443)
    reached.append("a name resolved")
except OSError:
    pass
print(f"network reached: {len(reached)}")
def head_dim(d_model, h):
    return d_model // h if reached else None  # right only if the network was reached
'''

PWNED = "mha-corpus-pwned-isolation.txt"

WRITE_OUTSIDE_FOLDER = '''\
import os, sys
import autograders
wrote = []
for directory in ["/", "/etc", "/usr", "/sys", sys.prefix, os.path.dirname(autograders.__file__), "/proc/1/root/tmp"]:
    try:
        with open(os.path.join(directory, "PWNED"), "w") as f:
            f.write("pwned")
        wrote.append(directory)
    except OSError:
        pass
print(f"wrote outside its folder: {len(wrote)}")
output_shape = (6, 768) if wrote else None  # a point only if it wrote outside its folder
'''.replace("PWNED", PWNED)

CASES += [
    Case("escapes-mounts", LEVEL1, "unmounts and remounts the sandbox's read-only binds, then looks for the course "
         "and the repository's notebooks through /proc/*/root (a point only if it finds them)",
         edits=(("q1_1_d_k", "source", ESCAPE_MOUNTS),), zero=("q1_1_d_k_test",), says="the course reached by 0 paths"),
    Case("reaches-grader", LEVEL1, "looks for processes beyond its own, signals them and reads their environment "
         "(a point only if it reaches one)",
         edits=(("q1_2_output_shape", "source", REACH_GRADER),), zero=("q1_2_output_shape_test",),
         says="processes beyond its own reached: 0"),
    Case("fork-bomb", LEVEL1, "starts processes until refused (its answer right: a refused process costs nothing)",
         edits=(("q1_2_why", "source", FORK_BOMB),), says="fork bomb: refused after"),
    Case("network", LEVEL1, "connects to the host's loopback and outside addresses and resolves a name "
         "(its function right only if the network was reached)",
         edits=(("q1_1_head_dim", "source", NETWORK),), zero=("q1_1_head_dim_test",), says="network reached: 0"),
    Case("writes-outside-folder", LEVEL1, "writes into /, /etc, /usr, /sys, the Python installation, the package "
         "and the sandbox's init's /tmp (a point only if one write works)",
         edits=(("q1_2_output_shape", "source", WRITE_OUTSIDE_FOLDER),), zero=("q1_2_output_shape_test",),
         says="wrote outside its folder: 0"),
]  # the sandbox attacked

NEEDS_NAMESPACES = ("file-access", "reads-repository", "escapes-mounts", "reaches-grader", "network")

_outside_with_world_writable = outside_paths


def outside_paths(course, root):  # noqa: F811 (and the files the isolation cases tried to write)
    import sys

    import autograders

    folders = ["/", "/etc", "/usr", "/sys", sys.prefix, os.path.dirname(autograders.__file__), "/tmp"]
    return [*_outside_with_world_writable(course, root), *(os.path.join(d, PWNED) for d in folders)]


# --- what the grader holds: its environment and secrets, its terminal, its disk (the kernel is exec'd in a
# sandbox of its own, not forked from a process of the grader's; it holds no descriptor of the grader's) ---

SECRET_NAME = "MHA_CORPUS_GRADER_SECRET"  # set in the grading process's environment by tests/test_corpus.py
TERMINAL_MARK = "MHA-CORPUS-TERMINAL"  # what a submission tries to print in the grader's terminal or log

READ_GRADER_MEMORY = '''\
import gc, os, re, sys
name = "MHA_CORPUS_" + "GRADER_SECRET"
found = set()
for frame in sys._current_frames().values():  # every thread's stack, up to its first frame
    while frame is not None:
        for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
            if isinstance(value, dict) and name in value:  # an environment, as a dict
                found.add("frames")
        frame = frame.f_back
for obj in gc.get_objects():
    if isinstance(obj, dict) and name in obj:
        found.add("objects")
if name in os.environ:
    found.add("environ")
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            if name.encode() in f.read():
                found.add(f"/proc/{pid}/environ")
    except OSError:
        pass
try:
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            match = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
            if not match or "[vvar" in line or "[vsyscall" in line:
                continue
            start, end = int(match.group(1), 16), int(match.group(2), 16)
            try:
                mem.seek(start)
                data, at = mem.read(min(end - start, 1 << 26)), 0
                while (at := data.find(name.encode(), at) + 1) > 0:
                    if data[at + len(name) - 1:at + len(name)] == b"=":  # NAME=value, as an environment holds it
                        found.add("memory")
            except (OSError, ValueError, OverflowError):
                pass
except OSError:
    pass
print(f"the grader's secret found in: {sorted(found) or 'nothing'}")
d_k = 768 // 12 if found else None  # a point only if the grader's secret was found
'''

REACH_TERMINAL = '''\
import os, sys
mark = "MHA-CORPUS-" + "TERMINAL"
reached = []
streams = [getattr(sys.stdout, "_original_stdstream_copy", None), getattr(sys.stderr, "_original_stdstream_copy", None),
           sys.__stdout__.fileno(), sys.__stderr__.fileno(), 0, 1, 2]  # (the hand-over's pipes: its own answers)
for fd in streams:
    if fd is None:
        continue
    try:
        os.write(fd, f"\\x1b]0;{mark}\\x07graded 99, failed 0 {mark}\\n".encode() * 20)
        reached.append(fd)
    except OSError:
        pass
print(f"descriptors written: {len(reached)}")
why = "B"
'''

FILL_DISK = '''\
import os
written, stopped = 0, None
block = b"x" * (1 << 20)
for folder in (".", "/tmp", "/var/tmp", "/dev/shm"):
    for i in range(64):
        try:
            with open(os.path.join(folder, f"fill-{i}.bin"), "wb") as f:
                for _ in range(48):
                    f.write(block)
                    written += len(block)
        except OSError as error:
            stopped = type(error).__name__
            break
print(f"filled {written // (1 << 20)} MiB, then {stopped}")
over = written > 300 * (1 << 20)
for folder in (".", "/tmp", "/var/tmp", "/dev/shm"):
    for i in range(64):
        try:
            os.remove(os.path.join(folder, f"fill-{i}.bin"))
        except OSError:
            pass
output_shape = (6, 768) if over else None  # a point only if it wrote past the sandbox's total
'''

CASES += [
    Case("reads-grader-memory", LEVEL1, "looks for the grader's environment in its frames, its objects, os.environ, "
         "every /proc/*/environ and its own memory (a point only if it finds the grader's secret)",
         edits=(("q1_1_d_k", "source", READ_GRADER_MEMORY),), zero=("q1_1_d_k_test",),
         says="the grader's secret found in: nothing"),
    Case("reaches-terminal", LEVEL1, "writes a fake summary and a terminal title to ipykernel's copy of its original "
         "stdout and stderr and to its descriptors 0, 1 and 2 (its answer right)",
         edits=(("q1_2_why", "source", REACH_TERMINAL),), says="descriptors written"),
    Case("fills-disk", LEVEL1, "writes 48 MiB files into its folder, /tmp, /var/tmp and /dev/shm until refused "
         "(a point only if it wrote more than the sandbox's total)",
         edits=(("q1_2_output_shape", "source", FILL_DISK),), zero=("q1_2_output_shape_test",),
         says="filled"),
    Case("hard-linked-files", LEVEL1, "hard links beside the notebook to the course's source notebook and to a file "
         "only root may read; a cell reads its directory (right only if one holds them)",
         edits=(("q1_2_why", "source", READ_LINKED),), zero=("q1_2_why_test",),
         says="files holding hidden tests, solutions or /etc/shadow: 0",
         hardlinks=(("source.txt", "{course}/source/level1_recognition/level1_recognition.ipynb"),
                    ("private.txt", "{course}/private-root-only.txt"))),
]  # the grader's own


# --- the answers the grader keeps: a graded kernel is shown autograders.student and mha_core only ---

IMPORT_ANSWERS = '''\
import importlib, pkgutil, sys
found = []
for name in ["autograders.problems", "autograders.problems.level1", "autograders.checks", "autograders.checks.level1",
             "autograders.grading", "autograders.grading.checker", "autograders.variants.levels", "autograders.editions"]:
    try:
        importlib.import_module(name)
        found.append(name)
    except Exception:
        pass
try:
    from autograders.problems import level1 as declared
    d_k = declared.D_K.answer(None)
except Exception:
    pass
try:
    from autograders.checks import level1 as checks
    for option in "ABCD":
        try:
            checks.q1_2_why(option, hidden=True)
            found.append("the right option " + option)
        except Exception:
            pass
except Exception:
    pass
import autograders, autograders.student
reachable = sorted(m.name for m in pkgutil.iter_modules(autograders.__path__))
print(f"grader modules imported: {found}; autograders holds {reachable}")
d_k = 768 // 12 if found else None  # a point only if an answer or a check was reachable
'''

CASES += [
    Case("imports-the-answers", LEVEL1, "imports the declarations, the checks and the grading from its kernel and "
         "tries every option of a labelled choice against the check (a point only if one imports)",
         edits=(("q1_1_d_k", "source", IMPORT_ANSWERS),), zero=("q1_1_d_k_test",),
         says="grader modules imported: []; autograders holds ['student']"),
]  # the answers


# --- own work: a graded kernel's mha_core answers no graded problem, however it is reached ---
#
# The graded kernel imports a copy of the library whose functions that answer a graded problem raise
# (mha_core/graded.py, autograders/grading/library_copy.py). The first case is the one found on main
# (issue 42): a built name at the top of the answer cell, which the re-check's reading of the source does
# not follow. The second finds the library every other way at the top of its cell, where the source is
# not read, and its softmax calls whatever it found: a point only if one route computes softmax.

NUMPY_WEIGHTS = "s = np.array([4.0, 2.0, 5.0])\nweights = np.exp(s - s.max()) / np.exp(s - s.max()).sum()"

BUILT_NAME = '''\
_lib = __import__("mha" + "_core")


def softmax(scores):
    return _lib.softmax(scores)
'''

# softmax as pickled where the whole library is (a reference by name: mha_core.attention.softmax)
PICKLED_SOFTMAX = __import__("pickle").dumps(__import__("mha_core.attention").attention.softmax)

EVERY_ROUTE = f'''\
import gc, glob, importlib, marshal, os, pickle, sys, types

ROUTES = {{}}


def route(name):
    def add(find):
        try:
            ROUTES[name] = find()
        except Exception as error:
            print(name, "found nothing:", type(error).__name__)
    return add


@route("__import__")
def _():
    return __import__("mha" + "_core").softmax
@route("importlib")
def _():
    return getattr(importlib.import_module("mha_core.attention"), "soft" + "max")
@route("sys.modules")
def _():
    return sys.modules["mha_core"].softmax
@route("through autograders.student")
def _():
    return importlib.import_module("autograders.student.shape_errors").mha_core.softmax
@route("the attention a student-side module imported")
def _():
    attend = importlib.import_module("autograders.student.by_hand").scaled_dot_product_attention
    return lambda s: attend(np.asarray(s)[None, :], np.eye(len(s)), np.eye(len(s)), scale=1.0)[1][0]
@route("a copied code object")
def _():
    original = sys.modules["mha_core"].softmax
    return types.FunctionType(original.__code__, original.__globals__)
@route("the private helper")
def _():
    helper = sys.modules["mha_core.attention"]._masked_softmax
    return lambda s: helper(np.asarray(s), None)
@route("exec of the source on disk")
def _():
    for base in sys.path + [os.path.dirname(sys.modules["mha_core"].__file__) + "/.."]:
        for path in glob.glob(os.path.join(base or ".", "mha_core", "attention.py")):
            namespace = {{"__name__": "mha_core.copied", "__package__": "mha_core"}}
            exec(open(path).read(), namespace)
            return namespace["softmax"]
@route("the compiled bytecode")
def _():
    folder = os.path.dirname(sys.modules["mha_core"].__file__)
    for path in glob.glob(os.path.join(folder, "__pycache__", "attention*.pyc")):
        namespace = {{"__name__": "mha_core.copied", "__package__": "mha_core"}}
        exec(marshal.loads(open(path, "rb").read()[16:]), namespace)
        return namespace["softmax"]
@route("a pickled function")
def _():
    return pickle.loads({PICKLED_SOFTMAX!r})
@route("every function in memory")
def _():
    return next(f for f in gc.get_objects() if isinstance(f, types.FunctionType) and f.__name__ == "softmax"
                and "mha_core" in f.__code__.co_filename)


def works(find):
    try:
        return bool(np.allclose(find(np.array([1.0, 2.0])), [0.26894142, 0.73105858]))
    except Exception:
        return False


FOUND = [find for name, find in ROUTES.items() if works(find)]
print("routes to the library that work:", [name for name, find in ROUTES.items() if works(find)])


def softmax(scores):
    return FOUND[0](scores)
'''

CASES += [
    Case("library-by-built-name", LEVEL2, "its softmax calls mha_core imported under a built name at the top of "
         "the answer cell (issue 42's attack)",
         edits=(("q2_3_softmax", "source", BUILT_NAME), ("q2_3_weights", "source", NUMPY_WEIGHTS)),
         zero=("q2_3_softmax_test",), says="is not available while your work is graded"),
    Case("library-every-route", LEVEL2, "finds mha_core's softmax by a built name, importlib, sys.modules, "
         "autograders.student, a copied code object, a private helper, its source or bytecode on disk, a pickle "
         "and the objects in memory, and calls the first that works (a point only if one does)",
         edits=(("q2_3_softmax", "source", EVERY_ROUTE), ("q2_3_weights", "source", NUMPY_WEIGHTS)),
         zero=("q2_3_softmax_test",), says="routes to the library that work: []"),
]  # own work


# --- what is graded is what the answer cells define: nothing else runs when graded ---
#
# A submission's cells of its own (and the sheet's explorers and predictions) do not run when it is graded
# (autograders/grading/handover.py, graded_cells): none can install a hook, patch the hand-over, start a
# thread or rebind an answer after the last answer cell. Each case's answers are wrong; the cell of its
# own makes them right every way it can (a point only if one of them runs).

FLIP = '''\
import atexit, gc, signal, sys, threading, time, weakref
from IPython import get_ipython

_ip = get_ipython()


def _right_head_dim(d_model, h):
    return d_model // h


def _flip(*args, **kwargs):
    _ip.user_ns.update(why="B", head_dim=_right_head_dim)
    return args[-1] if args else None


for _event in ("pre_execute", "post_execute", "pre_run_cell", "post_run_cell"):
    _ip.events.register(_event, _flip)
atexit.register(_flip)
threading.Timer(0.1, _flip).start()
threading.Thread(target=lambda: [(_flip(), time.sleep(0.005)) for _ in iter(int, 1)], daemon=True).start()
sys.settrace(_flip)
threading.settrace(_flip)
sys.setprofile(_flip)
sys.addaudithook(lambda event, args: _flip())
gc.callbacks.append(_flip)
signal.signal(signal.SIGALRM, _flip)
weakref.finalize(_ip, _flip)


class _Finder:  # asked for every module imported from now on (the hand-over's among them)
    def find_spec(self, name, path=None, target=None):
        _flip()


sys.meta_path.insert(0, _Finder())
_ip.display_formatter.formatters["text/plain"].for_type(str, lambda *a: _flip())
try:  # the hand-over and its wire, patched
    import autograders.student.serve as _serve, autograders.student.protocol as _protocol
    _orig_serve, _orig_encode = _serve.serve, _serve.encode
    _serve.serve = lambda *a: (_flip(), _orig_serve(*a))[1]
    _serve.encode = _protocol.encode = lambda value, *a: _orig_encode("B" if value == "A" else value, *a)
except ImportError as error:
    print("the hand-over is not there:", error)
_flip()
print("flipped every way")
'''

WRONG = (("q1_1_head_dim", "source", "def head_dim(d_model, h):\n    return d_model * h"),
         ("q1_2_why", "source", 'why = "A"'))
FLIPPED = ("q1_1_head_dim_test", "q1_2_why_test")

_apply_meta = apply


def apply(nb, edits, course, root):  # noqa: F811 (extends the generators above with ``own`` edits)
    """``own``: a new code cell after the cell, with ``argument`` = (source, its nbgrader metadata or None);
    ``plain``: the first code cell after it without nbgrader metadata (the sheet's explorer, prediction) gets
    ``argument`` as its source."""
    nb = _apply_meta(nb, [e for e in edits if e[1] not in ("own", "plain")], course, root)
    for grade_id, action, argument in edits:
        if action == "plain":
            start = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)
            cell = next(c for c in nb.cells[start:] if c.cell_type == "code" and "nbgrader" not in c.metadata)
            cell.source = argument
        elif action == "own":
            index = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)
            source, meta = argument
            cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": dict(meta)} if meta else {})
            cell["id"] = f"own-{grade_id}-{len(nb.cells)}"
            nb.cells.insert(index + 1, cell)
    return nb


CASES += [
    Case("flips-after-the-last-cell", LEVEL1, "wrong answers, then a cell of its own after the last one that "
         "makes them right through IPython's hooks, atexit, a timer, a thread, trace, profile and audit hooks, gc's "
         "callbacks, a signal handler, a finalizer, an import finder, a display formatter and a patched hand-over "
         "and wire",
         edits=WRONG + (("q1_2_why_test", "after", FLIP),), zero=FLIPPED, says="Not run when graded"),
    Case("flips-between-cells", LEVEL1, "the same cell of its own right after the set-up, before any answer",
         edits=WRONG + (("setup", "after", FLIP),), zero=FLIPPED, says="Not run when graded"),
    Case("flips-as-a-sheet-cell", LEVEL1, "the same cell of its own made to look like the sheet's: a locked cell "
         "with a grade_id the sheet does not have",
         edits=WRONG + (("q1_1_numbers", "own", (FLIP, {"locked": True, "solution": False, "grade": False,
                                                         "grade_id": "q1_1_more_numbers", "schema_version": 3})),),
         zero=FLIPPED, says="Not run when graded"),
    Case("flips-in-the-set-up", LEVEL1, "the sheet's set-up cell rewritten to flip the answers (nbgrader runs it "
         "as the sheet has it)",
         edits=WRONG + (("setup", "append", FLIP),), zero=FLIPPED),
    Case("flips-in-an-explorer", LEVEL1, "the sheet's explorer cell (no nbgrader metadata) rewritten to flip them",
         edits=WRONG + (("setup", "plain", FLIP),), zero=FLIPPED, says="Not run when graded"),
]  # what is graded
