"""How many heads fit a screen: pure arithmetic on pixels (no drawing), shared by the state of the
explorers and the figures of :mod:`mha_core.figures.screen`. Every token label is ``text_px`` high
and needs :data:`LABEL_PITCH` times that along its axis."""

import math

from .. import _validate as check

# (rows, columns) of the readable grid, most panels first.
READABLE_LAYOUTS = ((2, 4), (2, 3), (1, 4), (2, 2), (1, 3), (1, 2), (1, 1))


LABEL_PITCH = 1.15  # a token label needs this many times its font size of axis (no overlap)


def fit_head_grid(h, n, longest, box, text_px=15):
    """How many of h heads' n x n panels fit ``box`` = (width, height) pixels with readable labels.

    Every token label is ``text_px`` high and needs LABEL_PITCH times that along its axis;
    ``longest`` is the longest token's width in characters. Returns (rows, cols, panel_px,
    label_step): the most panels (at most h) whose panels hold every label; when not even
    one does, one panel labelling every ``label_step``-th token.
    """
    h, n = check.positive_int("h", h), check.positive_int("n", n)
    width, height = box
    margins = grid_margins(longest, text_px)
    need = max(n * LABEL_PITCH * text_px, 9.5 * text_px)  # and room for a two-line title
    best = None
    for rows, cols in READABLE_LAYOUTS:
        if rows * cols > h:
            continue
        panel = _panel_px(rows, cols, width, height, margins)
        if panel >= need and (best is None or rows * cols > best[0] * best[1]):
            best = (rows, cols, panel)
    if best is None:
        panel = _panel_px(1, 1, width, height, margins)
        return 1, 1, panel, math.ceil(need / panel)
    return (*best, 1)


def grid_margins(longest, fs):
    """Pixels around the panels: left, right, top, bottom, a panel's title, the gap between panels."""
    label = 0.62 * fs * longest + 8  # the longest token label (DejaVu Sans: about 0.6 em a character)
    line = 1.35 * fs
    return {"left": line + label + 4, "right": 3.5 * fs + 2 * line + 28, "top": 2 * 1.25 * (fs + 2) + 6,
            "bottom": label + line + 8, "title": 2 * 1.1 * fs + 8, "gap": 0.8 * fs}  # titles: up to 2 lines


def _panel_px(rows, cols, width, height, m):
    across = (width - m["left"] - m["right"] - (cols - 1) * m["gap"]) / cols
    down = (height - m["top"] - m["bottom"] - rows * m["title"] - (rows - 1) * m["gap"]) / rows
    return max(0.0, min(across, down))

