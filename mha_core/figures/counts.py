"""The counting figures: operation counts (Problem 3.1) and parameters (Problem 4.1) against h, on a
numeric log2 axis of h. ``draw_*`` lays a figure's axes out, ``update_*`` gives them new numbers in
place (new bars for a new d_model), so an explorer lays a figure out once."""

import numpy as np
from matplotlib import rcParams, ticker
from matplotlib.font_manager import FontProperties

from .. import _validate as check
from ..counting import flop_count, parameter_count
from .base import ENG_FORMAT, PALETTE, WorkbookFigure, unseen_figure, head_options, headless

def _heads(d_model, hs):
    d_model = check.positive_int("d_model", d_model)
    if hs is None:
        return d_model, head_options(d_model)
    hs = list(hs)
    if not hs:
        raise ValueError("hs must hold at least one number of heads")
    for h in hs:
        check.positive_int("hs", h)
        if d_model % h:
            raise ValueError(f"hs must hold divisors of d_model={d_model}, got h={h}")
    return d_model, hs


STAGES = [
    ("projections", "Q, K, V projections"),
    ("scores", "scores $Q_i K_i^T$"),
    ("weighted_sum", "weighted sum of values (weights × $V_i$)"),
    ("output_projection", "output projection $W^O$"),
]


def flop_plot(d_model=512, n=10, hs=None, exponentials=True):
    """Problem 3.1: operation counts against h at a fixed d_model (numeric, log-scaled h axis).

    Left, every matrix product stacked: the total is the same for every h. Right, on
    its own (log) scale, what the problem is about: the scores Q_i K_i^T and the weighted
    sum of values, flat, next to the claim "h heads cost h times more", and the softmax's
    h·n² exponentials, the one count that does grow (linearly) with h. ``exponentials=False``
    leaves that curve out (where naming what grows with h is the student's to find).
    """
    d_model, hs = _heads(d_model, hs)
    n = check.positive_int("n", n)
    title = "Problem 3.1: h heads of width d_k = d_model/h cost what one head of width d_model costs"
    if headless():
        return unseen_figure(title)
    fig = WorkbookFigure(figsize=(12, 4.8))
    left, right = fig.subplots(1, 2)
    draw_flops(left, right, d_model, n, hs, exponentials)
    fig.suptitle(title, fontsize=12)
    counts = [flop_count(d_model, h, n) for h in hs]
    together = ", ".join(f"{c['multiply_adds']:,}" for c in counts)
    attention = ", ".join(f"{c['scores'] + c['weighted_sum']:,}" for c in counts)
    fig.alt = (f"Operation counts against h = {', '.join(map(str, hs))} for d_model = {d_model}, n = {n}: every "
               f"matrix product together is {together}; the scores and the weighted sum {attention}.")
    return fig


def _h_axis(ax, hs):
    """h on a numeric log2 axis, ticks at the h shown (powers of 2 when crowded; no two labels touching)."""
    ax.set_xscale("log", base=2)
    _h_ticks(ax, hs)
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("h (number of heads), log scale", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)


def _h_ticks(ax, hs):
    ax.set_xlim(min(hs) / 1.5, max(hs) * 1.5)
    ticks = hs if len(hs) <= 10 else sorted({h for h in hs if h & (h - 1) == 0} | {max(hs)})  # crowded: powers of 2
    ax.xaxis.set_major_locator(SpacedTicks(ticks))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda h, _: f"{h:g}"))


class SpacedTicks(ticker.Locator):
    """Ticks at ``hs`` whose labels do not touch, measured when the axis is drawn (in its final layout):
    the largest h first, then the powers of 2, then the others, each kept if its label leaves room to the
    labels kept (at d_model = 304, 19 goes: its label ran into 16's, "1619")."""

    GAP_PX = 3  # the least room between two labels

    def __init__(self, hs):
        self.hs = [float(h) for h in hs]

    def __call__(self):
        axis = self.axis
        renderer = axis.figure.canvas.get_renderer()
        size = axis.get_tick_params(which="major").get("labelsize", rcParams["xtick.labelsize"])
        font = FontProperties(size=size)
        xs = axis.axes.transData.transform([(h, 1) for h in self.hs])[:, 0]
        half = [renderer.get_text_width_height_descent(f"{h:g}", font, ismath=False)[0] / 2 for h in self.hs]
        order = sorted(range(len(xs)), key=lambda i: (i != len(xs) - 1, not _power_of_2(self.hs[i]), i))
        kept = []
        for i in order:
            if all(abs(xs[i] - xs[j]) >= half[i] + half[j] + self.GAP_PX for j in kept):
                kept.append(i)
        return [self.hs[i] for i in sorted(kept)]

    def tick_values(self, vmin, vmax):
        return self.hs


def _power_of_2(h):
    return h == 2 ** round(np.log2(h))


