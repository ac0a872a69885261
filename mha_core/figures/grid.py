"""The per-head grid's layout: one panel per head (at most 4 columns), built once with empty
panels and relabelled in place for new tokens (:func:`build_head_grid`, :func:`relabel_head_grid`),
used by :func:`mha_core.plots.head_grid` and the explorers."""

import numpy as np

from .base import WEIGHT_LABEL, WorkbookFigure, _token_axes, draw_heatmap, weights_norm

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
    fontsize = 8 if max(n_q, n_k) <= 16 else 6
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
        _token_axes(ax, row_labels, col_labels, fontsize=fontsize, show_rows=c == 0, show_cols=last_row)
        ax.set_title(f"head {k + 1}", fontsize=10)
        images.append(image)
    fig.supxlabel("key token (column)", fontsize=11)
    fig.supylabel("query token (row)", fontsize=11)
    fig.suptitle(title, fontsize=12)
    bar = fig.colorbar(images[0], ax=[image.axes for image in images], shrink=0.8, pad=0.02)
    bar.set_label(WEIGHT_LABEL, fontsize=10)
    return fig, images


def relabel_head_grid(fig, images, row_labels, col_labels, title):
    """Re-use a head grid from :func:`build_head_grid` for new tokens (a new n_q, n_k).

    The panels are emptied (zeros) and get the new ticks; the figure is not rebuilt,
    which costs about half as much as building a new one.
    """
    n_q, n_k = len(row_labels), len(col_labels)
    fontsize = 8 if max(n_q, n_k) <= 16 else 6
    cols = grid_shape(len(images))[1]
    for k, image in enumerate(images):
        ax = image.axes
        image.set_data(np.zeros((n_q, n_k)))
        image.set_extent((-0.5, n_k - 0.5, n_q - 0.5, -0.5))
        ax.patches[0].set_bounds(-0.5, -0.5, n_k, n_q)  # the hatched background
        ax.set_xlim(-0.5, n_k - 0.5)
        ax.set_ylim(n_q - 0.5, -0.5)
        _token_axes(ax, row_labels, col_labels, fontsize=fontsize, show_rows=k % cols == 0,
                    show_cols=k + cols >= len(images), styled=True)
    fig.suptitle(title, fontsize=12)
    return fig, images

