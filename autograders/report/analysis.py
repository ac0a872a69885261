"""What the class report (:mod:`autograders.report`) computes and draws from a class's results:
the names it shows (:func:`misconception_name`, :func:`problem_label`), the item analysis
(:func:`item_analysis`, plotted by :func:`plot_items`), the predictions (:func:`prediction_summary`)
and the figures, each a PNG drawn once."""

import importlib
import io
import re
from collections import Counter

from ..problems.misconception import NAMES

OTHER = "other (no named misconception)"
UNCONFIRMED = "not confirmed by the re-check"

MISCONCEPTIONS = NAMES  # tag: the name the report shows


def misconception_name(tag):
    """The name the report shows for ``tag``, or None for a tag that is not a known one."""
    return MISCONCEPTIONS.get(tag) if isinstance(tag, str) else None


def problem_label(grade_id):
    """``q2_3_softmax_test`` -> ``2.3 softmax``."""
    match = re.match(r"q(\d+)_(\d+)_(.*?)(_test)?$", grade_id)
    return f"{match[1]}.{match[2]} {match[3]}" if match else grade_id


def choice_check(grade_id):
    """The check of the labelled choice whose answer cell is ``grade_id`` (``q5_1_refutation``), or None."""
    from ..checks import forms

    match = re.match(r"q(\d+)_\d+_", grade_id or "")
    if not match:
        return None
    try:
        module = importlib.import_module(f"autograders.checks.level{match[1]}")
    except ImportError:
        return None
    check = getattr(module, grade_id, None)
    return check if forms.is_choice(check) else None


def item_analysis(results, top=3):
    """Per graded question (cell) of every assignment, in notebook order: the share of graded submissions
    with full, partial and no points, the ``top`` misconceptions of its failed tests, and for a labelled
    choice how often each option was chosen. Cells not graded yet (a written answer before manual
    grading) are left out of the shares."""
    items = []
    for assignment, ids in results.cells.items():
        rows = [r for r in results.rows if r["assignment"] == assignment and r["status"] == "graded"]
        for grade_id in ids:
            scored = [(r["student"], *r["cells"][grade_id]) for r in rows if grade_id in r["cells"]]
            scored = [(student, score, top_score, kind) for student, score, top_score, kind in scored
                      if score is not None and top_score]
            if not scored:
                continue
            full = sum(1 for _, score, top_score, _ in scored if score >= top_score)
            none = sum(1 for _, score, _, _ in scored if score <= 0)
            n = len(scored)
            tags = Counter()
            for student, *_ in scored:
                key = (student, assignment, grade_id)
                if key in results.messages:
                    tags[UNCONFIRMED if key in results.unconfirmed else misconception_name(results.tags.get(key)) or OTHER] += 1
            answer = grade_id[:-len("_test")] if grade_id.endswith("_test") else None
            check = choice_check(answer)
            chosen = None
            if check is not None:
                from ..checks import forms

                _, options = forms.choice_form(check)
                picks = Counter(results.choices.get((student, assignment, answer)) for student, *_ in scored)
                right = _right_option(check, options)
                chosen = [(f"{option} (right)" if option == right else option, picks.get(option, 0)) for option in options]
                chosen.append(("none", picks.get(None, 0)))
            items.append({"assignment": assignment, "grade_id": grade_id, "label": problem_label(grade_id), "n": n,
                          "full": full / n, "partial": (n - full - none) / n, "none": none / n,
                          "written": scored[0][3] != "code", "tags": tags.most_common(top), "chosen": chosen})
    return items


def _right_option(check, options):
    """The option the check accepts (its hidden test, output silenced), or None."""
    import contextlib

    from ..checks.feedback import WrongAnswer

    for option in options:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                check(option, hidden=True)
        except WrongAnswer:
            continue
        return option
    return None


def prediction_summary(results):
    """Per prediction (:data:`autograders.checks.predictions.PREDICTIONS`) that some submission holds: its
    question, how many predicted right, wrong, and how many gave none (or one of the wrong kind)."""
    from ..checks import predictions

    summary = {}
    for (_, assignment), found in sorted(results.predictions.items()):
        for prediction_id, value in found.items():
            if prediction_id not in predictions.PREDICTIONS:
                continue
            entry = summary.setdefault(prediction_id, {
                "id": prediction_id, "assignment": assignment,
                "question": predictions.PREDICTIONS[prediction_id].question, "right": 0, "wrong": 0, "none": 0})
            verdict = predictions.judge(prediction_id, value)
            entry["none" if verdict is None else "right" if verdict else "wrong"] += 1
    for entry in summary.values():
        made = entry["right"] + entry["wrong"]
        entry["share"] = "" if not made else f"{100 * entry['right'] / made:.0f}%"
    return list(summary.values())


