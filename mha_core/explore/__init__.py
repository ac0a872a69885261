"""Interactive explorers (ipywidgets 8) for the workbook's levels and the classroom demo, one module each.

Each module holds a pure function from the controls' values to the state it shows (numbers, shapes,
which cells are masked, what the readout says, the alt text: no widget, no figure) and a thin view, an
:class:`~.base.Explorer`, that draws it:

- :mod:`.shapes`: d_model, h, n, causal -> d_k, the shape table, every head's weights (Levels 1, 2, 5);
- :mod:`.softmax`: scores and a temperature -> softmax weights and entropy (Problem 2.3);
- :mod:`.flops`, :mod:`.parameters`, :mod:`.cost`: what h costs (Problems 3.1, 4.1; the demo's screen);
- :mod:`.sum_concat`: concatenate, don't sum (Problem 3.2);
- :mod:`.head_grid`: every head, own or shared projections (Problem 3.3);
- :mod:`.causal_step`: one causal query, step by step, from the model's trace (Problem 4.2);
- :mod:`.cross`: cross-attention, figure s02 (Problem 5.3);
- :mod:`.rank`: n and d_k -> the rank of the scores Q_i K_i^T (Problem 3.4);
- :mod:`.head_view`: where one word looks, every head at once (the demo);
- :mod:`.predict`: predict, then see: a figure or explorer locked until the student's prediction is
  in (the workbook's moments are its content: ``autograders.student.moments``).

Shared: :mod:`.canvas` (the figure shown as PNG and redrawn in place), :mod:`.base` (the container and
its controls). Each view's ``.controls`` (name -> widget) are kept apart from its outputs, ``.state``
holds what is shown, ``.image`` is an ``ipywidgets.Image`` of PNG bytes. Nothing here runs in a graded
cell; when drawing is switched off (:func:`mha_core.drawing`), the explorers compute their state but
draw nothing.
"""

import importlib

# Each name's module, imported when the name is first asked for: a kernel that only shows a prediction
# moment (autograders.student.moments: .predict) does not import every explorer and matplotlib's figures
# (0.6 s of CPU at each grading kernel's start, measured 2026-12-05); `from mha_core.widgets import *`
# still imports them all.
_MODULES = {  # module: the names it gives
    "causal_step": "CausalStepExplorer causal_step_explorer step_state",
    "cost": "CostExplorer cost_explorer",
    "cross": "CrossAttentionExplorer cross_attention_explorer cross_state",
    "flops": "FlopExplorer flop_explorer flop_state",
    "head_grid": "HeadGridExplorer head_grid_explorer head_grid_state",
    "head_view": "HeadViewExplorer head_view_explorer head_view_state",
    "parameters": "ParameterExplorer parameter_explorer parameter_state",
    "predict": "PredictFirst figure_view",
    "rank": "RankExplorer rank_explorer rank_state",
    "shapes": "ShapeExplorer shape_explorer shape_state",
    "softmax": "SoftmaxPlayground softmax_playground softmax_state",
    "sum_concat": "SumConcatExplorer sum_concat_explorer sum_concat_state",
}
_HOME = {name: module for module, names in _MODULES.items() for name in names.split()}


def __getattr__(name):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    return value


__all__ = [
    "CausalStepExplorer", "CostExplorer", "CrossAttentionExplorer", "FlopExplorer", "HeadGridExplorer",
    "HeadViewExplorer", "ParameterExplorer", "RankExplorer", "ShapeExplorer", "SoftmaxPlayground", "SumConcatExplorer",
    "PredictFirst", "figure_view",
    "causal_step_explorer", "cost_explorer", "cross_attention_explorer", "flop_explorer", "head_grid_explorer",
    "head_view_explorer", "parameter_explorer", "rank_explorer", "shape_explorer", "softmax_playground",
    "sum_concat_explorer",
    "cross_state", "flop_state", "head_grid_state", "head_view_state", "parameter_state", "rank_state",
    "shape_state",
    "softmax_state", "step_state", "sum_concat_state",
]