BAR_HALF = 2**0.15  # a bar spans h / BAR_HALF .. h * BAR_HALF on the log axis


def _stack(ax, hs, stacks, labels, colours=PALETTE):
    """Stacked bars at each h of ``hs``: one layer per row of ``stacks`` (its values over hs)."""
    x = np.array(hs, float)
    bottom = np.zeros(len(hs))
    for values, label, colour in zip(stacks, labels, colours):
        ax.bar(x / BAR_HALF, values, width=x * BAR_HALF - x / BAR_HALF, align="edge", bottom=bottom, label=label,
               color=colour)
        bottom += np.asarray(values, float)


def _restack(ax, hs, stacks):
    """Give the stacked bars of :func:`_stack` on ``ax`` new heights; for a new ``hs`` (another d_model), new
    bars in the same colours."""
    if len(ax.containers) != len(stacks):
        raise ValueError(f"ax must hold {len(stacks)} layers of stacked bars, got {len(ax.containers)}")
    x = np.array(hs, float)
    same = len(ax.containers[0].patches) == len(hs) and np.allclose(
        [p.get_x() for p in ax.containers[0].patches], x / BAR_HALF)
    if not same:
        colours = [bars.patches[0].get_facecolor() for bars in ax.containers]
        for bars in list(ax.containers):
            bars.remove()
        _stack(ax, hs, stacks, [f"_{k}" for k in range(len(stacks))], colours)  # no new legend entries
        return
    bottom = np.zeros(len(hs))
    for values, bars in zip(stacks, ax.containers):
        for patch, base, value in zip(bars.patches, bottom, values):
            patch.set_y(base)
            patch.set_height(value)
        bottom += np.asarray(values, float)


# The right panel's curves, in :func:`_flop_numbers`' order: their labels and styles.
FLOP_CURVES = [
    ("claim: h heads cost h times more", dict(color=PALETTE[5], ls="--", lw=2)),
    ("scores + weighted sum: 2·n²·d_model", dict(color="0.15", lw=2.5, marker="o", ms=4)),
    ("scores $Q_i K_i^T$ (and, equal, the weighted sum)", dict(color=PALETTE[1], lw=1.5, marker="s", ms=3)),
    ("softmax: h·n² exponentials (grows, small)", dict(color=PALETTE[2], ls=":", lw=2, marker="^", ms=4)),
]


def draw_flops(left, right, d_model, n, hs, exponentials=True):
    """Draw :func:`flop_plot`'s two panels on ``left`` and ``right`` (cleared first); ``exponentials=False``
    leaves the softmax's curve out."""
    for ax in (left, right):
        ax.clear()
    counts, curves = _flop_numbers(d_model, n, hs, exponentials)
    _stack(left, hs, [[c[key] for c in counts] for key, _ in STAGES], [label for _, label in STAGES])
    left.axhline(0, color="0.2", ls="--", lw=1)  # the total, and what it says: placed by _show_flop_numbers
    left.text(0, 0, "", ha="right", va="bottom", fontsize=9)
    left.set_ylabel("multiply-adds", fontsize=11)
    left.yaxis.set_major_formatter(ENG_FORMAT)
    left.set_title("", fontsize=11)
    left.legend(loc="upper left", fontsize=8, ncols=2, frameon=False)
    _h_axis(left, hs)

    for values, (label, style) in zip(curves, FLOP_CURVES):
        right.plot(hs, values, label=label, **style)
    right.set_yscale("log")
    right.set_ylabel("operations, log scale", fontsize=11)
    right.yaxis.set_major_formatter(ENG_FORMAT)  # 100 k, 1 M: plain text, quicker to draw than 10^5
    right.set_title("The stages Problem 3.1 is about, on their own scale:\nflat, while the claim grows with h",
                    fontsize=11)
    right.legend(loc="upper left", fontsize=8, frameon=False)
    _h_axis(right, hs)
    _show_flop_numbers(left, right, d_model, n, hs, counts, curves)
    return left, right


def _flop_numbers(d_model, n, hs, exponentials=True):
    """The counts at each h, and the right panel's curves: the claim "h heads cost h times more" than one
    head of width d_model, the scores and weighted sum, the scores alone, and (unless ``exponentials`` is
    False) the softmax."""
    counts = [flop_count(d_model, h, n) for h in hs]
    attention = np.array([c["scores"] + c["weighted_sum"] for c in counts], float)
    each = np.array([c["scores"] for c in counts], float)
    softmax = np.array([c["softmax"] for c in counts], float)
    curves = (attention[0] / hs[0] * np.array(hs, float), attention, each, softmax)
    return counts, curves if exponentials else curves[:3]


