"""mha_core.plots: each figure's axes, labels, colour bar, masking and annotations; bad input."""

import html
import re
import subprocess
import sys

import numpy as np
import pytest

from autograders.student import sentences
from autograders.student.sentences import ENGLISH, FRENCH, SENTENCE
import mha_core as mha
from mha_core import plots
from mha_core.figures import counts
from mha_core.figures import screen
from mha_core.explore import shapes
from mha_core.figures import head_view as view_figure

TOKENS = SENTENCE


@pytest.fixture(autouse=True)
def no_pyplot_figures_left():
    """Plots draw on their own Agg canvas: pyplot's list of open figures stays empty."""
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before, "a plot function left a pyplot figure open"


def weights(h=8, n=10, causal=False, d_model=512):
    x = plots.example_embeddings(n, d_model)
    return mha.MultiHeadAttention.from_seed(d_model, h)(x, causal=causal)[1]  # (h, n, n)


def test_importing_mha_core_imports_neither_matplotlib_nor_ipywidgets():
    code = "import mha_core, sys; assert 'matplotlib' not in sys.modules and 'ipywidgets' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_example_tokens_and_embeddings_are_reproducible():
    assert TOKENS == "the cat sat on the mat because it was tired".split()
    x = plots.example_embeddings(10, 512, seed=3)
    assert x.shape == (10, 512) and x.dtype == np.float64
    np.testing.assert_array_equal(x, plots.example_embeddings(10, 512, seed=3))
    np.testing.assert_array_equal(x[:4], plots.example_embeddings(4, 512, seed=3), err_msg="rows depend on n")
    assert not np.array_equal(x, plots.example_embeddings(10, 512, seed=4))


def test_head_options_are_the_divisors():
    assert plots.head_options(512) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert plots.head_options(12) == [1, 2, 3, 4, 6, 12]
    assert plots.head_options(7) == [1, 7]


def test_s01_heatmap_has_token_labels_axis_labels_colourbar_and_values():
    w = weights()[0]
    fig = plots.heatmap(w, TOKENS, TOKENS, title="head 1")
    ax, bar = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    assert ax.get_xlabel() == "key token (column)" and ax.get_ylabel() == "query token (row)"
    assert ax.get_title() == "head 1"
    assert "weight" in bar.get_ylabel()
    np.testing.assert_array_equal(ax.images[0].get_array(), w)
    written = [t.get_text() for t in ax.texts]
    assert len(written) == 100 and written[0] == f"{w[0, 0]:.2f}"
    assert ax.images[0].cmap.name.startswith("viridis")
    fig.canvas.draw()  # renders without error


def test_annotations_are_automatic_up_to_12_tokens():
    assert len(plots.heatmap(np.eye(12)).axes[0].texts) == 144
    assert not plots.heatmap(np.eye(13)).axes[0].texts
    assert not plots.heatmap(np.eye(4), annotate=False).axes[0].texts
    assert len(plots.heatmap(np.eye(20), annotate=True).axes[0].texts) == 400


def test_masked_cells_are_masked_not_zero():
    w = weights(causal=True)[0]
    mask = mha.causal_mask(10)
    fig = plots.heatmap(w, TOKENS, TOKENS, mask=mask)
    ax = fig.axes[0]
    shown = ax.images[0].get_array()
    assert isinstance(shown, np.ma.MaskedArray)
    np.testing.assert_array_equal(shown.mask, ~mask)
    np.testing.assert_array_equal(shown.filled(np.nan)[mask], w[mask])
    assert "masked" in ax.get_xlabel()
    assert [t.get_text() for t in ax.texts].count("") == 45, "masked cells must carry no value"


def test_masked_scores_may_be_minus_infinity():
    scores = np.where(mha.causal_mask(3), 1.0, -np.inf)
    fig = plots.heatmap(scores, mask=mha.causal_mask(3), kind="scores")
    assert fig.axes[1].get_ylabel() == "score"
    with pytest.raises(ValueError, match="matrix"):
        plots.heatmap(scores)


def test_heatmap_draws_on_a_given_axes():
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert plots.heatmap(np.eye(3), ax=ax) is fig


def test_head_grid_has_one_panel_per_head_and_one_shared_scale():
    w = weights(h=8, causal=True)
    fig = plots.head_grid(w, TOKENS, TOKENS, mask=mha.causal_mask(10))
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 8 and len(fig.axes) == 9, "8 panels and one colour bar"
    assert [ax.get_title() for ax in panels] == [f"head {i}" for i in range(1, 9)]
    assert len({(ax.images[0].norm.vmin, ax.images[0].norm.vmax) for ax in panels}) == 1
    for k, ax in enumerate(panels):
        np.testing.assert_array_equal(ax.images[0].get_array().filled(-1), np.where(mha.causal_mask(10), w[k], -1))
    assert fig.get_suptitle()


