"""The names a notebook's test cells could be made to depend on, found in the notebooks.

A student's own cell may bind any name (``check = head_dim(8, 2) == 4`` is a natural
scratch result). A test cell must depend on nothing but the answers it checks: every
other name it uses it binds itself, before using it (its checks module, imported under
a name no student has a reason to use). :func:`rebindable` lists, for one notebook, what
a scratch cell rebinds in the regression cases (``tests/test_rebinding.py`` without a
kernel, the corpus's ``scratch-*`` students with nbgrader): the names the issue named,
every name a test cell uses and every name the setup and data cells bind, found in the
notebook so that a name a future test cell uses is covered too; minus the names the
answer cells themselves use (rebinding those breaks the student's own code, rightly).
"""

import ast
import builtins

# Named in the report of the fault: a scratch result, the setup's imports, IPython's own.
ALWAYS = ("check", "checks", "np", "numpy", "mha", "mha_core", "autograders", "display", "print", "get_ipython",
          "_checks", "_form", "form")


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def is_test(cell):
    return cell.get("cell_type") == "code" and bool(_meta(cell).get("grade")) and not _meta(cell).get("solution")


def is_answer(cell):
    return cell.get("cell_type") == "code" and bool(_meta(cell).get("solution"))


def _bound(node):
    """Names ``node`` (one statement) binds at the cell's top level."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in sub.names)
    return names


def _loaded(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def loaded(source):
    """Every name ``source`` reads."""
    return _loaded(ast.parse(source))


def bound(source):
    return set().union(*[_bound(node) for node in ast.parse(source).body])


def free(source):
    """The names ``source`` reads before binding them itself (statement by statement, in order),
    builtins included: those come from the namespace it runs in, where a student may have bound them."""
    seen, found = set(), set()
    for node in ast.parse(source).body:
        found |= _loaded(node) - seen
        seen |= _bound(node)
    return found


def answers(nb):
    """The names the answer cells bind."""
    return set().union(*[bound(c.source) for c in nb.cells if is_answer(c)])


def answers_use(nb):
    """The names the answer cells read (a student's function calling ``np``, for example)."""
    return set().union(*[loaded(c.source) for c in nb.cells if is_answer(c)])


def rebindable(nb):
    """The names a scratch cell rebinds in ``nb``'s regression cases, sorted."""
    from_tests = set().union(*[loaded(c.source) | bound(c.source) for c in nb.cells if is_test(c)])
    locked = set().union(*[bound(c.source) for c in nb.cells if c.get("cell_type") == "code"
                           and _meta(c).get("locked") and not is_test(c) and not is_answer(c)])
    names = (set(ALWAYS) | from_tests | locked) - answers(nb) - answers_use(nb)
    return sorted(n for n in names if not n.startswith("__"))


def scratch(names, value="False"):
    """A student's cell binding each of ``names`` to ``value``."""
    return "\n".join(f"{name} = {value}" for name in names)


__all__ = ["ALWAYS", "answers", "answers_use", "builtins", "free", "rebindable", "scratch"]
