"""Function answers written by the student: one that calls ``mha_core`` (or ``autograders``) earns nothing.

Every graded function (1.1 ``head_dim``, 2.3 ``softmax``, 3.1 ``attention_cost``, 3.3
``count_distinct_heads``, 3.4 ``max_rank``, 4.1 ``parameter_count``, 4.3 ``multi_head_attention``,
5.2 ``attention_output``) asks for something ``mha_core`` can compute: writing it is the point.
(3.5's ``permutation_test`` is handed an attention function to test, which runs the library by design.) :func:`call` is :func:`autograders.checks.feedback.call`
with two looks at the student's function, either of which refuses it:

- **its code**: the globals it loads (and the student's own helpers those reach), its
  closure, its defaults and what it imports name no object of ``mha_core`` or
  ``autograders`` (``import mha_core as m``, ``from mha_core import softmax as s``,
  ``mha.attention.softmax``, an instance of ``mha.MultiHeadAttention``);
- **its run**: while it runs, a profile hook (``sys.setprofile``, and
  ``threading.setprofile`` for threads it starts) notes every function executed
  whose code is in one of those packages. However the function got there (an alias
  made before the check ran, ``getattr`` with a string, ``importlib``, an import
  inside the function), calling library code runs that code, and the hook sees it.
  Nothing is replaced; the hooks are restored afterwards, even on error. A function
  that switches the hook off is refused too.

Both looks run in the student's own kernel (the practice edition), where they give the reason. When work
is graded, what decides is out of the student's reach: the graded kernel's ``mha_core`` is a copy in which
every function that answers a graded problem raises ``mha_core.graded.NotAvailable``
(:mod:`autograders.grading.library_copy`), however it is reached; an answer that raised it is refused here
with that reason (:func:`withheld`).

numpy (and any other library) is allowed. The re-check (:mod:`autograders.grading.checker`)
calls a student's function through a :class:`~autograders.student.protocol.RemoteFunction` that
runs it in another process, where the student could have switched anything off: there,
the student's code cells (the re-check's session holds them, as data) are read instead
(:func:`source_references`), and the run is watched for mha_core only (the re-check's
own code, autograders, runs on this side).
"""

import ast
import dis
import functools
import os
import sys
import threading
import types

from ..problems import shared
from . import feedback
from .feedback import WrongAnswer

PACKAGES = ("mha_core", "autograders")
WHY = "Write it with numpy: this is the point of the problem"
# A remote call (the re-check) runs only the re-check's own code on the checker side.
_TRANSPORT = ("autograders",)


class NotOwnWork(WrongAnswer):
    """The answer calls the library it is asked to write; ``uses`` names what it used."""

    misconception = shared.NOT_OWN_WORK  # its tag (autograders.problems.shared)
    uses = None


def _refuse(name, uses):
    wrong = NotOwnWork(f"`{name}` {uses}. {WHY}. An answer that calls mha_core (or autograders) earns no points; "
                       "once yours works, compare it with mha_core's in a cell of your own.")
    wrong.uses = uses  # kept by pickle and copy, unlike an argument of a custom __init__
    return wrong


def call(name, func, *args, hint="", shapes=""):
    """``feedback.call(name, func, *args)``, refusing (:class:`NotOwnWork`) a ``func`` that
    refers to or runs code of ``mha_core`` or ``autograders``."""
    if func is None or func is Ellipsis or not callable(func):
        return feedback.call(name, func, *args, hint=hint, shapes=shapes)  # "no answer yet" / "should be a function"
    remote = _is_remote(func)
    uses = source_references(_remote_sources(func), name) if remote else references(func)
    if uses:
        raise _refuse(name, uses)
    watch = Watch(ignore=_TRANSPORT if remote else ())
    watched = watch.wrap(func)

    def judged(*arguments):  # outside the watch: it runs before the hook is set
        try:
            return watched(*arguments)
        except Exception as error:
            used = withheld(error)
            if used and not watch.uses:
                watch.uses = f"calls {used}, which is not available while your work is graded"
            raise

    try:
        result = feedback.call(name, judged, *args, hint=hint, shapes=shapes)
    except WrongAnswer:
        if watch.uses:  # a crash inside mha_core (e.g. called with the wrong arguments): the cause is the call
            raise _refuse(name, watch.uses) from None
        raise
    if watch.uses:
        raise _refuse(name, watch.uses)
    return result