def test_head_grid_caps_the_panels():
    w = weights(h=32, n=4)
    fig = plots.head_grid(w, max_heads=16)
    assert len([ax for ax in fig.axes if ax.images]) == 16
    assert any("showing 16 of 32 heads" in t.get_text() for t in fig.texts)


def test_s02_cross_heatmap_has_decoder_rows_and_encoder_columns():
    w = np.full((3, 5), 0.2)
    fig = plots.cross_heatmap(w, ["<s>", "the", "cat"], list("abcde"))
    ax = fig.axes[0]
    assert ax.images[0].get_array().shape == (3, 5)
    assert "decoder" in ax.get_ylabel() and "query" in ax.get_ylabel()
    assert "encoder" in ax.get_xlabel() and "key" in ax.get_xlabel()
    assert "3" in ax.get_title() and "5" in ax.get_title()


def h_labels_drawn(figure):
    """Every axes' h tick labels as drawn: [(text, window extent)] per axes, left to right."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    return [[(t.get_text(), t.get_window_extent(renderer)) for t in ax.get_xticklabels() if t.get_visible()
             and t.get_text()] for ax in figure.axes if ax.get_xscale() == "log"]


@pytest.fixture(scope="module")
def flop_explorer():
    """One FLOP explorer for the d_model cases below, moved from one to the next (building one costs more
    than the whole check): its figure is laid out once, at d_model = 512, and relabelled in place."""
    from mha_core import widgets

    return widgets.flop_explorer(d_model=512, n=10)


@pytest.mark.parametrize("d_model", [304, 112, 208, 272, 512, 768])
def test_no_two_h_labels_overlap_and_the_largest_h_is_labelled(d_model, flop_explorer):
    """d_model = 304 has h = 16 and h = 19 close on the log axis: their labels were drawn as "1619". A label
    that would touch its neighbour goes (a power of 2 stays); the largest h is always labelled."""
    explorer = flop_explorer
    explorer.controls["d_model"].value = d_model  # the explorer's figure, laid out once, relabelled in place
    hs = [str(h) for h in plots.head_options(d_model)]
    figures = [plots.flop_plot(d_model, 10), plots.parameter_plot(d_model), explorer.figure]
    for name, figure in zip(["flop_plot", "parameter_plot", "the FLOP explorer"], figures):
        for labels in h_labels_drawn(figure):
            texts = [text for text, _ in labels]
            assert set(texts) <= set(hs) and texts[-1] == hs[-1], f"{name}: h labels {texts} of {hs}"
            if d_model in (512, 768):
                assert texts == hs if len(hs) <= 10 else len(texts) >= 8, f"{name}: {texts}, every h has room"
            for (a, box_a), (b, box_b) in zip(labels, labels[1:]):
                assert box_a.x1 < box_b.x0, f"{name}, d_model = {d_model}: the labels {a} and {b} overlap"


def test_flop_plot_shows_flat_multiply_adds_and_growing_softmax():
    fig = plots.flop_plot(512, 10)
    left, right = fig.axes
    hs = plots.head_options(512)
    assert [t.get_text() for t in left.get_xticklabels()] == [str(h) for h in hs]
    assert left.get_xscale() == right.get_xscale() == "log", "h is a number, not a category"
    tops = {}
    for bar in left.patches:
        x = round(bar.get_x(), 9)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert len(tops) == len(hs) and set(tops.values()) == {mha.flop_count(512, 8, 10)["multiply_adds"]}
    lines = {line.get_label(): line for line in right.get_lines()}
    assert right.get_yscale() == "log", "the attention stages on their own scale"

    def line(start):
        (found,) = [v for k, v in lines.items() if k.startswith(start)]
        np.testing.assert_array_equal(found.get_xdata(), hs)
        return np.asarray(found.get_ydata())

    one_head = 2 * 10 * 10 * 512  # scores and weighted sum of one head of width d_model
    np.testing.assert_array_equal(line("scores +"), [one_head] * len(hs))
    np.testing.assert_array_equal(line("scores $"), [mha.flop_count(512, h, 10)["scores"] for h in hs])
    np.testing.assert_array_equal(line("claim"), [h * one_head for h in hs])
    np.testing.assert_array_equal(line("softmax"), [h * 100 for h in hs])
    legend = [t.get_text() for t in left.get_legend().get_texts()]
    assert not any("A_i" in t for t in legend), "A_i is not the sheet's notation"


def test_parameter_plot_is_flat_at_4_d_model_squared():
    fig = plots.parameter_plot(512, hs=[1, 8, 64])
    ax = fig.axes[0]
    tops = {}
    for bar in ax.patches:
        tops[bar.get_x()] = max(tops.get(bar.get_x(), 0), bar.get_y() + bar.get_height())
    assert sorted(tops.values()) == [4 * 512**2] * 3
    assert any("1,048,576" in t.get_text() for t in ax.texts)


def test_weight_bars_write_each_value():
    w = mha.softmax(np.array([4.0, 2.0, 5.0]))
    fig = plots.weight_bars(w, ["a", "b", "c"])
    ax = fig.axes[0]
    assert [round(p.get_height(), 12) for p in ax.patches] == [round(v, 12) for v in w]
    assert [t.get_text() for t in ax.texts] == ["0.2595", "0.0351", "0.7054"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]


def test_shape_table_html_lists_every_row():
    rows = mha.shape_table(512, 8, 10)
    text = shapes.shape_table_html(rows)
    assert text.startswith("<table") and text.count("<tr>") == len(rows) + 1
    assert "512 × 64" in text and "10 × 10" in text and "W_i^Q" in text
    assert "&lt;" in shapes.shape_table_html([("<b>", (1,), "x")]), "names are escaped"


def test_figures_show_themselves_as_png():
    assert plots.heatmap(np.eye(2))._repr_png_().startswith(b"\x89PNG")


@pytest.mark.parametrize("build, title", [
    (lambda: plots.heatmap(np.eye(2), title="Figure s01"), "Figure s01"),
    (lambda: plots.cross_heatmap(np.full((2, 3), 1 / 3), ["a", "b"], ["x", "y", "z"]), "2 decoder queries × 3 encoder keys"),
    (lambda: plots.head_grid(np.full((2, 3, 3), 1 / 3)), "Attention weights of 2 heads"),
    (lambda: plots.flop_plot(d_model=8, n=4), "Problem 3.1"),
    (lambda: plots.parameter_plot(d_model=8), "Problem 4.1"),
    (lambda: plots.weight_bars([0.5, 0.5]), "Weights of one query"),
    (lambda: plots.sentence_heatmap(SENTENCE), "Figure s01"),
    (lambda: plots.sentence_grid(SENTENCE), "4 heads"),
    (lambda: plots.translation_heatmap(ENGLISH[:6], FRENCH[:3], source="random"), "random (untrained) weights"),
])
def test_under_nbgrader_figures_are_one_line_of_text_not_a_drawing(build, title, monkeypatch):
    from IPython.core.formatters import DisplayFormatter

    drawn, _ = DisplayFormatter().format(build())
    monkeypatch.setenv("MHA_CORE_DRAW", "0")  # as the grading side runs a notebook
    figure = build()
    graded, _ = DisplayFormatter().format(figure)
    assert set(drawn) == {"image/png", "text/html", "text/plain"} and drawn["image/png"].startswith(b"\x89PNG")
    assert re.search(r'<img src="data:image/png;base64,[^"]+" alt="[^"]*\d[^"]*">', drawn["text/html"])
    assert set(graded) == {"text/plain"} and not figure.axes, "nothing is laid out or drawn while nbgrader grades"
    assert title in graded["text/plain"] and "not when it is graded" in graded["text/plain"]
    with pytest.raises(ValueError, match="d_model"):  # arguments are still checked
        plots.flop_plot(d_model=0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: plots.head_grid(np.eye(3)), "weights"),
        (lambda: plots.heatmap(np.ones((2, 2, 2))), "matrix"),
        (lambda: plots.heatmap(np.eye(3), row_labels=["a", "b"]), "row_labels"),
        (lambda: plots.heatmap(np.eye(3), col_labels="abc"), "col_labels"),
        (lambda: plots.heatmap(np.eye(3), mask=np.ones((2, 2), bool)), "mask"),
        (lambda: plots.heatmap(np.eye(3), mask=np.ones((3, 3))), "mask"),
        (lambda: plots.heatmap(np.eye(3), kind="probabilities"), "kind"),
        (lambda: plots.heatmap([[1.0, np.nan]]), "matrix"),
        (lambda: plots.cross_heatmap(np.ones((2, 3)), ["a", "b"], ["x"]), "key_tokens"),
        (lambda: plots.head_grid(np.ones((2, 3, 3)), row_labels=list("ab")), "row_labels"),
        (lambda: plots.flop_plot(512, hs=[3]), "hs"),
        (lambda: plots.flop_plot(512, n=0), "n"),
        (lambda: plots.parameter_plot(0), "d_model"),
        (lambda: plots.weight_bars(np.ones((2, 2))), "weights"),
        (lambda: plots.weight_bars([0.5, 0.5], labels=["a"]), "labels"),
        (lambda: shapes.shape_table_html([("a", (1,))]), "rows"),
        (lambda: plots.example_embeddings(0, 4), "n"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- figures from constructed heads, and what a figure says about its weights ------------------------


def test_weights_are_coloured_on_a_linear_0_to_1_scale():
    fig = plots.heatmap(np.full((2, 2), 0.5))
    norm = fig.axes[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (0.0, 1.0) and norm(0.25) == pytest.approx(0.25), "linear, not square-root"
    assert fig.axes[1].get_ylabel() == plots.WEIGHT_LABEL


def test_s01_from_a_constructed_head_shows_it_looking_at_cat():
    fig = plots.sentence_heatmap(SENTENCE, pattern="pronoun")
    ax = fig.axes[0]
    shown = np.ma.getdata(ax.images[0].get_array())
    it, cat = TOKENS.index("it"), TOKENS.index("cat")
    assert int(np.argmax(shown[it])) == cat
    c = mha.heads.constructed(TOKENS, ("pronoun",))
    np.testing.assert_allclose(shown, c.block(c.x)[1][0])
    assert plots.UNTRAINED not in ax.get_title() and "pronoun" in ax.get_title()
    # the title names the pattern as the head grid does, never "attend to the pronoun" (it attends to the noun)
    assert ax.get_title().endswith(f"built for {plots.PATTERN_TITLES['pronoun']}")


def test_random_weights_say_so_in_the_title():
    for fig in (plots.sentence_heatmap(SENTENCE, source="random"),
                plots.translation_heatmap(ENGLISH[:6], FRENCH[:3], source="random"),
                plots.heatmap(np.eye(2), title="s01", untrained=True)):
        assert plots.UNTRAINED in fig.axes[0].get_title()
    grid = plots.sentence_grid(SENTENCE, source="random")
    assert plots.UNTRAINED in grid.get_suptitle()
    assert plots.UNTRAINED not in plots.sentence_grid(SENTENCE).get_suptitle()


def test_sentence_grid_has_one_pattern_per_head_and_sharing_repeats_head_1():
    own = plots.sentence_grid(SENTENCE)
    panels = [ax for ax in own.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [f"head {i + 1}: {plots.PATTERN_TITLES[p]}" for i, p in
                                                 enumerate(("previous", "same word", "first", "pronoun"))]
    data = [np.ma.getdata(ax.images[0].get_array()) for ax in panels]
    assert all(not np.allclose(data[0], d) for d in data[1:]), "4 different patterns"
    shared = [np.ma.getdata(ax.images[0].get_array())
              for ax in plots.sentence_grid(SENTENCE, shared=True).axes if ax.images]
    for d in shared:
        np.testing.assert_allclose(d, data[0], err_msg="every head shares head 1's projections")


def test_s02_puts_target_words_on_the_decoder_rows_and_source_words_on_the_encoder_columns():
    source, target = ENGLISH[:4], FRENCH[:3]
    fig = plots.translation_heatmap(source, target)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == target
    assert [t.get_text() for t in ax.get_xticklabels()] == source
    assert "decoder" in ax.get_ylabel() and "target" in ax.get_ylabel()
    assert "encoder" in ax.get_xlabel() and "source" in ax.get_xlabel()
    shown = np.ma.getdata(ax.images[0].get_array())
    assert source[int(np.argmax(shown[target.index("noir")]))] == "black"


@pytest.mark.parametrize("call, name", [
    (lambda: plots.sentence_heatmap(SENTENCE, pattern="translation"), "pattern"),
    (lambda: plots.sentence_heatmap(SENTENCE, source="trained"), "source"),
    (lambda: plots.sentence_grid(SENTENCE, shared="yes"), "shared"),
    (lambda: plots.translation_heatmap(ENGLISH[:6], FRENCH[:3], pattern="pronoun"), "pattern"),
    (lambda: plots.heatmap(np.eye(2), untrained="no"), "untrained"),
    (lambda: plots.head_grid(np.ones((2, 2, 2)) / 2, head_titles=["a"]), "head_titles"),
])
def test_constructed_figures_reject_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the head view: where one word looks, every head at once ------------------------------------------


def _reference_weights(built):
    """Every head's weights of a constructed block, from the plain-loop reference implementation."""
    from tests import reference

    b = built.block
    x_kv = built.x if built.x_kv is None else built.x_kv
    _, weights = reference.multi_head_attention(built.x, x_kv, b.W_Q, b.W_K, b.W_V, b.W_O, b.h)
    return np.array(weights)  # (h, n_q, n_k)


