"""The packages' structure: no import cycles in ``autograders`` and ``mha_core``.

The import graph is read from the source with ``ast``: every import statement counts,
at module level or inside a function (a lazy import still ties the two modules together).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("autograders", "mha_core")


def module_name(path, root=ROOT):
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root=ROOT, packages=PACKAGES):
    """{dotted name: path} of every module of ``packages`` under ``root``."""
    return {module_name(path, root): path for package in packages for path in sorted((root / package).rglob("*.py"))}


def _absolute(module, level, name, is_package):
    """The absolute name of ``from <level dots><module> import ...`` written in module ``name``."""
    if not level:
        return module
    parts = name.split(".") if is_package else name.split(".")[:-1]
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def import_graph(root=ROOT, packages=PACKAGES):
    """{module: {modules of ``packages`` it imports}}: ``from a import b`` counts as an import of
    ``a.b`` when that is a module, else of ``a``."""
    known = modules(root, packages)
    graph = {}
    for name, path in known.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node.module, node.level, name, path.name == "__init__.py")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in known:  # ``import a.b.c`` of a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph):
    """The import cycles of ``graph``, each as a path ``[a, b, ..., a]`` (one per strongly connected part)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(_path_within(graph, set(part)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path_within(graph, part):
    """A cycle through the modules of one strongly connected part, as a readable path."""
    start = min(part)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & part):
            if w == start:
                return [*path, start]
            if w not in seen:
                seen.add(w)
                paths.append([*path, w])
    return sorted(part)


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_concerns_are_subpackages():
    names = set(modules())
    for package in ("autograders.checks", "autograders.editions", "autograders.grading"):
        assert package in names
    flat = sorted(n for n in names if n.count(".") == 1 and n.startswith("autograders.") and n != "autograders.__main__"
                  and not (ROOT / n.replace(".", "/")).is_dir())
    assert not flat, f"modules outside the subpackages: {flat}"


def test_the_checks_import_nothing_of_grading_or_editions():
    """What the notebooks import runs in the student's kernel: it needs no grading or editions code."""
    graph = import_graph()
    reach, todo = set(), [n for n in graph if n.startswith("autograders.checks")]
    while todo:
        for w in graph[todo.pop()] - reach:
            reach.add(w)
            todo.append(w)
    assert not {n for n in reach if n.startswith(("autograders.grading", "autograders.editions"))}


def test_the_library_imports_nothing_of_the_workbook():
    """mha_core is the maths students import and read: the workbook's content (moments, 4.4's data, the
    declarations) and its grading live in autograders, which imports the library, never the reverse."""
    graph = import_graph()
    assert {n: sorted(d for d in deps if d.startswith("autograders"))
            for n, deps in graph.items() if n.startswith("mha_core") and any(d.startswith("autograders") for d in deps)} == {}
    assert not (ROOT / "mha_core" / "explore" / "moments.py").exists() and not (ROOT / "mha_core" / "by_hand.py").exists()


def test_the_library_holds_none_of_the_workbooks_sentences():
    """The sentences the figures and explorers are drawn over are the workbook's content
    (``autograders.student.sentences``): the library takes them as arguments and writes none of them."""
    from autograders.student import sentences

    said = [sentences.SENTENCE, sentences.TOKENS[len(sentences.SENTENCE):], sentences.ENGLISH, sentences.FRENCH]
    said += [words for _, query, keys, _ in sentences.HEAD_VIEW_SENTENCES for words in (query, keys) if words]
    assert len(said) > 8
    for path in sorted((ROOT / "mha_core").rglob("*.py")):
        text = " ".join(path.read_text().split())
        for words in said:
            assert " ".join(words) not in text, f"{path.relative_to(ROOT)} writes the workbook's {' '.join(words)!r}"


def test_the_notebooks_draw_through_one_api_and_explore_through_one():
    """A notebook reaches figures through ``mha.plots`` and explorers through ``mha.widgets`` only, and these
    two faces take nothing private of what they are built with."""
    import json

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        for inner in ("mha_core.figures", "mha_core.explore", "mha.figures", "mha.explore"):
            assert inner not in text, f"{path.name} reaches {inner}: use mha.plots or mha.widgets"
    for face in ("plots", "widgets"):
        tree = ast.parse((ROOT / "mha_core" / f"{face}.py").read_text())
        private = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for a in node.names if a.name.startswith("_") and not a.name.startswith("__") and a.name != "_validate"]
        assert not private, f"mha_core/{face}.py imports private names: {private}"


def test_no_module_of_the_library_imports_another_modules_private_names():
    """A reader of ``mha_core`` follows public, documented names from one module to the next (``layer.py`` builds
    on ``attention.attention_heads``, not on its underscored helpers); ``_validate`` is the library's own checks."""
    found = []
    for path in sorted((ROOT / "mha_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__") and a.name != "_validate"]
    assert not found, f"private names imported from another module: {found}"


