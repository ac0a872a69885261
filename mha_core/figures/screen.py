"""Figures that fit a projector: sizes in pixels at 72 dpi (1 point = 1 pixel), every text at least
``text_px`` pixels, one figure built once and moved, resized and relabelled in place.

- :func:`fit_head_grid` (from :mod:`.fit`): how many heads' n x n panels fit a box with every token labelled;
- :class:`ReadableHeadGrid`, :class:`ReadableHeatmap`: the head grid and one heatmap for a screen;
- :func:`min_text_px`, :func:`raise_text`: the smallest text of a figure, and raising it.
"""

import numpy as np
from matplotlib.text import Text

from .. import _validate as check
from .base import WEIGHT_LABEL, WorkbookFigure, draw_heatmap, masked, update_texts, weights_norm
from .fit import LABEL_PITCH, READABLE_LAYOUTS, grid_margins, fit_head_grid  # noqa: F401 (named here too)


def min_text_px(fig):
    """The smallest visible text of ``fig`` in pixels at its own size (font size in points · dpi / 72)."""
    sizes = [t.get_fontsize() for t in _texts(fig) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * fig.dpi / 72 if sizes else None


def _texts(fig, unseen=False):
    """The texts of ``fig`` that can be seen (with ``unseen``, also those of hidden axes): its own, its
    legends', and those of its axes (titles, tick and axis labels, legends). Quicker than ``findobj``, which
    makes every axis build its ticks."""
    yield from fig.texts
    for legend in fig.legends:
        yield from (*legend.get_texts(), legend.get_title())
    for ax in fig.axes:
        if not (unseen or ax.get_visible()):
            continue
        # The axes' own texts and its three titles (centre, left, right: ``ax.set_title(..., loc=...)``), through
        # the public ``get_children`` rather than the private ``_left_title`` / ``_right_title``.
        yield from (child for child in ax.get_children() if isinstance(child, Text))
        for axis in (ax.xaxis, ax.yaxis):
            if unseen or axis.get_visible():
                yield from (axis.label, axis.offsetText, *axis.get_ticklabels())
        legend = ax.get_legend()
        if legend is not None:
            yield from (*legend.get_texts(), legend.get_title())


# The width of a notebook's output in JupyterLab at 1280 x 720 with the file browser open (measured in
# Chromium, 2026-12-05): a wider figure is shown scaled down to it (FigureImage: max-width 100%).
LAB_OUTPUT_PX = 845
LAB_TEXT_PX = 11  # the smallest text of a figure in JupyterLab, as shown there


def shown_in_lab_px(fig):
    """The smallest text of ``fig`` in pixels as JupyterLab shows it at 1280 x 720 (scaled to its output)."""
    width, _ = fig.canvas.get_width_height()
    smallest = min_text_px(fig)
    return None if smallest is None else smallest * min(1.0, LAB_OUTPUT_PX / width)


def readable_in_lab(fig, px=LAB_TEXT_PX):
    """Raise every text of ``fig`` so that JupyterLab at 1280 x 720 shows it at least ``px`` pixels high."""
    width, _ = fig.canvas.get_width_height()
    return raise_text(fig, px * max(1.0, width / LAB_OUTPUT_PX))


def raise_text(fig, px):
    """Enlarge every text of ``fig`` smaller than ``px`` pixels to ``px`` (legends, ticks and titles too, and
    the tick labels an axis makes later, for new ticks)."""
    px = float(px)
    if px <= 0:
        raise ValueError(f"px must be a positive number of pixels, got {px}")
    points = px * 72 / fig.dpi
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            if labels and min(t.get_fontsize() for t in labels) < points:
                axis.set_tick_params(which="both", labelsize=points)
    for text in _texts(fig, unseen=True):
        if text.get_fontsize() < points:
            text.set_fontsize(points)
    return fig


class ReadableHeadGrid:
    """A head grid drawn for a screen: ``box`` = (width, height) pixels at 72 dpi (1 point = 1 pixel),
    every text at least ``text_px`` pixels. Built once with room for 8 panels; :meth:`layout` moves,
    shows and relabels the same axes for a new number of panels or tokens (nothing is rebuilt)."""

    def __init__(self, box, text_px=15, max_tokens=24):
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        width, height = (check.positive_int("box", v) for v in box)
        self.box, self.fs = (width, height), float(text_px)
        self.max_tokens = check.positive_int("max_tokens", max_tokens)
        self.figure = WorkbookFigure(figsize=(width / 72, height / 72), dpi=72, layout="none")
        norm = weights_norm()
        self.images, self.xlabels, self.ylabels = [], [], []
        pad = 4 / 72  # inches between a panel and its token labels
        for _ in range(max(r * c for r, c in READABLE_LAYOUTS)):
            ax = self.figure.add_axes((0, 0, 0.1, 0.1))
            image, _ = draw_heatmap(ax, np.zeros((1, 1)), norm=norm)
            ax.set_title("", fontsize=self.fs)
            ax.xaxis.set_visible(False)  # token labels are plain texts: no tick machinery on every redraw
            ax.yaxis.set_visible(False)
            for spine in ax.spines.values():
                spine.set_visible(False)
            below = blended_transform_factory(ax.transData, ax.transAxes) + ScaledTranslation(
                0, -pad, self.figure.dpi_scale_trans)
            left = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(
                -pad, 0, self.figure.dpi_scale_trans)
            self.xlabels.append([ax.text(0, 0, "", transform=below, rotation=90, ha="center", va="top",
                                         fontsize=self.fs, visible=False) for _ in range(self.max_tokens)])
            self.ylabels.append([ax.text(0, 0, "", transform=left, ha="right", va="center", fontsize=self.fs,
                                         visible=False) for _ in range(self.max_tokens)])
            self.images.append(image)
        self.cax = self.figure.add_axes((0, 0, 0.1, 0.1))
        bar = self.figure.colorbar(self.images[0], cax=self.cax, ticks=np.linspace(0, 1, 6))  # fixed: no locator
        bar.set_label(WEIGHT_LABEL, fontsize=self.fs)
        self.cax.tick_params(labelsize=self.fs)
        self.title = self.figure.suptitle("", fontsize=self.fs + 2, y=1 - 4 / height, va="top")
        self.xlabel = self.figure.text(0, 0, "key token (column)", fontsize=self.fs, ha="center", va="bottom")
        self.ylabel = self.figure.text(0, 0, "query token (row)", fontsize=self.fs, rotation=90, ha="left",
                                       va="center")
        self.shape = None

    def layout(self, rows, cols, panel, tokens, step=1):
        """Show rows x cols panels of ``panel`` pixels over ``tokens`` (every ``step``-th labelled)."""
        width, height = self.box
        n = len(tokens)
        if n > self.max_tokens:
            raise ValueError(f"tokens must hold at most max_tokens={self.max_tokens} tokens, got {n}")
        m = grid_margins(max(len(t) for t in tokens), self.fs)
        used_w = cols * panel + (cols - 1) * m["gap"]
        used_h = rows * (panel + m["title"]) + (rows - 1) * m["gap"]
        left = m["left"]
        top = m["top"]
        ticks = list(range(0, n, step))
        for k, image in enumerate(self.images):
            ax = image.axes
            shown = k < rows * cols
            ax.set_visible(shown)
            if not shown:
                continue
            r, c = divmod(k, cols)
            x = left + c * (panel + m["gap"])
            y = top + r * (panel + m["title"] + m["gap"]) + m["title"]  # from the top
            ax.set_position((x / width, 1 - (y + panel) / height, panel / width, panel / height))
            image.set_data(np.zeros((n, n)))
            image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
            ax.patches[0].set_bounds(-0.5, -0.5, n, n)  # the hatched background
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_ylim(n - 0.5, -0.5)
            bottom, first_column = k + cols >= rows * cols, c == 0
            for i, (xt, yt) in enumerate(zip(self.xlabels[k], self.ylabels[k])):
                on = i < n and i % step == 0
                xt.set(visible=on and bottom, text=tokens[i] if on else "", x=i)
                yt.set(visible=on and first_column, text=tokens[i] if on else "", y=i)
        bar_h = min(used_h - m["title"], 0.9 * (height - top))
        self.cax.set_position(((left + used_w + 12) / width, 1 - (top + m["title"] + bar_h) / height,
                               18 / width, bar_h / height))
        below = top + used_h + 0.62 * self.fs * max(len(t) for t in tokens) + 8 + 1.35 * self.fs
        self.xlabel.set_position(((left + used_w / 2) / width, 1 - min(below, height - 4) / height))
        self.ylabel.set_position((4 / width, 1 - (top + used_h / 2) / height))
        self.shape = (rows, cols, panel, n, step)
        return self.images[:rows * cols]


class ReadableHeatmap:
    """One n_q x n_k heatmap drawn for a screen: ``box`` = (width, height) pixels at 72 dpi, every text at
    least ``text_px`` pixels, the values written in the cells when they fit. Built once for up to
    ``max_rows`` x ``max_cols``; :meth:`layout` resizes and relabels the same axes (nothing is rebuilt)."""

    def __init__(self, box, text_px=15, max_rows=12, max_cols=12, xlabel="key token (column)",
                 ylabel="query token (row)"):
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        width, height = (check.positive_int("box", v) for v in box)
        self.box, self.fs = (width, height), float(text_px)
        self.max_rows, self.max_cols = check.positive_int("max_rows", max_rows), check.positive_int("max_cols", max_cols)
        self.figure = WorkbookFigure(figsize=(width / 72, height / 72), dpi=72, layout="none")
        ax = self.ax = self.figure.add_axes((0, 0, 0.1, 0.1))
        self.image, _ = draw_heatmap(ax, np.zeros((1, 1)), norm=weights_norm())
        ax.xaxis.set_visible(False)
        ax.yaxis.set_visible(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
        pad = 4 / 72
        below = blended_transform_factory(ax.transData, ax.transAxes) + ScaledTranslation(0, -pad, self.figure.dpi_scale_trans)
        left = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(-pad, 0, self.figure.dpi_scale_trans)
        self.xlabels = [ax.text(0, 0, "", transform=below, rotation=90, ha="center", va="top", fontsize=self.fs,
                                visible=False) for _ in range(self.max_cols)]
        self.ylabels = [ax.text(0, 0, "", transform=left, ha="right", va="center", fontsize=self.fs, visible=False)
                        for _ in range(self.max_rows)]
        self.cells = [ax.text(j, i, "", ha="center", va="center", fontsize=self.fs, zorder=2, visible=False)
                      for i in range(self.max_rows) for j in range(self.max_cols)]
        self.cax = self.figure.add_axes((0, 0, 0.1, 0.1))
        bar = self.figure.colorbar(self.image, cax=self.cax, ticks=np.linspace(0, 1, 6))
        bar.set_label(WEIGHT_LABEL, fontsize=self.fs)
        self.cax.tick_params(labelsize=self.fs)
        self.title = self.figure.suptitle("", fontsize=self.fs + 2, y=1 - 4 / height, va="top")
        self.xlabel = self.figure.text(0, 0, xlabel, fontsize=self.fs, ha="center", va="bottom")
        self.ylabel = self.figure.text(0, 0, ylabel, fontsize=self.fs, rotation=90, ha="left", va="center",
                                       multialignment="center")
        self.shape = None
        self.annotated = False

    def layout(self, row_labels, col_labels):
        """Size the cells for len(row_labels) x len(col_labels) (square, as large as the box allows, at most
        3.5 text heights) and write the labels; return the dynamic artists (the image and the cell texts)."""
        n_q, n_k = len(row_labels), len(col_labels)
        if not (1 <= n_q <= self.max_rows and 1 <= n_k <= self.max_cols):
            raise ValueError(f"the heatmap holds 1 to {self.max_rows} rows and 1 to {self.max_cols} columns, "
                             f"got {n_q} x {n_k}")
        width, height = self.box
        fs, line = self.fs, 1.35 * self.fs
        label_w = lambda labels: 0.62 * fs * max(len(t) for t in labels) + 8  # noqa: E731
        ylabel_lines = self.ylabel.get_text().count("\n") + 1
        left = ylabel_lines * line + 8 + label_w(row_labels)
        right = 3.5 * fs + 2 * line + 28
        top = 2 * 1.35 * (fs + 2) + 10
        bottom = label_w(col_labels) + (self.xlabel.get_text().count("\n") + 1) * line + 8
        cell = min((width - left - right) / n_k, (height - top - bottom) / n_q, 3.5 * fs)
        used_w, used_h = cell * n_k, cell * n_q
        self.ax.set_position((left / width, 1 - (top + used_h) / height, used_w / width, used_h / height))
        self.image.set_data(np.zeros((n_q, n_k)))
        self.image.set_extent((-0.5, n_k - 0.5, n_q - 0.5, -0.5))
        self.ax.patches[0].set_bounds(-0.5, -0.5, n_k, n_q)
        self.ax.set_xlim(-0.5, n_k - 0.5)
        self.ax.set_ylim(n_q - 0.5, -0.5)
        step_x = int(np.ceil(LABEL_PITCH * fs / cell))  # 1 (every label) when a cell is at least LABEL_PITCH text heights
        step_y = int(np.ceil(LABEL_PITCH * fs / cell))
        for j, text in enumerate(self.xlabels):
            text.set(visible=j < n_k and j % step_x == 0, text=col_labels[j] if j < n_k else "", x=j)
        for i, text in enumerate(self.ylabels):
            text.set(visible=i < n_q and i % step_y == 0, text=row_labels[i] if i < n_q else "", y=i)
        self.annotated = cell >= 2.6 * fs  # "0.93" fits in the cell
        shown = []
        for k, text in enumerate(self.cells):
            i, j = divmod(k, self.max_cols)
            on = self.annotated and i < n_q and j < n_k
            text.set_visible(on)
            if on:
                shown.append(text)
        bar_h = max(used_h, min(20 * fs, height - top - 10))  # room for its ticks and its two-line label
        self.cax.set_position(((left + used_w + 12) / width, 1 - (top + bar_h) / height, 18 / width,
                               bar_h / height))
        # The axis titles centred on the cells, but never past the figure's edges.
        half_w = 0.31 * fs * max(len(t) for t in self.xlabel.get_text().split("\n")) + 4
        half_h = 0.31 * fs * max(len(t) for t in self.ylabel.get_text().split("\n")) + 4
        x = min(max(left + used_w / 2, half_w), width - half_w)
        y = min(max(top + used_h / 2, half_h), height - bottom - 4)
        below = top + used_h + label_w(col_labels) + (self.xlabel.get_text().count("\n") + 1) * line
        self.xlabel.set_position((x / width, 1 - min(below, height - 4) / height))
        self.ylabel.set_position((4 / width, 1 - y / height))
        self.shape = (n_q, n_k, cell)
        self.texts = shown
        return [self.image, *shown]

    def set_data(self, data):
        """New values in the same layout: the image and the numbers in its cells."""
        self.image.set_data(masked(np.asarray(data, float), None))
        if self.texts:
            update_texts(self._grid_texts(data.shape), self.image)

    def _grid_texts(self, shape):
        n_q, n_k = shape
        return [self.cells[i * self.max_cols + j] for i in range(n_q) for j in range(n_k)]