def test_head_view_draws_each_heads_row_of_the_constructed_weights():
    from matplotlib import colors

    tokens = SENTENCE
    built = mha.heads.constructed(tokens)
    expected = _reference_weights(built)
    it, cat, because = tokens.index("it"), tokens.index("cat"), tokens.index("because")
    names = [plots.PATTERN_TITLES[p] for p in built.patterns]
    fig = plots.head_view(tokens, built.weights(), it, head_names=names)
    parts = fig.head_view
    np.testing.assert_allclose(parts["weights"], expected[:, it, :], atol=1e-12, err_msg="rows drawn")
    for k, lines in enumerate(parts["lines"]):
        w = expected[k, it]
        widths, alphas = view_figure.head_view_style(w)
        np.testing.assert_allclose(lines.get_linewidths()[: len(w)], widths, err_msg=f"head {k + 1}'s widths")
        np.testing.assert_allclose(lines.get_colors()[: len(w), 3], alphas, err_msg=f"head {k + 1}'s opacity")
        starts = np.array([segment[0] for segment in lines.get_segments()[: len(w)]])
        assert np.allclose(starts[:, 1], parts["ys"][it]), "every line starts at the chosen word"
        assert lines.get_colors()[0][:3] == pytest.approx(colors.to_rgb(plots.PALETTE[k]))
    assert int(np.argmax(expected[3, it])) == cat and int(np.argmax(expected[0, it])) == because
    legend = [(t.get_text(), v.get_text()) for t, v in zip(parts["names"], parts["values"])]
    assert legend[0] == ("previous token:", f"“because” {expected[0, it, because]:.2f}")
    assert legend[3] == ("pronoun → its noun:", f"“cat” {expected[3, it, cat]:.2f}")
    assert len({v.get_position()[0] for v in parts["values"]}) == 1, "where each head looks: one column"
    assert parts["highlight"].get_text() == "it" and parts["highlight"].get_position()[1] == parts["ys"][it]
    assert [t.get_text() for t in parts["keys"]] == tokens