def withheld(error):
    """The name of what the graded kernel's library refused (``mha_core.graded.NotAvailable``, as the
    hand-over rebuilds it by name) when ``error`` is that refusal, else None."""
    from mha_core.graded import WHY, NotAvailable

    message = str(error)
    if type(error).__name__ != NotAvailable.__name__ or not message.endswith(WHY):
        return None
    name = message[:-len(WHY)].strip()
    return name if name.replace(".", "").replace("_", "").isalnum() and name.startswith("mha_core") else "mha_core"


# --- what belongs to the library ------------------------------------------------------


def _library_module(module_name):
    """The package ``module_name`` belongs to, if one of :data:`PACKAGES`, else None."""
    if not isinstance(module_name, str):
        return None
    return next((p for p in PACKAGES if module_name == p or module_name.startswith(p + ".")), None)


def library_name(obj):
    """A name for ``obj`` if it is (or is bound to, or is an instance of) something from
    :data:`PACKAGES`, like ``"mha_core.attention.softmax"``; None otherwise."""
    try:
        if isinstance(obj, types.ModuleType):
            return obj.__name__ if _library_module(obj.__name__) else None
        if isinstance(obj, functools.partial):
            return library_name(obj.func) or next(filter(None, map(library_name, (*obj.args, *obj.keywords.values()))), None)
        if isinstance(obj, types.MethodType):
            return library_name(obj.__func__) or library_name(obj.__self__)
        kind = obj if isinstance(obj, type) else type(obj)
        owner = obj if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) else kind
        module = getattr(owner, "__module__", None)
        if _library_module(module):
            return f"{module}.{getattr(owner, '__qualname__', getattr(owner, '__name__', '?'))}"
    except Exception:  # noqa: BLE001 (a student's object with a strange __getattr__)
        return None
    return None


def _is_remote(func):
    """True for the re-check's handle on a function that runs in the student's process."""
    protocol = sys.modules.get("autograders.student.protocol")
    return protocol is not None and type(func) is getattr(protocol, "RemoteFunction", None)


def _remote_sources(func):
    """The student's code cells behind a re-check's remote function, or None if unknown."""
    cells = getattr(getattr(getattr(func, "remote", None), "session", None), "cells", None)
    try:
        return [source for _, source in cells]
    except (TypeError, ValueError):
        return None


is_remote, remote_sources = _is_remote, _remote_sources  # for the checks that read a remote function's cells


# --- an argument the function was asked to use -------------------------------------------


def ignores_argument(func, name, index):
    """True when the student's function ``name`` never reads its argument number ``index`` (4.7's
    ``block_size``: never read, the blocks were never made); False when it reads it, or when that cannot be
    told (no code or source to read, ``*args``, ``locals()``, an inner function using it)."""
    if _is_remote(func):
        return _source_ignores(_remote_sources(func), name, index)
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_argcount <= index:
        return False
    argument = code.co_varnames[index]
    if argument in code.co_cellvars or {"locals", "vars"} & set(code.co_names):
        return False
    for instruction in dis.get_instructions(code):
        value = instruction.argval
        if instruction.opname.startswith("LOAD") and (value == argument or isinstance(value, tuple) and argument in value):
            return False
    return True


