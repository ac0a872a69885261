"""What every explorer shares: the container that keeps its controls apart from its outputs and
updates once per change (:class:`Explorer`), the controls used by several explorers, the
constructed heads' patterns, and the checks of the sentences an explorer is given.

A cell run again replaces its explorers (:func:`made_in_cell`): JupyterLab sends each cell's
execution with the cell's id, and the explorers an earlier run of that cell made are closed and
their figures let go. ipywidgets keeps every widget until it is closed, and ``Out[n]`` keeps the
object: each run of an explorer cell had kept 5-6.5 MiB more in the kernel (measured, 21 runs of one cell).

An explorer's module holds a pure function from the controls' values to the state it shows
(numbers, shapes, which cells are masked, what the readout says: no widget, no figure) and a
thin view, an :class:`Explorer`, that draws that state.
"""

import contextlib

import ipywidgets as widgets
import traitlets
from matplotlib.artist import Artist

from ..access import aria_script, live
from .canvas import one_blas_thread

PATTERNS = ("previous", "same word", "first", "pronoun")  # the constructed heads, in order


CROSS_PATTERNS = ("translation", "same position", "first")


MAX_N = 24


MAX_CROSS = 12


def word_list(name, tokens, at_least=1):
    """``tokens`` as a list of words, at least ``at_least`` of them; a clear ValueError otherwise."""
    if tokens is None or isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
        raise ValueError(f"{name} must be a list of words (e.g. 'the cat sat on the mat'.split()), got {tokens!r}")
    tokens = list(tokens)
    if len(tokens) < at_least:
        raise ValueError(f"{name} must hold at least {at_least} words, got {len(tokens)}")
    return tokens


SOURCES = [("random (untrained)", "random"), ("constructed heads", "constructed")]


def source_control(value="constructed"):
    """Random or constructed weights: radio buttons, whose state a screen reader announces."""
    if value not in ("random", "constructed"):
        raise ValueError(f"source must be 'random' or 'constructed', got {value!r}")
    return widgets.RadioButtons(options=SOURCES, value=value, description="weights",
                                tooltip="where the heads' W_Q and W_K come from", orientation="vertical")


def switch(description, off, on, value=False):
    """An on/off choice as two radio buttons (their state is announced), values False and True."""
    return widgets.RadioButtons(options=[(off, False), (on, True)], value=bool(value), description=description,
                                style={"description_width": "initial"})


def cycled_patterns(base, h):
    """One constructed pattern per head: ``base`` in order, then "random" for the heads past it."""
    return tuple(base[:h]) + ("random",) * max(0, h - len(base))


def nearest(options, value):
    """The option closest to ``value`` (the smaller one on a tie)."""
    return min(options, key=lambda o: (abs(o - value), o))


class Explorer(widgets.VBox):
    """A container of controls and outputs; ``.controls``, ``.state``, ``.image``, ``.canvas``."""

    def __init__(self, controls, outputs, canvas, **kwargs):
        self.controls = dict(controls)
        self.canvas = canvas
        self.state = {}
        self._paused = False
        super().__init__(**kwargs)
        if getattr(self, "readout", None) is not None:
            live(self.readout)  # its new values are announced
        self.script = aria_script()  # kept among the children (_with_script); a layout of parts shows it itself
        # The controls keep their own width (flex 0 0 auto): a long readout beside them wraps instead of
        # squeezing them (in JupyterLab that hid a slider's value and cut radio labels).
        self.controls_box = widgets.VBox(list(self.controls.values()), layout=widgets.Layout(flex="0 0 auto"))
        self.children = [widgets.HBox([self.controls_box, *outputs[:1]]), *outputs[1:]]
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        made_in_cell(self)

    def retire(self):
        """Close this explorer and every widget in it, and let its figure go (``Out[n]`` may keep the
        explorer itself): the cell that made it ran again. Not :meth:`close`, which ipywidgets also
        calls when an explorer is collected, and whose parts a page may still show (the demo's layouts)."""
        for widget in descendants(self):
            widget.close()
        self.canvas.release()
        for name, value in list(vars(self).items()):  # its own handles on artists and pixels
            if holds_picture(value):
                setattr(self, name, None)
        self.close()

    @traitlets.validate("children")
    def _with_script(self, proposal):
        """The children, and last the page script that names the sliders (see mha_core.access)."""
        children = tuple(proposal["value"])
        script = getattr(self, "script", None)
        return children if script is None or script in children else children + (script,)

    @property
    def image(self):
        return self.canvas.widget

    @property
    def figure(self):
        return self.canvas.figure

    @contextlib.contextmanager
    def paused(self):
        """Change several controls with one update at the end."""
        was, self._paused = self._paused, True
        try:
            yield
        finally:
            self._paused = was
        if not was:
            with self.image.hold_sync(), one_blas_thread():
                self.update()

    def _changed(self, change):
        if not self._paused:
            # the new picture and its alt text in one message: the image's view redraws once per
            # message (a new blob: URL each time), so a later alt text would show the picture again
            with self.image.hold_sync(), one_blas_thread():
                self.update(change)

    def update(self, change=None):
        raise NotImplementedError


def holds_picture(value, deep=True):
    """True for what keeps a picture alive: a matplotlib artist (a drawn text keeps its renderer and
    the renderer its pixels), a buffer of 64 KiB or more (an array, a saved region of a canvas), or a
    list, tuple, dict or plain object (one level down) that holds one."""
    if isinstance(value, Artist):
        return True
    try:
        if memoryview(value).nbytes >= 2**16:
            return True
    except TypeError:
        pass
    if isinstance(value, dict):
        return any(holds_picture(item, deep) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_picture(item, deep) for item in value)
    if deep and hasattr(value, "__dict__") and not isinstance(value, (widgets.Widget, type)):
        return any(holds_picture(item, False) for item in vars(value).values())
    return False


def descendants(box):
    """The widgets inside ``box`` (its children, theirs, and so on), not ``box`` itself."""
    for child in getattr(box, "children", ()):
        yield child
        yield from descendants(child)


_MADE = {}  # a cell's id -> (the id of its latest run, the explorers that run made)


def current_cell():
    """(the cell's id, the run's message id) of the execution under way, from the execute_request
    JupyterLab sent (its metadata's ``cellId``); None outside a kernel or without a cell id (nbclient,
    Voila, a console)."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    parent = kernel.get_parent("shell") if kernel is not None else None
    if not parent:
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    run = (parent.get("header") or {}).get("msg_id")
    return (cell, run) if cell and run else None


def made_in_cell(explorer, cell=None):
    """Note ``explorer`` as made by the cell being run (``cell``: (cell id, run id), by default
    :func:`current_cell`); retire what an earlier run of the same cell made."""
    cell = cell or current_cell()
    if cell is None:
        return
    cell_id, run = cell
    latest, made = _MADE.get(cell_id, (None, []))
    if latest != run:
        for old in made:
            old.retire()
        made = []
    _MADE[cell_id] = (run, made + [explorer])