def test_head_view_widths_and_opacity_grow_with_the_weight():
    w = np.array([0.0, 0.01, 0.1, 0.5, 1.0])
    widths, alphas = view_figure.head_view_style(w)
    assert (np.diff(widths) > 0).all() and (np.diff(alphas) >= 0).all()
    assert alphas[0] == alphas[1] == 0, "a weight below 0.02 draws no line"
    assert alphas[-1] == 1.0


def test_head_view_of_cross_attention_has_key_tokens_of_its_own():
    src, tgt = "the black cat sat".split(), "le chat noir".split()
    built = mha.heads.translation(src, tgt, ("translation", "same position"))
    expected = _reference_weights(built)
    fig = plots.head_view(tgt, built.weights(), 2, key_tokens=src, untrained=True)
    parts = fig.head_view
    np.testing.assert_allclose(parts["weights"], expected[:, 2, :], atol=1e-12)
    assert plots.UNTRAINED in parts["title"].get_text()
    assert [t.get_text() for t in parts["keys"]] == src and [t.get_text() for t in parts["queries"]] == tgt + [""]
    assert parts["values"][0].get_text() == f"“black” {expected[0, 2, 1]:.2f}"  # noir -> black


def test_head_view_text_is_at_least_14_px():
    from matplotlib.text import Text

    built = mha.heads.constructed(SENTENCE)
    fig = plots.head_view(SENTENCE, built.weights(), 0)
    sizes = [t.get_fontsize() * fig.dpi / 72 for t in fig.findobj(Text) if t.get_text()]
    assert sizes and min(sizes) >= 14, f"smallest text {min(sizes):.1f} px"


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, 2), "query"),
        (lambda: plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, True), "query"),
        (lambda: plots.head_view(list("ab"), np.ones((2, 2)) / 2, 0), "weights"),
        (lambda: plots.head_view(list("abc"), np.ones((1, 2, 2)) / 2, 0), "tokens"),
        (lambda: plots.head_view(list("ab"), np.ones((1, 2, 3)) / 3, 0), "key_tokens"),
        (lambda: plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, 0, head_names=["a", "b"]), "head_names"),
        (lambda: view_figure.build_head_view(17, 2), "rows"),
        (lambda: view_figure.build_head_view(4, 8), "heads_shown"),
    ],
)
def test_head_view_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_head_view_under_nbgrader_draws_nothing(monkeypatch):
    monkeypatch.setenv("MHA_CORE_DRAW", "0")  # as the grading side runs a notebook
    fig = plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, 1)
    assert not fig.axes and "“b”" in fig.get_suptitle()