def _source_ignores(sources, name, index):
    """:func:`ignores_argument` read from the code cells ``sources`` (the last definition of ``name``)."""
    definition = None
    for node in _cell_statements(sources):
        definition = dict(_defines(node)).get(name, definition)
    if not isinstance(definition, ast.FunctionDef):
        return False
    positional = definition.args.posonlyargs + definition.args.args
    if len(positional) <= index:
        return False
    argument = positional[index].arg
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and (node.id in ("locals", "vars") or node.id == argument and
                                           isinstance(node.ctx, ast.Load)):
            return False
    return True


def _definition_and_argument(sources, name, index):
    """The last definition of ``name`` in the code cells ``sources`` and the name of its argument number
    ``index``; (None, None) when there is no such function or argument."""
    definition = None
    for node in _cell_statements(sources):
        definition = dict(_defines(node)).get(name, definition)
    if not isinstance(definition, ast.FunctionDef):
        return None, None
    positional = definition.args.posonlyargs + definition.args.args
    return (definition, positional[index].arg) if len(positional) > index else (None, None)


def _rebound(definition, argument):
    """True when ``definition`` binds the name ``argument`` anew (``scores = scores.copy()``, a loop's target...)."""
    augmented = {id(node.target) for node in ast.walk(definition) if isinstance(node, ast.AugAssign)}
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and node.id == argument and isinstance(node.ctx, ast.Store) and \
                id(node) not in augmented:  # ``scores -= ...`` writes into the array, it binds nothing new
            return True
        if isinstance(node, (ast.FunctionDef, ast.Lambda)) and node is not definition and argument in {
                a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}:
            return True
    return False


# Functions and methods that write into the array they are given first (or as ``out=``).
_WRITES_INTO = {"copyto", "putmask", "place", "put", "fill_diagonal", "put_along_axis"}
_WRITING_METHODS = {"fill", "sort", "put", "itemset", "resize", "partition", "setfield", "__setitem__", "__iadd__"}


def mutates_argument_in_source(sources, name, index):
    """True when the definition of ``name`` in the code cells ``sources`` writes into its argument number
    ``index`` in place (``scores[~allowed] = -np.inf``, ``scores -= ...``, ``np.putmask(scores, ...)``,
    ``out=scores``, ``scores.fill(...)``) without first binding that name to something else; False when it
    does not, or when that cannot be told. The re-check's reading of what a run in this process shows by
    comparing the arguments before and after (4.6)."""
    definition, argument = _definition_and_argument(sources, name, index)
    if definition is None or _rebound(definition, argument):
        return False

    def is_argument(node):
        return isinstance(node, ast.Name) and node.id == argument

    for node in ast.walk(definition):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Subscript) and is_argument(part.value):
                        return True
                if isinstance(node, ast.AugAssign) and is_argument(target):
                    return True
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if any(k.arg == "out" and (is_argument(k.value) or isinstance(k.value, ast.Tuple) and any(
                    map(is_argument, k.value.elts))) for k in node.keywords):
                return True
            if called in _WRITES_INTO and node.args and is_argument(node.args[0]):
                return True
            if isinstance(function, ast.Attribute) and is_argument(function.value) and function.attr in _WRITING_METHODS:
                return True
    return False


# Calls that take a whole array into a product (or hand back the same numbers: their result is the argument again).
_PRODUCTS = {"dot", "matmul", "inner", "einsum", "tensordot", "vdot", "multiply", "outer"}
_SAME_NUMBERS = {"asarray", "array", "asanyarray", "ascontiguousarray", "astype", "copy", "transpose", "T",
                 "reshape", "squeeze", "atleast_2d"}


