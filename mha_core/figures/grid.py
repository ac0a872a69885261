"""The per-head grid's layout: one panel per head (at most 4 columns), built once with empty
panels and relabelled in place for new tokens (:func:`build_head_grid`, :func:`relabel_head_grid`),
used by :func:`mha_core.plots.head_grid` and the explorers."""

import numpy as np
from matplotlib import colors

from .base import WEIGHT_LABEL, WorkbookFigure, token_axes, draw_heatmap, token_label_styles, weights_norm

def grid_shape(panels):
    """(rows, columns) of a grid of ``panels`` heads: at most 4 columns."""
    cols = min(panels, 4)
    return -(-panels // cols), cols


def build_head_grid(panels, row_labels, col_labels, title, figure_width=None, dpi=100):
    """The layout of a head grid with empty (zero) panels; return (figure, images).

    ``figure_width`` (inches) fixes the width; panels are then square and share it.
    """
    n_q, n_k = len(row_labels), len(col_labels)
    rows, cols = grid_shape(panels)
    if figure_width is None:
        panel = 1.0 + 0.16 * max(n_q, n_k) if max(n_q, n_k) <= 16 else 3.6
    else:
        panel = min((figure_width - 1.6) / cols, 3.0)
    fig = WorkbookFigure(figsize=(cols * panel + 1.6, rows * panel * n_q / max(n_q, n_k) + 1.0), dpi=dpi)
    fontsize = grid_fontsize(n_q, n_k)
    axes = fig.subplots(rows, cols, squeeze=False)
    images = []
    norm = weights_norm()
    for k, ax in enumerate(axes.flat):
        if k >= panels:
            ax.remove()
            continue
        r, c = divmod(k, cols)
        image, _ = draw_heatmap(ax, np.zeros((n_q, n_k)), norm=norm)
        last_row = k + cols >= panels
        token_axes(ax, row_labels, col_labels, fontsize=fontsize, show_rows=c == 0, show_cols=last_row)
        ax.set_title(f"head {k + 1}", fontsize=10)
        images.append(image)
    fig.supxlabel("key token (column)", fontsize=11)
    fig.supylabel("query token (row)", fontsize=11)
    fig.suptitle(title, fontsize=12)
    bar = fig.colorbar(images[0], ax=[image.axes for image in images], shrink=0.8, pad=0.02)
    bar.set_label(WEIGHT_LABEL, fontsize=10)
    return fig, images


def resize_head_grid(images, n_q, n_k):
    """Give a head grid's panels room for n_q x n_k cells (emptied, zeros), ticks untouched."""
    for image in images:
        ax = image.axes
        image.set_data(np.zeros((n_q, n_k)))
        image.set_extent((-0.5, n_k - 0.5, n_q - 0.5, -0.5))
        ax.patches[0].set_bounds(-0.5, -0.5, n_k, n_q)  # the hatched background
        ax.set_xlim(-0.5, n_k - 0.5)
        ax.set_ylim(n_q - 0.5, -0.5)


def relabel_head_grid(fig, images, row_labels, col_labels, title):
    """Re-use a head grid from :func:`build_head_grid` for new tokens (a new n_q, n_k).

    The panels are emptied (zeros) and get the new ticks; the figure is not rebuilt,
    which costs about half as much as building a new one.
    """
    n_q, n_k = len(row_labels), len(col_labels)
    fontsize = grid_fontsize(n_q, n_k)
    cols = grid_shape(len(images))[1]
    resize_head_grid(images, n_q, n_k)
    for k, image in enumerate(images):
        token_axes(image.axes, row_labels, col_labels, fontsize=fontsize, show_rows=k % cols == 0,
                    show_cols=k + cols >= len(images), styled=True)
    fig.suptitle(title, fontsize=12)
    return fig, images


def grid_fontsize(n_q, n_k):
    """The token labels' size in a head grid: smaller past 16 tokens."""
    return 8 if max(n_q, n_k) <= 16 else 6


class TokenLabels:
    """A head grid's token labels as pixels: each label is drawn once, alone (a sprite), and pasted where
    its tick falls for any number of tokens, in the size and angle :func:`relabel_head_grid` would give
    it. So a new n in a grid whose layout is kept draws no text: its labels are copied into the canvas
    (:meth:`paste`) over a frame drawn without them.

    :meth:`capture` reads, after a draw with tick labels, where each labelled axis writes them (the
    labels' anchors keep their distance from the panel whatever their size); :meth:`hide` then turns
    those axes off for the frame drawn without them.

    Why: a new n is a slider a student drags. ``python -m benchmarks widgets``, its ``n`` row, in one run
    on a loaded 2-core machine: 0.45 s with the labels pasted, against 5.0 s for the grid drawn whole."""

    def __init__(self):
        self.axes = []  # (axis name, axes, the labels' fixed pixel coordinate)
        self._sprites = {}

    def capture(self, images):
        self.axes = []
        for image in images:
            ax = image.axes
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                labels = [t for t in axis.get_ticklabels() if t.get_text()] if axis.get_visible() else []
                if labels:
                    x, y = labels[0].get_transform().transform(labels[0].get_position())
                    self.axes.append((name, ax, y if name == "x" else x))
        return self

    def hide(self):
        for _, ax, _ in self.axes:
            ax.xaxis.set_visible(False)
            ax.yaxis.set_visible(False)

    def sprites(self, texts, style, dpi):
        """{text: (RGBA pixels of ``text`` drawn alone in ``style``, (column, row) of its top-left from its
        anchor)}; the texts not drawn yet are drawn together, in one figure of cells, once."""
        key = (tuple(sorted(style.items())), dpi)
        known = self._sprites.setdefault(key, {})
        missing = sorted(set(texts) - set(known))
        if missing:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            side = int(2 * (max(map(len, missing)) + 2) * style["fontsize"] * dpi / 72) + 8  # a cell holds any angle
            cols = min(len(missing), 8)
            rows = -(-len(missing) // cols)
            figure = Figure(figsize=(cols * side / dpi, rows * side / dpi), dpi=dpi)
            FigureCanvasAgg(figure)
            figure.patch.set_alpha(0)
            for k, text in enumerate(missing):
                r, c = divmod(k, cols)
                figure.text((c + 0.5) / cols, 1 - (r + 0.5) / rows, text, color="black", **style)
            figure.canvas.draw()
            pixels = np.asarray(figure.canvas.buffer_rgba())
            for k, text in enumerate(missing):
                r, c = divmod(k, cols)
                cell = pixels[r * side:(r + 1) * side, c * side:(c + 1) * side]
                ys, xs = np.nonzero(cell[..., 3])
                if not len(ys):
                    known[text] = (cell[:0, :0].copy(), (0, 0))
                    continue
                r0, r1, c0, c1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
                known[text] = (cell[r0:r1, c0:c1].copy(), (c0 - side / 2, r0 - side / 2))
        return known

    def placed(self, row_labels, col_labels, dpi, height):
        """Each label at the ticks of the axes' current limits, as (text, its pixels, top row, left column)
        in a canvas ``height`` pixels high (rows from the top): columns' labels under the bottom panels,
        rows' left of the first column."""
        styles = dict(zip("xy", token_label_styles(len(col_labels), grid_fontsize(len(row_labels), len(col_labels)))))
        sprites = {name: self.sprites(col_labels if name == "x" else row_labels, styles[name], dpi) for name in "xy"}
        for name, ax, fixed in self.axes:
            labels = col_labels if name == "x" else row_labels
            for i, text in enumerate(labels):
                if name == "x":
                    x, y = ax.transData.transform((i, 0))[0], fixed
                else:
                    x, y = fixed, ax.transData.transform((0, i))[1]
                pixels, (dc, dr) = sprites[name][text]
                yield text, pixels, int(round(height - y + dr)), int(round(x + dc))

    def paste(self, buffer, row_labels, col_labels, dpi):
        """Write the labels into ``buffer``, the canvas's RGBA pixels (rows from the top)."""
        for _, pixels, row, col in self.placed(row_labels, col_labels, dpi, buffer.shape[0]):
            _over(buffer, pixels, row, col)


def _over(buffer, pixels, row, col):
    """Composite straight-alpha RGBA ``pixels`` over ``buffer`` with its top-left at (row, col), clipped."""
    h, w = pixels.shape[:2]
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + h, buffer.shape[0]), min(col + w, buffer.shape[1])
    if r0 >= r1 or c0 >= c1:
        return
    src = pixels[r0 - row:r1 - row, c0 - col:c1 - col].astype(np.float32)
    dst = buffer[r0:r1, c0:c1]
    alpha = src[..., 3:] / 255.0
    dst[..., :3] = (src[..., :3] * alpha + dst[..., :3] * (1.0 - alpha) + 0.5).astype(np.uint8)
    dst[..., 3:] = np.maximum(dst[..., 3:], src[..., 3:].astype(np.uint8))