# --- end of the head view tests


def test_a_displayed_figure_is_drawn_once_for_its_png_and_its_img(monkeypatch):
    """IPython asks a figure for every format it shows: the PNG and the <img> with alt text come from one
    drawing (each cost one before), and a figure without alt text is drawn once too, as a PNG alone."""
    import base64

    from IPython.core.formatters import DisplayFormatter

    from mha_core.figures import base

    drawn, save = [], base.WorkbookFigure.savefig
    monkeypatch.setattr(base.WorkbookFigure, "savefig", lambda figure, *a, **k: drawn.append(figure) or save(figure, *a, **k))
    formatter = DisplayFormatter()
    fig = plots.heatmap(np.eye(3) / 3 + 0.2, ["a", "b", "c"], ["x", "y", "z"])
    data, _ = formatter.format(fig)
    assert len(drawn) == 1 and {"image/png", "text/html"} <= set(data)
    assert base64.b64encode(data["image/png"]).decode() in data["text/html"]
    assert f'alt="{html.escape(fig.alt)}"' in data["text/html"]
    fig.alt = ""
    data, _ = formatter.format(fig)
    assert len(drawn) == 2 and "image/png" in data and "text/html" not in data


def test_figures_carry_alt_text_from_their_data():
    """The <img> a figure shows as has alt text stating its numbers (JupyterLab gives a PNG none)."""
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.ones(4))
    fig = plots.weight_bars(w, labels=["the", "cat", "sat", "down"])
    top = ["the", "cat", "sat", "down"][int(np.argmax(w))]
    assert fig.alt.endswith(f"; {top} highest.") and all(f"{v:.2f}" in fig.alt for v in w)
    assert f'alt="{html.escape(fig.alt)}"' in fig._repr_html_()
    weights = rng.dirichlet(np.ones(3), size=3)
    fig = plots.heatmap(weights, ["a", "b", "c"], ["x", "y", "z"])
    for i, row in enumerate(weights):
        j = max(range(3), key=lambda k: row[k])
        assert f"{'abc'[i]} → {'xyz'[j]} {row[j]:.2f}" in fig.alt
    fig = plots.parameter_plot(d_model=8, hs=[1, 2])
    assert fig.alt.endswith(f"{4 * 8 * 8}, {4 * 8 * 8}.")