def whole_argument_in_product(sources, name, index):
    """True when the definition of ``name`` in the code cells ``sources`` multiplies its argument number
    ``index`` whole (``K @ q``, ``q @ K.T``, ``np.dot(K, q)``, ``K * q``, also through ``K = np.asarray(K)``),
    not a block of it (``K[start:stop] @ q``); False when it does not, or when that cannot be told. The
    re-check's reading of 4.7's "never all n_k scores at once", which a run in this process measures."""
    definition, argument = _definition_and_argument(sources, name, index)
    if definition is None:
        return False
    whole = {argument}

    def same_numbers(node):
        """True when ``node`` is one of ``whole``, or gives its numbers again (np.asarray(K), K.T, K.astype(...))."""
        if isinstance(node, ast.Name):
            return node.id in whole
        if isinstance(node, ast.Attribute) and node.attr in _SAME_NUMBERS:
            return same_numbers(node.value)
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if called in _SAME_NUMBERS:
                if isinstance(function, ast.Attribute) and same_numbers(function.value):
                    return True
                return bool(node.args) and same_numbers(node.args[0])
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult, ast.Sub, ast.Add)):
            return same_numbers(node.left) and not isinstance(node.right, ast.Subscript) or same_numbers(node.right) \
                and isinstance(node.op, (ast.Mult, ast.Add))
        return False

    for node in ast.walk(definition):  # the names bound to K's numbers again (in the order written, once)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if same_numbers(node.value):
                whole.add(node.targets[0].id)
            elif node.targets[0].id in whole:
                return False  # bound to something else too: cannot be told
    for node in ast.walk(definition):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.MatMult, ast.Mult)):
            if same_numbers(node.left) or same_numbers(node.right):
                if isinstance(node.op, ast.MatMult) or not (_is_number(node.left) or _is_number(node.right)):
                    return True
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            if called in _PRODUCTS:
                if any(same_numbers(a) for a in node.args):
                    return True
                if isinstance(function, ast.Attribute) and same_numbers(function.value):
                    return True
    return False