# --- the graph and the cycle finder themselves, on a made-up package ------------------------


def _package(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path, ("pkg",))


@pytest.mark.parametrize("lazy", [False, True], ids=["module level", "inside a function"])
def test_a_cycle_is_found_at_module_level_and_in_a_function(tmp_path, lazy):
    back = "def f():\n    from . import a\n" if lazy else "from . import a\n"
    graph = _package(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "",
                                "pkg/a.py": "from .sub.b import thing\n", "pkg/sub/b.py": "from .. import c\n",
                                "pkg/c.py": back})
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]


def test_no_cycle_where_imports_only_go_down(tmp_path):
    graph = _package(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "import pkg.b\nimport os\n",
                                "pkg/b.py": "from pkg.c import x\n", "pkg/c.py": "x = 1\n"})
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert cycles(graph) == []



# --- grading: small, and in a submission's order ---------------------------------------------

GRADING = ROOT / "autograders" / "grading"
GRADING_LINES, MODULE_LINES = 4000, 400  # issue 42: the package at most 4,000 lines, no module over 400


def line_counts(folder, root=ROOT):
    """{path under ``root``: lines} of every module under ``folder``."""
    return {path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
            for path in sorted(folder.rglob("*.py"))}


def too_large(counts, folder="autograders/grading/"):
    """What in ``counts`` ({module: lines}) is past the limits, each said in one line naming the module."""
    found = [f"{name} has {lines} lines (at most {MODULE_LINES})" for name, lines in counts.items() if lines > MODULE_LINES]
    total = sum(counts.values())
    if total > GRADING_LINES:
        largest = ", ".join(f"{name} ({lines})" for name, lines in sorted(counts.items(), key=lambda kv: -kv[1])[:3])
        found.append(f"{folder} has {total} lines (at most {GRADING_LINES}); the largest: {largest}")
    return found


def test_grading_stays_small():
    """Past these sizes a reader loses the path: split what is separable, or give a concern a package of its
    own beside ``grading/``, as the intake (``autograders/intake/``) and the report (``autograders/report/``)."""
    assert too_large(line_counts(GRADING)) == []


def path_order():
    """The modules of ``grading/`` in the order its ``__init__``'s docstring lists them (a submission's path)."""
    import re

    import autograders.grading

    doc = autograders.grading.__doc__
    start = doc.index("\n- ")
    return re.findall(r"``(\w+)``", doc[start:doc.index("\n\n", start)])


def upward_imports(order, graph, package="autograders.grading"):
    """[(module, what it imports that ``order`` lists above it)] of the modules of ``order``."""
    found = []
    for at, name in enumerate(order):
        above = [d for d in sorted(graph.get(f"{package}.{name}", ())) if d.rpartition(".")[2] in order[:at]
                 and d.startswith(f"{package}.")]
        found += [(name, above)] if above else []
    return found


def test_grading_reads_top_to_bottom():
    """``grading/__init__`` lists every module in a submission's order, and a module imports only modules listed
    below it (``standalone``, beside the command, may import any): nothing goes back up the path."""
    order = path_order()
    names = {path.stem for path in GRADING.glob("*.py")} - {"__init__", "standalone"}
    assert sorted(set(order)) == sorted(names), (f"grading/__init__'s list misses {sorted(names - set(order))}, "
                                                 f"names no module {sorted(set(order) - names)}")
    assert upward_imports(order, import_graph()) == [], "modules importing one listed above them in grading/__init__"


def test_the_size_and_order_checks_name_what_is_wrong(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    (tmp_path / "pkg" / "small.py").write_text("x = 1\n" * MODULE_LINES)
    counts = line_counts(tmp_path / "pkg", tmp_path)
    assert counts == {"pkg/big.py": MODULE_LINES + 1, "pkg/small.py": MODULE_LINES}
    assert too_large(counts) == [f"pkg/big.py has {MODULE_LINES + 1} lines (at most {MODULE_LINES})"]
    many = {f"m{i}.py": MODULE_LINES for i in range(GRADING_LINES // MODULE_LINES + 1)}
    assert too_large(many, "pkg/") == [f"pkg/ has {GRADING_LINES + MODULE_LINES} lines (at most {GRADING_LINES}); "
                                       f"the largest: m0.py ({MODULE_LINES}), m1.py ({MODULE_LINES}), m2.py ({MODULE_LINES})"]
    graph = {"autograders.grading.a": {"autograders.grading.b"}, "autograders.grading.b": {"autograders.grading.a"}}
    assert upward_imports(["a", "b"], graph) == [("b", ["autograders.grading.a"])]
    assert upward_imports(["b", "a"], graph) == [("a", ["autograders.grading.b"])]
    assert upward_imports(["a", "b"], {"autograders.grading.a": {"autograders.grading.b"}}) == []