# --- figures sized in pixels for a projector (the classroom demo) ------------------------------------


def _visible_label_boxes(texts, renderer):
    return [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]


def _overlapping(boxes):
    """Pairs of boxes that share more than a pixel (a loop over every pair)."""
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1]


@pytest.mark.parametrize("n, h", [(1, 1), (8, 8), (10, 4), (16, 8), (23, 512)])
def test_readable_head_grid_labels_never_overlap_and_stay_in_the_figure(n, h):
    box, fs = (740, 560), 15
    tokens = sentences.TOKENS[:n]
    rows, cols, panel, step = screen.fit_head_grid(h, n, max(map(len, tokens)), box, fs)
    assert rows * cols <= h and panel * step >= n * screen.LABEL_PITCH * fs, "a label has less than LABEL_PITCH text heights"
    grid = screen.ReadableHeadGrid(box, fs)
    images = grid.layout(rows, cols, panel, tokens, step)
    grid.title.set_text("title")
    for k, image in enumerate(images):  # the longest names the demo gives its panels
        name = list(plots.PATTERN_TITLES.values())[k % 4]
        image.axes.set_title(f"head {k + 1}:\n{name}", fontsize=fs, linespacing=1.1)
    fig = grid.figure
    fig.draw_without_rendering()  # laid out and measured: the test reads boxes, not pixels
    renderer = fig.canvas.get_renderer()
    assert len(images) == rows * cols and sum(ax.get_visible() for ax in fig.axes) == rows * cols + 1  # + colour bar
    assert screen.min_text_px(fig) >= fs, "a text smaller than asked"
    for k in range(rows * cols):
        for labels in (grid.xlabels[k], grid.ylabels[k]):
            boxes = _visible_label_boxes(labels, renderer)
            assert not _overlapping(boxes), f"panel {k + 1}: token labels overlap at n={n}"
            for b in boxes:  # inside the figure's pixels
                assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= box[0] + 1 and b.y1 <= box[1] + 1
        shown = [t.get_text() for t in grid.ylabels[k] if t.get_visible()]
        if k % cols == 0:
            assert shown == tokens[::step], "the first column labels every step-th token"
    panels = [image.axes.get_window_extent(renderer) for image in images]
    assert not _overlapping(panels), "panels overlap"
    titles = [image.axes.title.get_window_extent(renderer) for image in images]
    assert not _overlapping(titles + panels), "a panel's title meets another title or a panel"
    xlabel = grid.xlabel.get_window_extent(renderer)
    assert all(xlabel.y1 <= p.y0 for p in panels) and xlabel.y0 >= -1, "the key-token label is under the panels"
    if n >= 16:  # the check sees overlap: every token labelled on a panel of 0.6 text heights a token
        grid.layout(1, 1, 0.6 * fs * n, tokens, 1)
        grid.figure.draw_without_rendering()
        assert _overlapping(_visible_label_boxes(grid.ylabels[0], renderer))