def _show_flop_numbers(left, right, d_model, n, hs, counts, curves):
    """What draw_flops and update_flops both set from the numbers: the total, its line and label, the left
    title, the curves and the y ranges."""
    total = counts[0]["multiply_adds"]
    left.lines[0].set_ydata([total, total])
    left.texts[0].set_position((max(hs) * 1.4, total))
    left.texts[0].set_text(f"{total:,} for every h")
    left.set_ylim(0, total * 1.35)
    left.title.set_text(f"Every matrix product, stacked: flat in h\n(d_model = {d_model}, n = {n}, d_k = d_model / h)")
    for line, values in zip(right.lines, curves):
        line.set_data(hs, values)
    claim, attention, each = curves[:3]
    right.set_ylim(*_log_room(min(curve.min() for curve in curves) / 3, max(claim.max(), attention.max())))


LEGEND_ROOM = 0.32  # the top share of a log axis kept free of curves: its four-line legend sits there


def _log_room(low, high, free=LEGEND_ROOM):
    """Limits of a log axis from ``low`` whose top ``free`` share lies above ``high`` (the legend's room)."""
    top = (np.log10(high) - free * np.log10(low)) / (1 - free)
    return low, 10 ** max(top, np.log10(high) + 0.3)


def update_flops(left, right, d_model, n, hs, exponentials=True):
    """Give :func:`draw_flops`'s panels the counts of a new ``n`` or ``d_model`` (and its ``hs``), in place: bar
    heights (new bars for a new ``hs``), the total and its line, the curves, the h ticks, the y ranges and the
    title. The axes are not cleared, so a figure laid out once can be redrawn (or blitted) quickly."""
    counts, curves = _flop_numbers(d_model, n, hs, exponentials)
    _restack(left, hs, [[c[key] for c in counts] for key, _ in STAGES])
    _show_flop_numbers(left, right, d_model, n, hs, counts, curves)
    for ax in (left, right):
        _h_ticks(ax, hs)
    return left, right


def parameter_plot(d_model=512, hs=None):
    """Problem 4.1: parameters of W_Q, W_K, W_V, W_O against h (numeric, log-scaled), flat at 4·d_model²."""
    d_model, hs = _heads(d_model, hs)
    title = f"Problem 4.1: parameters do not depend on h (d_model = {d_model})"
    if headless():
        return unseen_figure(title)
    fig = WorkbookFigure(figsize=(8, 4.4))
    ax = fig.add_subplot()
    draw_parameters(ax, d_model, hs)
    ax.set_title(title, fontsize=12)
    from .screen import readable_in_lab

    readable_in_lab(fig)
    fig.alt = (f"Stacked bars of the parameters of W_Q, W_K, W_V and W_O against h = {', '.join(map(str, hs))} for "
               f"d_model = {d_model}: " + ", ".join(f"{parameter_count(d_model, h):,}" for h in hs) + ".")
    return fig


def draw_parameters(ax, d_model, hs):
    """Draw :func:`parameter_plot`'s bars on ``ax`` (cleared first), without its title."""
    ax.clear()
    _stack(ax, hs, _parameter_stacks(d_model, hs), ["$W^Q$", "$W^K$", "$W^V$", "$W^O$"])
    ax.axhline(4 * d_model**2, color="0.2", ls="--", lw=1)
    ax.text(0, 0, "", ha="right", va="bottom", fontsize=9)
    _parameter_numbers(ax, d_model, hs)
    ax.set_ylabel("parameters (no biases)", fontsize=11)
    ax.yaxis.set_major_formatter(ENG_FORMAT)
    ax.legend(loc="upper left", fontsize=9, ncols=4, frameon=False,
              title="each of $W^Q, W^K, W^V$: h · d_model · d_k = d_model²;  $W^O$: d_model · d_model", title_fontsize=9,
              alignment="left")
    _h_axis(ax, hs)
    return ax


def _parameter_stacks(d_model, hs):
    """W_Q, W_K, W_V, W_O's parameters at each h: h · d_model · d_k = d_model² each, 4·d_model² together."""
    stacks = [[d_model * d_model] * len(hs) for _ in range(4)]
    assert all(sum(layer[k] for layer in stacks) == parameter_count(d_model, h) for k, h in enumerate(hs))
    return stacks


def _parameter_numbers(ax, d_model, hs):
    total = 4 * d_model**2
    ax.lines[0].set_ydata([total, total])
    ax.texts[0].set_position((max(hs) * 1.4, total))
    ax.texts[0].set_text(f"4·d_model² = 4·{d_model}² = {total:,}")
    ax.set_ylim(0, total * 1.3)


def update_parameters(ax, d_model, hs):
    """Give :func:`draw_parameters`' axes a new ``d_model`` (and its ``hs``) in place: the bars, the total and
    its line, the h ticks and the y range."""
    _restack(ax, hs, _parameter_stacks(d_model, hs))
    _parameter_numbers(ax, d_model, hs)
    _h_ticks(ax, hs)
    return ax

