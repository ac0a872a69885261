"""A cell run again replaces its explorers: the ones an earlier run of the same cell made are
closed (their widgets and figure let go); other cells' explorers, and two made by one run, stay."""

import types

import IPython
import matplotlib.text
import numpy as np
import pytest

from autograders.student.sentences import SENTENCE
from mha_core import widgets
from mha_core.explore import base


@pytest.fixture(autouse=True)
def fresh_cells(monkeypatch):
    monkeypatch.setattr(base, "_MADE", {})
    monkeypatch.setenv("MHA_CORE_DRAW", "0")  # the figures are made, not drawn: what is held is the same


def is_open(widget):
    return widget.comm is not None


def test_a_cell_run_again_closes_the_explorers_its_earlier_run_made(monkeypatch):
    monkeypatch.setenv("MHA_CORE_DRAW", "1")  # drawn: a figure with Agg's pixels to let go
    first = widgets.head_grid_explorer(SENTENCE)  # it keeps its own handles on its panels and titles
    agg = first.figure.canvas
    base.made_in_cell(first, ("cell-a", "run-1"))
    inner = list(base.descendants(first))
    assert inner and is_open(first) and first.figure is not None
    second = widgets.flop_explorer()
    base.made_in_cell(second, ("cell-a", "run-2"))
    assert not is_open(first) and not any(is_open(w) for w in inner)
    assert first.figure is None and first.canvas.background is None, "the old figure is still held"
    assert agg.figure.canvas is not agg and not agg.figure.axes, "the old figure keeps its pixels or artists"
    kept = [name for name, value in vars(first).items() if base.holds_picture(value)]
    assert not kept, f"the retired explorer still holds a picture in {kept}"
    assert is_open(second) and second.figure is not None


def test_other_cells_and_the_same_run_keep_theirs():
    one, two, other = widgets.flop_explorer(), widgets.flop_explorer(), widgets.flop_explorer()
    base.made_in_cell(one, ("cell-a", "run-1"))
    base.made_in_cell(two, ("cell-a", "run-1"))  # one run made both
    base.made_in_cell(other, ("cell-b", "run-7"))
    again = widgets.flop_explorer()
    base.made_in_cell(again, ("cell-b", "run-8"))
    assert is_open(one) and is_open(two)
    assert not is_open(other) and is_open(again)


def fake_kernel(monkeypatch, parent):
    kernel = types.SimpleNamespace(get_parent=lambda channel=None: parent)
    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=kernel))


def test_the_cell_comes_from_the_execute_request_jupyterlab_sent(monkeypatch):
    fake_kernel(monkeypatch, {"header": {"msg_id": "m1"}, "metadata": {"cellId": "c1"}})
    assert base.current_cell() == ("c1", "m1")
    made = widgets.flop_explorer()
    fake_kernel(monkeypatch, {"header": {"msg_id": "m2"}, "metadata": {"cellId": "c1"}})
    widgets.flop_explorer()  # the same cell run again, through the explorer's own constructor
    assert not is_open(made)


@pytest.mark.parametrize("parent", [{}, {"header": {"msg_id": "m1"}, "metadata": {}}])
def test_without_a_cell_id_nothing_is_closed(monkeypatch, parent):
    """nbclient, Voila and a console send no cell id: every explorer stays."""
    fake_kernel(monkeypatch, parent)
    assert base.current_cell() is None
    made = [widgets.flop_explorer() for _ in range(2)]
    assert all(is_open(m) for m in made)


def test_outside_a_kernel_there_is_no_cell():
    assert base.current_cell() is None


def test_what_holds_a_picture():
    text, big, small = matplotlib.text.Text(0, 0, "q"), np.zeros((256, 256, 4), np.uint8), np.zeros(8)
    holder = types.SimpleNamespace(pixels=big)
    for value in (text, big, [small, text], {"frame": big}, holder, (holder,)):
        assert base.holds_picture(value), value
    for value in (small, [small], {"n": 4}, "a long readout " * 10_000, widgets.flop_explorer(), None):
        assert not base.holds_picture(value), type(value)