def test_fit_head_grid_shows_more_heads_for_fewer_tokens():
    shown = [np.prod(screen.fit_head_grid(512, n, 9, (740, 560))[:2]) for n in (1, 4, 8, 12, 16, 23)]
    assert shown == sorted(shown, reverse=True) and shown[0] > shown[-1] == 1
    assert np.prod(screen.fit_head_grid(3, 1, 9, (740, 560))[:2]) <= 3, "never more panels than heads"


def test_min_text_px_reads_the_smallest_text_and_raise_text_enlarges_it():
    fig = plots.WorkbookFigure(figsize=(4, 3), dpi=100)
    ax = fig.add_subplot()
    ax.set_title("title", fontsize=12)
    big = ax.text(0.5, 0.5, "big", fontsize=20)
    ax.set_xticks([0, 1], ["a", "b"], fontsize=8)
    ax.text(0.1, 0.1, "", fontsize=2)  # empty: not a text anyone reads
    assert screen.min_text_px(fig) == pytest.approx(8 * 100 / 72)
    screen.raise_text(fig, 14)
    assert screen.min_text_px(fig) == pytest.approx(14) and big.get_fontsize() == 20
    with pytest.raises(ValueError, match="px"):
        screen.raise_text(fig, 0)


def test_readable_heatmap_resizes_one_figure_and_writes_values_only_where_they_fit():
    heat = screen.ReadableHeatmap((740, 540), 15, xlabel="keys", ylabel="queries")
    rng = np.random.default_rng(0)
    for n_q, n_k in [(4, 6), (12, 12), (1, 1), (12, 3)]:
        rows, cols = [f"q{i}" for i in range(n_q)], [f"key{j}" for j in range(n_k)]
        heat.layout(rows, cols)
        data = rng.dirichlet(np.ones(n_k), size=n_q)  # (n_q, n_k), rows sum to 1
        heat.set_data(data)
        heat.figure.draw_without_rendering()
        renderer = heat.figure.canvas.get_renderer()
        cell = heat.shape[2]
        written = [t for t in heat.cells if t.get_visible()]
        if cell >= 2.6 * 15:
            assert [t.get_text() for t in written] == [f"{v:.2f}" for v in data.ravel()]
        else:
            assert not written, f"{n_q} x {n_k}: values written in {cell:.0f} px cells"
        for labels in (heat.xlabels, heat.ylabels):
            assert not _overlapping(_visible_label_boxes(labels, renderer))
        assert np.array_equal(heat.image.get_array(), data) and screen.min_text_px(heat.figure) >= 15
        for text in (heat.xlabel, heat.ylabel, heat.title):
            b = text.get_window_extent(renderer)
            assert b.x0 >= -1 and b.x1 <= 741 and b.y0 >= -1 and b.y1 <= 541, f"{text.get_text()!r} is cut"
    with pytest.raises(ValueError, match="rows"):
        heat.layout(["q"] * 13, ["k"])


