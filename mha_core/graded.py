"""What of mha_core answers a graded problem, declared once, and what stands in for it while work is graded.

Every graded function problem asks for something this library computes: 1.1 ``head_dim``, 2.3
``softmax``, 3.1 ``attention_cost`` (``flop_count``), 3.3 ``count_distinct_heads`` (a layer's heads),
3.4 ``max_rank`` (the heads' scores), 4.1 ``parameter_count``, 4.3 ``multi_head_attention`` (with
``split_heads``, ``concat_heads``), 4.6 ``masked_softmax``, 4.7 ``attention_in_blocks`` and 5.2
``attention_output`` (``scaled_dot_product_attention``). When a submission is graded, its kernel imports
a copy of this package (built by ``autograders/grading/library_copy.py``, bound where ``mha_core`` is)
in which

- each module of :data:`ANSWERS`, whatever computes those (private helpers, the layer, the heads built
  by hand, the learned model), is a stand-in: none of its code is there, and any name of it raises
  :class:`NotAvailable` when used;
- each module of :data:`VIEWS` (the figures and explorers, which compute with the first) is a stand-in
  whose names return :class:`NotDrawn`, one line of text, as a figure does with drawing off: nobody
  looks at them while work is graded;
- the modules of :data:`KEPT` (argument checks, examples, markup, this one) are copied as they are.

A student's own kernel (the practice edition, the hub) has the whole library.
"""

ANSWERS = ("attention", "counting", "layer", "heads", "learned")
VIEWS = ("plots", "widgets", "figures", "explore")
KEPT = ("__init__", "_validate", "access", "examples", "markup", "graded", "templates")

WHY = "is not available while your work is graded: the answer must compute it with numpy"


def kind(module):
    """``"answers"``, ``"views"`` or ``"kept"`` for a module of this package named relative to it
    (``"attention"``, ``"explore.softmax"``, ``"templates"``); None for one not declared."""
    top = module.split(".")[0]
    for found, modules in (("answers", ANSWERS), ("views", VIEWS), ("kept", KEPT)):
        if top in modules:
            return found
    return None


class NotAvailable(RuntimeError):
    """A function of the library that answers a graded problem, used while work is graded."""


class Withheld:
    """What a name of a module of :data:`ANSWERS` is while work is graded: using it raises."""

    def __init__(self, name):
        self._name = name

    def _refuse(self, *args, **kwargs):
        raise NotAvailable(f"{self._name} {WHY}")

    __call__ = __iter__ = __getitem__ = __len__ = __bool__ = _refuse

    def __getattr__(self, attribute):
        if attribute.startswith("_"):  # what Python and IPython look for (__wrapped__, _repr_html_...)
            raise AttributeError(attribute)
        self._refuse()

    def __repr__(self):
        return f"<{self._name}: {WHY}>"


class NotDrawn:
    """What a figure or explorer gives while work is graded: one line naming it, nothing computed."""

    def __init__(self, name):
        self._name = name

    def __iter__(self):
        return iter(())

    def __repr__(self):
        return f"{self._name}: not drawn while your work is graded"


def stand_in(module, answers):
    """The ``__getattr__`` of a stand-in for ``module`` (its full name): each public name is a
    :class:`Withheld` (``answers``) or a function returning :class:`NotDrawn`; private ones do not exist."""

    def stand_in_name(name):
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if answers:
            return Withheld(f"{module}.{name}")
        return lambda *args, **kwargs: NotDrawn(f"{module}.{name}")

    return stand_in_name