# --- plots ----------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    if "matplotlib.pyplot" not in __import__("sys").modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure_png(fig):
    """The figure as PNG bytes, drawn once: each plot lays itself out first (tight_layout), so the
    saved picture needs no second, cropping draw (``bbox_inches="tight"`` took a third of the report's time)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def plot_scores(results):
    """Score distribution per level: one histogram of % of the maximum per assignment."""
    plt = _pyplot()
    names = [name for name in results.cells if any(r["assignment"] == name for r in results.rows)] or list(results.cells)
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(2.6 * max(1, len(names)), 2.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        percent = [100 * r["score"] / r["max_score"] for r in results.rows
                   if r["assignment"] == name and r["status"] == "graded" and r["max_score"]]
        ax.hist(percent, bins=range(0, 101, 10), color="#4C72B0", edgecolor="white")
        mean = f"mean {sum(percent) / len(percent):.0f}%" if percent else "no submissions"
        ax.set_title(f"{name}\n{len(percent)} graded, {mean}", fontsize=9)
        ax.set_xlabel("score (% of maximum)", fontsize=8)
        ax.set_xlim(0, 100)
        ax.tick_params(labelsize=8)
        ax.yaxis.get_major_locator().set_params(integer=True)
    axes[0][0].set_ylabel("submissions", fontsize=8)
    fig.suptitle("Score distribution per level", fontsize=11)
    fig.tight_layout()
    return _figure_png(fig)


def plot_success(results):
    """Success rate per problem (test cell): the share of graded submissions with full marks."""
    plt = _pyplot()
    rates = results.success_rates()
    fig, ax = plt.subplots(figsize=(7, 0.26 * max(4, len(rates)) + 0.8))
    labels = [problem_label(gid) for _, gid, _, _ in rates]
    values = [100 * rate for _, _, rate, _ in rates]
    levels = sorted({a for a, _, _, _ in rates})
    colours = plt.get_cmap("tab10")
    ax.barh(range(len(rates)), values, color=[colours(levels.index(a) % 10) for a, _, _, _ in rates])
    ax.set_yticks(range(len(rates)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("submissions with full marks (%)")
    for i, (value, (_, _, _, n)) in enumerate(zip(values, rates)):
        ax.text(min(value + 1, 92), i, f"{value:.0f}% of {n}", va="center", fontsize=7)
    ax.set_title("Success rate per problem")
    fig.tight_layout()
    return _figure_png(fig)


def plot_misconceptions(results, top=20):
    """How often each named misconception occurred (failed tests naming it)."""
    plt = _pyplot()
    counts, _ = results.misconception_counts()
    items = counts.most_common(top)
    fig, ax = plt.subplots(figsize=(7, 0.3 * max(3, len(items)) + 0.8))
    if items:
        colours = {OTHER: "#999999", UNCONFIRMED: "#DD8452"}
        ax.barh(range(len(items)), [n for _, n in items], color=[colours.get(k, "#C44E52") for k, _ in items])
        ax.set_yticks(range(len(items)), [k for k, _ in items], fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "no failed tests", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlabel("failed tests naming it")
    ax.set_title("Misconceptions")
    fig.tight_layout()
    return _figure_png(fig)


def plot_items(items):
    """The item analysis: a bar per question, the shares with full (green), partial (amber) and no points (red)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.28 * max(4, len(items)) + 1.0))
    labels = [f"{item['label']}{' (written)' if item['written'] else ''}" for item in items]
    left = [0.0] * len(items)
    for key, colour, name in (("full", "#55A868", "full points"), ("partial", "#DD8452", "partial"),
                              ("none", "#C44E52", "no points")):
        values = [100 * item[key] for item in items]
        ax.barh(range(len(items)), values, left=left, color=colour, label=name, edgecolor="white")
        left = [a + b for a, b in zip(left, values)]
    for i, item in enumerate(items):
        ax.text(101, i, f"n = {item['n']}", va="center", fontsize=7)
    ax.set_yticks(range(len(items)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xlabel("graded submissions (%)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.45, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title("Item analysis: points per question", pad=22)
    fig.tight_layout()
    return _figure_png(fig)


def _items_alt(items):
    """The plot's alt text: what it shows, and the three questions with the most students without points."""
    worst = sorted(items, key=lambda item: -item["none"])[:3]
    hardest = "; ".join(f"{item['label']}: {100 * item['none']:.0f}% no points" for item in worst)
    return (f"Item analysis, a bar per question ({len(items)}): the share of graded submissions with full, partial "
            f"and no points. Most without points: {hardest or 'none'}. The table below gives every number.")


# --- report.html ---------------------------------------------------------------------