def _bar_geometry(ax):
    return [[(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in bars.patches] for bars in ax.containers]


def test_flop_plot_can_leave_the_exponentials_out():
    hs = plots.head_options(512)
    full = {line.get_label(): line for line in plots.flop_plot(512, 10).axes[1].get_lines()}
    without = {line.get_label(): line for line in plots.flop_plot(512, 10, exponentials=False).axes[1].get_lines()}
    assert [k for k in full if "exponentials" in k] and not [k for k in without if "exponentials" in k]
    assert set(without) == {k for k in full if "exponentials" not in k}
    for label, line in without.items():
        np.testing.assert_array_equal(line.get_ydata(), full[label].get_ydata())
    left, right = plots.WorkbookFigure().subplots(1, 2)
    counts.draw_flops(left, right, 64, 5, plots.head_options(64), exponentials=False)
    counts.update_flops(left, right, 512, 10, hs, exponentials=False)
    np.testing.assert_array_equal(right.lines[1].get_ydata(), [2 * 10**2 * 512] * len(hs))
    assert len(right.lines) == 3 and right.get_ylim()[0] == pytest.approx(10**2 * 512 / 3)  # room under the scores


def _drawn_numbers(ax):
    """What update_flops and update_parameters must set: bars, lines, texts, ticks, limits and title."""
    return (_bar_geometry(ax), [(tuple(line.get_xdata()), tuple(line.get_ydata())) for line in ax.lines],
            [(t.get_text(), t.get_position()) for t in ax.texts], [t.get_text() for t in ax.get_xticklabels()],
            tuple(ax.get_xticks()), ax.get_xlim(), ax.get_ylim(), ax.get_title())


@pytest.mark.parametrize("before, after", [((64, 5), (64, 12)), ((64, 5), (768, 12)), ((768, 30), (64, 2)),
                                           ((512, 10), (100, 10))])
def test_update_flops_gives_the_bars_and_curves_of_a_fresh_drawing(before, after):
    fresh = plots.WorkbookFigure()
    counts.draw_flops(*fresh.subplots(1, 2), *after, plots.head_options(after[0]))
    updated = plots.WorkbookFigure()
    left, right = updated.subplots(1, 2)
    counts.draw_flops(left, right, *before, plots.head_options(before[0]))
    counts.update_flops(left, right, *after, plots.head_options(after[0]))
    for a, b in zip(fresh.axes, (left, right)):
        for x, y in zip(_drawn_numbers(a), _drawn_numbers(b)):
            np.testing.assert_equal(x, y)
    total = mha.flop_count(after[0], 1, after[1])["multiply_adds"]
    assert left.texts[0].get_text() == f"{total:,} for every h"
    assert sum(len(bars) for bars in left.containers) == 4 * len(plots.head_options(after[0]))
    legend = [t.get_text() for t in left.get_legend().get_texts()]
    assert legend == [label for _, label in counts.STAGES], "the legend is kept, never doubled"
    with pytest.raises(ValueError, match="bars"):
        counts.update_flops(*plots.WorkbookFigure().subplots(1, 2), 64, 12, plots.head_options(64))


@pytest.mark.parametrize("before, after", [(64, 768), (768, 64), (512, 96)])
def test_update_parameters_gives_the_bars_of_a_fresh_drawing(before, after):
    fresh = counts.draw_parameters(plots.WorkbookFigure().add_subplot(), after, plots.head_options(after))
    ax = counts.draw_parameters(plots.WorkbookFigure().add_subplot(), before, plots.head_options(before))
    counts.update_parameters(ax, after, plots.head_options(after))
    for x, y in zip(_drawn_numbers(fresh), _drawn_numbers(ax)):
        np.testing.assert_equal(x, y)
    tops = [y + height for x, y, width, height in _bar_geometry(ax)[-1]]
    assert tops == [4 * after**2] * len(plots.head_options(after)), "every stack reaches 4·d_model²"
    assert ax.texts[0].get_text() == f"4·d_model² = 4·{after}² = {4 * after**2:,}"


@pytest.mark.parametrize("d_model, n", [(64, 2), (64, 64), (512, 10), (1024, 64), (768, 2), (8, 1)])
def test_flop_curves_and_bars_never_cross_their_legends(d_model, n):
    """The legends sit in room kept free above the bars and the curves, for every d_model and n the
    explorers offer (the claim's line used to run through the right panel's legend at d_model = 1024)."""
    fig = plots.WorkbookFigure(figsize=(1180 / 72, 450 / 72), dpi=72)
    left, right = fig.subplots(1, 2)
    counts.draw_flops(left, right, d_model, n, plots.head_options(d_model))
    screen.raise_text(fig, 15)
    fig.draw_without_rendering()  # laid out and measured: the test reads boxes, not pixels
    renderer = fig.canvas.get_renderer()
    for ax in (left, right):
        box = ax.get_legend().get_window_extent(renderer)
        points = []
        for line in ax.lines:
            xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
            steps = np.linspace(0, 1, 25)[:, None, None]
            points.append((xy[:-1] + steps * (xy[1:] - xy[:-1])).reshape(-1, 2) if len(xy) > 1 else xy)
        for bars in ax.containers:
            points.append(np.array([[p.get_window_extent(renderer).x0, p.get_window_extent(renderer).y1]
                                    for p in bars.patches]))
        points = np.concatenate(points)
        inside = (points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)
        assert not inside.any(), f"{ax.get_title()!r}: {inside.sum()} points of the data inside the legend"