def _is_number(node):
    """A literal number, or a call or name that is plainly a scalar (np.sqrt(d_k), math.sqrt(...), len(q))."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.Call):
        function = node.func
        called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        return called in {"sqrt", "len", "float", "int", "exp", "log"}
    return False


# --- the student's source (the re-check) --------------------------------------------------

# Ways to reach a module from a string, or to run code the reader cannot see.
_INDIRECT = {"__import__", "importlib", "exec", "eval", "compile", "globals", "vars", "builtins", "__builtins__"}


def source_references(sources, name):
    """What the definition of ``name`` in the code cells ``sources`` refers to of :data:`PACKAGES`
    (following the student's own functions it calls), or a way to reach a module from a string,
    as a phrase; None if nothing, or if ``sources`` is None or holds no definition of ``name``."""
    if sources is None:
        return None
    aliases, definitions = {}, {}
    for node in _cell_statements(sources):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                if _library_module(full) or _library_module(module):
                    aliases[alias.asname or alias.name.split(".")[0]] = full
        definitions.update(_defines(node))
    if name not in definitions:
        return None
    todo, done = [name], set()
    while todo:
        current = todo.pop()
        if current in done or current not in definitions:
            continue
        done.add(current)
        definition = definitions[current]
        local = _local_names(definition)
        called = {n.func.id for n in ast.walk(definition) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        for node in ast.walk(definition):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if _library_module(module) or any(_library_module(a.name) for a in node.names):
                    return f"imports {module}"
            elif isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                    and node.value.id == "sys":
                return "uses `sys.modules`, a way to reach code a reader cannot see"
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
                if node.id in aliases:
                    full = aliases[node.id]
                    return f"refers to {full}" + (f" (as `{node.id}`)" if not full.endswith(node.id) else "")
                if node.id in _INDIRECT:
                    return f"uses `{node.id}`, a way to reach code a reader cannot see"
                target = definitions.get(node.id)
                if node.id in called or isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                            ast.Lambda)):
                    todo.append(node.id)  # the student's own function (not a value computed elsewhere)
    return None


def _cell_statements(sources):
    """The top-level statements of the code cells ``sources``, in order (a cell that does not parse is skipped)."""
    for source in sources or ():
        try:
            yield from ast.parse(source).body
        except (SyntaxError, ValueError):
            continue


def _defines(node):
    """``(name, definition)`` for each name the top-level statement ``node`` defines: a function or class, or
    a name assigned (its value)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, node
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value


def _local_names(definition):
    """Names a definition binds itself: its (and its inner functions') parameters and assignments."""
    names = set()
    for node in ast.walk(definition):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not definition:
            names.add(node.name)
    return names


# --- the function's code ----------------------------------------------------------------

_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def references(func, _seen=None):
    """What of :data:`PACKAGES` ``func`` refers to, as a phrase ("refers to mha_core.softmax
    (as `s`)", "imports mha_core"), or None. Follows the student's own helper functions
    (those defined with the same globals), not other libraries."""
    seen = set() if _seen is None else _seen
    if id(func) in seen:
        return None
    seen.add(id(func))
    own = library_name(func)
    if own:
        return f"is {own}"
    if isinstance(func, functools.partial):
        return references(func.func, seen)
    if isinstance(func, types.MethodType):
        return references(func.__func__, seen)
    if not isinstance(func, types.FunctionType):
        call_method = getattr(type(func), "__call__", None)
        return references(call_method, seen) if isinstance(call_method, types.FunctionType) else None
    bound = func.__globals__
    helpers = []
    for code in _code_objects(func.__code__):
        for instruction in dis.get_instructions(code):
            if instruction.opname == "IMPORT_NAME" and _library_module(instruction.argval):
                return f"imports {instruction.argval}"
            name = instruction.argval
            if instruction.opname not in _LOADS or name not in bound:  # a builtin, or a name never bound
                continue
            value = bound[name]
            found = library_name(value)
            if found:
                return f"refers to {found}" + (f" (as `{name}`)" if not found.endswith(name) else "")
            if isinstance(value, types.FunctionType) and value.__globals__ is bound:
                helpers.append(value)
    cells = [c.cell_contents for c in func.__closure__ or () if _filled(c)]
    for value in [*cells, *(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()]:
        found = library_name(value)
        if found:
            return f"refers to {found}"
        if isinstance(value, types.FunctionType):
            helpers.append(value)
    for helper in helpers:
        found = references(helper, seen)
        if found:
            return found
    return None


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


# --- the function's run ----------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _package_dirs():
    """{package: its directory}, of those :data:`PACKAGES` that can be found."""
    import importlib.util

    dirs = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs[os.path.realpath(location) + os.sep] = package
    return dirs


@functools.lru_cache(maxsize=4096)
def module_of_file(filename):
    """``"mha_core.attention"`` for the file of mha_core/attention.py; None outside :data:`PACKAGES`."""
    if not filename or filename.startswith("<"):
        return None
    path = os.path.realpath(filename)
    for directory, package in _package_dirs().items():
        if path.startswith(directory):
            parts = os.path.splitext(path[len(directory):])[0].split(os.sep)
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            return ".".join([package, *parts])
    return None


class Watch:
    """Runs a function with a profile hook noting the first library function it executes
    (those of the packages in ``ignore`` aside)."""

    def __init__(self, ignore=()):
        self.uses = None
        self.ignore = tuple(ignore)

    def _hook(self, frame, event, arg):
        if event != "call" or self.uses:
            return
        module = module_of_file(frame.f_code.co_filename)
        if module and _library_module(module) not in self.ignore:
            qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
            self.uses = f"calls {module}.{qualname}"

    def wrap(self, func):
        hook = self._hook

        def watched(*args):
            before, before_threads = sys.getprofile(), threading.getprofile()
            sys.setprofile(hook)
            threading.setprofile(hook)
            try:
                return func(*args)
            finally:
                changed = sys.getprofile() != hook
                sys.setprofile(before)
                threading.setprofile(before_threads)
                if changed and not self.uses:
                    self.uses = "switches off the check's watch (sys.setprofile)"

        return watched
