"""mha_core.widgets without a browser: set controls' ``.value`` and check what is shown."""

import functools
import re

import numpy as np
import pytest

from autograders.problems.level4 import SHEET_4_2
from autograders.student.sentences import ENGLISH, FRENCH, HEAD_VIEW_SENTENCES, SENTENCE, TOKENS
import mha_core as mha
from mha_core import access, plots, widgets
from mha_core.figures import screen
from mha_core.explore import shapes

KV_4_2 = {"K": SHEET_4_2["keys"], "V": SHEET_4_2["values"]}  # Problem 4.2's keys and values


@pytest.fixture(scope="module")
def explorer():
    return widgets.shape_explorer(d_model=64, h=8, n=6)


@pytest.fixture
def state_only(monkeypatch):
    """The explorers of a test build their controls, state, readouts and alt text without drawing a figure: for
    tests that read no picture (each explorer's drawing is tested below, and the state is the drawn one's:
    test_under_nbgrader_explorers_compute_everything_but_draw_nothing)."""
    monkeypatch.setattr(mha, "_drawing", False)


def test_explorers_are_containers_with_controls_apart_from_outputs(explorer):
    import ipywidgets

    assert isinstance(explorer, ipywidgets.VBox)
    assert set(explorer.controls) == {"d_model", "h", "n", "causal", "seed", "source"}
    assert isinstance(explorer.image, ipywidgets.Image) and bytes(explorer.image.value).startswith(b"\x89PNG")
    assert explorer.image in explorer.children, "the image is an output, not inside the controls box"


def test_shape_explorer_shows_d_k_the_table_and_every_head(explorer):
    s = explorer.state
    assert (s["d_model"], s["h"], s["n"], s["d_k"]) == (64, 8, 6, 8)
    assert "64 / 8 = <b>8</b>" in explorer.readout.value
    assert explorer.table.value == shapes.shape_table_html(mha.shape_table(64, 8, 6))
    assert len(s["shown"]) == 8 and s["shown"][0].shape == (6, 6)
    x = plots.example_embeddings(6, 64, 0)
    _, expected = mha.MultiHeadAttention.from_seed(64, 8, 0)(x)
    np.testing.assert_allclose(np.ma.getdata(np.array(s["shown"])), expected)


def test_changing_n_changes_table_shapes_and_image():
    e = widgets.shape_explorer(d_model=64, h=4, n=5)
    png, builds = e.image.value, e.canvas.builds
    e.controls["n"].value = 7
    assert e.state["n"] == 7 and e.state["shown"][0].shape == (7, 7)
    assert "7 × 16" in e.table.value and "5 × 16" not in e.table.value
    assert e.image.value != png and e.canvas.builds == builds + 1, "a new n is a new layout"


def test_h_is_offered_only_as_divisors_of_d_model(state_only):
    e = widgets.shape_explorer(d_model=512, h=8, n=4)
    assert list(e.controls["h"].options) == plots.head_options(512)
    e.controls["d_model"].value = 768
    assert list(e.controls["h"].options) == [d for d in range(1, 769) if 768 % d == 0]
    assert e.state["h"] == 8 and e.state["d_k"] == 96 and "768 / 8 = <b>96</b>" in e.readout.value
    e.controls["h"].value = 12
    assert e.state["d_k"] == 64
    e.controls["d_model"].value = 520  # 520 = 8 * 65: 12 is not a divisor, 13 is the nearest
    assert list(e.controls["h"].options) == [d for d in range(1, 521) if 520 % d == 0]
    assert e.state["h"] == 13 and e.state["d_k"] == 40
    assert e.state["h"] in e.controls["h"].options


def test_data_only_change_updates_the_image_without_a_new_layout():
    e = widgets.shape_explorer(d_model=64, h=4, n=5)
    png, builds, figure = e.image.value, e.canvas.builds, e.figure
    before = np.array(e.state["shown"])
    e.controls["seed"].value = 1
    assert e.canvas.builds == builds and e.figure is figure, "same layout: no new figure"
    assert e.image.value != png
    assert not np.allclose(np.array(e.state["shown"]), before)


def test_causal_toggle_masks_the_upper_triangle(state_only):
    e = widgets.shape_explorer(d_model=64, h=4, n=5)
    e.controls["causal"].value = True
    upper = ~mha.causal_mask(5)
    for shown in e.state["shown"]:
        assert isinstance(shown, np.ma.MaskedArray)
        np.testing.assert_array_equal(np.ma.getmaskarray(shown), upper)
        np.testing.assert_allclose(shown.sum(axis=1), 1.0)
    assert "masked" in e.note.value
    e.controls["causal"].value = False
    assert not np.ma.getmaskarray(e.state["shown"][0]).any()


def test_many_heads_are_capped_and_said_so(state_only):
    e = widgets.shape_explorer(d_model=64, h=32, n=3)
    assert e.state["shown_heads"] == widgets.MAX_PANELS == len(e.state["shown"])
    assert "showing 16 of 32 heads" in e.note.value


def test_shape_explorer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="h must divide d_model"):
        widgets.shape_explorer(d_model=512, h=3)
    with pytest.raises(ValueError, match="tokens"):
        widgets.shape_explorer(n=5, tokens=["a", "b"])


def test_softmax_playground_shows_softmax_of_scores_over_temperature():
    p = widgets.softmax_playground((4.0, 2.0, 5.0))
    assert set(p.controls) == {"s1", "s2", "s3", "temperature", "link", "d_k"}
    np.testing.assert_allclose(p.state["weights"], [0.2595, 0.0351, 0.7054], atol=1e-4)
    assert [t.get_text() for t in p.texts] == ["0.2595", "0.0351", "0.7054"]
    png = p.image.value
    p.controls["s2"].value = 6.0
    p.controls["temperature"].value = 2.0
    expected = mha.softmax(np.array([4.0, 6.0, 5.0]) / 2.0)
    np.testing.assert_allclose(p.state["weights"], expected)
    np.testing.assert_allclose([b.get_height() for b in p.bars.patches], expected)
    entropy = -(expected * np.log(expected)).sum()
    assert p.state["entropy"] == pytest.approx(entropy)
    assert f"{entropy:.4f}" in p.readout.value
    assert p.image.value != png


def test_softmax_playground_rejects_mismatched_labels():
    with pytest.raises(ValueError, match="labels"):
        widgets.softmax_playground((1.0, 2.0), labels=["a"])


def test_cross_attention_explorer_shows_an_n_q_by_n_k_matrix():
    c = widgets.cross_attention_explorer(n_q=4, n_k=6, d_model=64, h=4, source="random", source_tokens=ENGLISH,
                                         target_tokens=FRENCH)
    assert set(c.controls) == {"n_q", "n_k", "head", "source"}
    assert c.state["shown"].shape == (4, 6) and c.state["output_shape"] == (4, 64)
    assert "4 × 6" in c.readout.value and "4 × 64" in c.readout.value
    c.controls["n_q"].value = 3
    c.controls["n_k"].value = 9
    assert c.state["shown"].shape == c.state["score_shape"] == (3, 9)
    assert "3 × 9" in c.readout.value and "3 × 64" in c.readout.value
    ax = c.figure.axes[0]
    assert len(ax.get_yticklabels()) == 3 and len(ax.get_xticklabels()) == 9
    first, png, builds = c.state["shown"].copy(), c.image.value, c.canvas.builds
    c.controls["head"].value = 2
    assert c.canvas.builds == builds and c.image.value != png
    np.testing.assert_array_equal(c.state["shown"], c.state["all_weights"][1])
    assert not np.allclose(c.state["shown"], first)
    assert [t.get_text() for t in c.texts[:2]] == [f"{v:.2f}" for v in c.state["weights"][0, :2]]


@pytest.mark.parametrize("make, control, value", [
    (lambda: widgets.shape_explorer(d_model=64, h=4, n=5), "n", 6),
    (lambda: widgets.softmax_playground(), "temperature", 2.0),
    (lambda: widgets.cross_attention_explorer(n_q=3, n_k=5, source_tokens=ENGLISH, target_tokens=FRENCH), "n_q", 4),
    (lambda: widgets.flop_explorer(d_model=64, n=4), "n", 5),
    (lambda: widgets.sum_concat_explorer(SENTENCE, "it"), "token", "cat"),
    (lambda: widgets.head_grid_explorer(SENTENCE), "shared", True),
    (lambda: widgets.parameter_explorer(d_model=64), "d_model", 72),
    (lambda: widgets.causal_step_explorer(**KV_4_2), "position", 2),
    (lambda: widgets.head_view_explorer(HEAD_VIEW_SENTENCES), "query", 2),
])
def test_under_nbgrader_explorers_compute_everything_but_draw_nothing(make, control, value, monkeypatch):
    drawn = make()
    monkeypatch.setenv("MHA_CORE_DRAW", "0")  # as the grading side runs a notebook
    headless = make()
    assert drawn.image.value and drawn.canvas.builds == 1
    assert headless.image.value == b"" and headless.canvas.builds == 0
    assert headless.state.keys() == drawn.state.keys()
    for key, state in drawn.state.items():
        np.testing.assert_equal(headless.state[key], state, err_msg=key)
    headless.controls[control].value = value  # a slider still updates what is computed
    assert headless.state[control] == value and headless.image.value == b""


# --- weights' source, accessibility, defaults ------------------------------------------------------


def test_shape_explorer_switches_between_random_and_constructed_heads():
    e = widgets.shape_explorer(d_model=96, h=4, n=10, tokens=SENTENCE)
    assert e.state["untrained"] and plots.UNTRAINED in e.figure.get_suptitle() and plots.UNTRAINED in e.note.value
    e.controls["source"].value = "constructed"
    assert not e.state["untrained"] and plots.UNTRAINED not in e.figure.get_suptitle()
    built = mha.heads.constructed(SENTENCE, ("previous", "same word", "first", "pronoun"), d_model=96)
    np.testing.assert_allclose(np.ma.getdata(np.array(e.state["shown"])), built.weights())
    assert e.state["head_names"][3] == "head 4: pronoun → its noun"
    it, cat = SENTENCE.index("it"), SENTENCE.index("cat")
    assert int(np.argmax(e.state["shown"][3][it])) == cat
    assert "head 1: previous token: strongest key is itself in 1, the previous token in 9 of 10 rows" in e.state["alt"]
    e.controls["h"].value = 32  # d_k = 3 cannot hold the codes: random weights, and the note says why
    assert e.state["untrained"] and "wider d_k" in e.note.value


def test_controls_have_names_and_announce_what_they_show(state_only):
    import ipywidgets

    for explorer in (widgets.shape_explorer(d_model=64, h=4, n=5), widgets.softmax_playground(),
                     widgets.cross_attention_explorer(source_tokens=ENGLISH, target_tokens=FRENCH),
                     widgets.flop_explorer(d_model=64, n=4), widgets.sum_concat_explorer(SENTENCE, "it"),
                     widgets.head_grid_explorer(SENTENCE), widgets.parameter_explorer(64),
                     widgets.causal_step_explorer(**KV_4_2)):
        for name, control in explorer.controls.items():
            assert control.description, f"{name} has no accessible name"
            assert not isinstance(control, (ipywidgets.SelectionSlider, ipywidgets.Checkbox,
                                            ipywidgets.ToggleButton)), f"{name}: its state or value is not announced"
        assert explorer.canvas.alt == explorer.state["alt"] and explorer.canvas.alt
        # the alt text is the image's tooltip (its <img>'s title; alt by the page script), synced with a
        # description so that ipywidgets' view can write it (it reads one; Image has none)
        assert explorer.image.tooltip == explorer.canvas.alt and "description" in explorer.image.keys
        assert "aria-live='polite'" in explorer.canvas.caption.value
        assert explorer.canvas.caption in explorer.children
        assert {access.LIVE} <= set(explorer.canvas.caption._dom_classes) & set(explorer.readout._dom_classes)
        scripts = [c for c in explorer.children if isinstance(c, ipywidgets.Output)]
        assert [o["data"]["application/javascript"] for c in scripts for o in c.outputs] == [access.SCRIPT]


def test_alt_text_follows_the_data(state_only):
    p = widgets.softmax_playground((1.0, 3.0, 2.0))
    w = mha.softmax(np.array([1.0, 3.0, 2.0]))
    assert p.canvas.alt == (f"Bar chart of the weights at T = 1.00: token 1 {w[0]:.2f}, token 2 {w[1]:.2f}, "
                               f"token 3 {w[2]:.2f}; token 2 highest.")
    p.controls["s1"].value = 9.0
    assert p.canvas.alt.endswith("token 1 highest.") and "token 1 1.00" in p.canvas.alt


def test_defaults_are_not_the_graded_values(state_only):
    p = widgets.softmax_playground()
    assert tuple(p.state["scores"]) != (4.0, 2.0, 5.0), "Problem 2.3's scores"
    c = widgets.cross_attention_explorer(source_tokens=ENGLISH, target_tokens=FRENCH)
    assert (c.state["n_q"], c.state["n_k"]) != (4, 6), "Problem 5.3's shapes"
    e = widgets.shape_explorer()
    assert (e.state["d_model"], e.state["h"]) not in {(512, 8), (768, 12)}, "Problems 1.1 and 2.1"


def test_the_softmax_playground_s_temperature_reaches_round_values_in_a_few_presses(state_only):
    """Level 2's playground starts at T = 2 and asks for T = 1: 4 arrow presses on the log slider's stops;
    a typed value (the readout is editable) is kept as typed."""
    from mha_core.explore import softmax

    p = widgets.softmax_playground(scores=(4.0, 2.0, 5.0), temperature=2.0)
    T = p.controls["temperature"]
    assert (T.base, T.step) == (softmax.T_BASE, softmax.T_STEP_EXP)
    stops = [round(t, 9) for t in softmax.temperatures()]
    assert stops.index(round(T.value, 9)) - stops.index(1.0) == 4
    T.value = 3.0
    assert p.state["temperature"] == 3.0


def test_softmax_playground_links_the_temperature_to_sqrt_d_k(state_only):
    p = widgets.softmax_playground((1.0, 3.0, 2.0))
    p.controls["link"].value = True
    T = p.controls["temperature"]
    assert T.value == pytest.approx(8.0) and T.disabled and p.state["temperature"] == pytest.approx(8.0)
    np.testing.assert_allclose(p.state["weights"], mha.softmax(np.array([1.0, 3.0, 2.0]) / 8.0))
    assert "√64 = <b>8</b>" in p.readout.value
    p.controls["d_k"].value = 16
    assert p.state["temperature"] == pytest.approx(4.0)
    np.testing.assert_allclose(p.state["weights"], mha.softmax(np.array([1.0, 3.0, 2.0]) / 4.0))
    p.controls["link"].value = False
    assert not T.disabled
    T.value = 1.0
    np.testing.assert_allclose(p.state["weights"], mha.softmax(np.array([1.0, 3.0, 2.0])))


def test_cross_attention_explorer_translates_english_source_into_french_target():
    c = widgets.cross_attention_explorer(n_q=3, n_k=6, source_tokens=ENGLISH, target_tokens=FRENCH)
    assert c.state["targets"] == ["le", "chat", "noir"] and c.state["sources"] == ENGLISH[:6]
    ax = c.figure.axes[0]
    assert "decoder" in ax.get_ylabel() and "encoder" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["le", "chat", "noir"]
    assert c.state["sources"][int(np.argmax(c.state["weights"][2]))] == "black", "noir -> black"
    assert "noir → black" in c.canvas.alt
    c.controls["head"].value = 2  # same position: noir (3rd) -> cat (3rd)
    assert c.state["sources"][int(np.argmax(c.state["weights"][2]))] == "cat"
    c.controls["source"].value = "random"
    assert c.state["untrained"] and plots.UNTRAINED in c.figure.axes[0].get_title()


# --- Level 3 explorers -----------------------------------------------------------------------------


def test_flop_explorer_follows_d_model_and_n_without_a_new_figure():
    f = widgets.flop_explorer(d_model=256, n=8)
    assert f.state["attention"] == [2 * 8 * 8 * 256] * len(plots.head_options(256)), "flat in h"
    figure, png = f.figure, f.image.value
    f.controls["d_model"].value = 768
    f.controls["n"].value = 12
    hs = plots.head_options(768)
    assert f.state["hs"] == hs and f.figure is figure and f.canvas.builds == 1 and f.image.value != png
    assert f.state["attention"] == [mha.flop_count(768, h, 12)["scores"] * 2 for h in hs]
    assert f.state["claim"] == [h * 2 * 12 * 12 * 768 for h in hs]
    assert f.state["softmax"] == [h * 144 for h in hs]
    right = f.figure.axes[1]
    (line,) = [ln for ln in right.get_lines() if ln.get_label().startswith("scores +")]
    np.testing.assert_array_equal(line.get_ydata(), f.state["attention"])
    assert "768" in f.canvas.alt and f"{2 * 144 * 768:,}" in f.canvas.alt


def test_level_3_s_flop_explorer_shows_no_exponentials_at_any_slider_value():
    """3.1's written answer names a part that grows with h (the h·n² exponentials among them): the explorer
    the level runs, with its own call, leaves them out of its figure, readout and alt text, as it is moved."""
    from tests.conftest import NOTEBOOKS, read

    (cell,) = [c for c in read(NOTEBOOKS / "level3_analysis.ipynb").cells
               if c.cell_type == "code" and "flop_explorer(" in c.source]
    f = eval(cell.source.split("#")[0], {"mha": mha})  # noqa: S307 - the notebook's own one-line call
    for d_model, n in ((512, 10), (768, 30), (64, 2)):
        with f.paused():  # one redraw for both
            f.controls["d_model"].value, f.controls["n"].value = d_model, n
        labels = [line.get_label() for line in f.figure.axes[1].get_lines()]
        assert len(labels) == 3 and not any("exponential" in label or "softmax" in label for label in labels)
        for text in (f.state["readout"], f.canvas.alt):
            assert "exponential" not in text and "softmax" not in text, text
        assert f.state["attention"] == [2 * n * n * d_model] * len(plots.head_options(d_model))
    assert any("exponential" in line.get_label() for line in widgets.flop_explorer(512, 10).figure.axes[1].get_lines())


@pytest.mark.parametrize("make, cases", [
    (lambda: widgets.flop_explorer(d_model=256, n=8), [[("n", 30)], [("d_model", 768), ("n", 2)],
                                                       [("d_model", 8), ("d_model", 1024)]]),
    (lambda: widgets.parameter_explorer(d_model=256), [[("d_model", 768)], [("d_model", 8), ("d_model", 1000)]])])
def test_count_explorers_blit_a_change_to_the_pixels_of_a_whole_drawing(make, cases):
    """A new n or d_model is drawn in place over the saved frame and legends: the picture is the one a whole
    drawing of the same figure gives (its layout is the first one's: laid out once), with the new numbers.
    One explorer of each kind goes through its cases, moved back to its start values before each."""
    import io

    from PIL import Image

    f = make()
    start = {name: control.value for name, control in f.controls.items()}
    for changes in cases:
        with f.paused():
            for name, value in start.items():
                f.controls[name].value = value
        for name, value in changes:
            f.controls[name].value = value
        blitted = np.asarray(Image.open(io.BytesIO(bytes(f.image.value))), int)
        dynamic = list(f.canvas.dynamic)
        for artist in dynamic:
            artist.set_animated(False)
        f.figure.canvas.draw()
        whole = np.asarray(Image.open(io.BytesIO(f.canvas.png())), int)
        for artist in dynamic:  # dynamic again, as the explorer keeps them
            artist.set_animated(True)
        # the same picture, but for a few pixels where a tick label's edge meets the frame drawn before it
        assert blitted.shape == whole.shape and (np.abs(blitted - whole).sum(axis=-1) > 30).sum() <= 5, changes
        d_model = f.controls["d_model"].value
        assert f.canvas.builds == 1 and [t.get_text() for t in f.figure.axes[0].get_xticklabels()][-1] == str(d_model)
        if "n" in f.controls:
            assert f"d_model = {d_model}, n = {f.controls['n'].value}" in f.figure.axes[0].get_title()
        else:
            assert f"{4 * d_model**2:,}" in f.figure.axes[0].texts[0].get_text()


def test_sum_concat_explorer_swapping_heads_changes_the_concatenation_not_the_sum():
    s = widgets.sum_concat_explorer(SENTENCE, "it")
    assert "swap heads 1 and 2" in s.readout.value and "e+00" not in s.readout.value, "no '0 entries' before a swap"
    concat, summed = s.state["concat"].copy(), s.state["summed"].copy()
    built = mha.heads.constructed(SENTENCE, ("previous", "same word", "first", "pronoun"), seed=1)
    d_k = built.block.d_k
    assert concat.shape == (10, 4 * d_k) and summed.shape == (10, d_k)
    np.testing.assert_allclose(summed, sum(concat[:, k * d_k:(k + 1) * d_k] for k in range(4)))
    png = s.image.value
    s.controls["order"].value = True
    np.testing.assert_allclose(s.state["concat"][:, :d_k], concat[:, d_k:2 * d_k], err_msg="blocks 1 and 2 swap")
    np.testing.assert_allclose(s.state["summed"], summed, err_msg="the sum cannot tell")
    assert s.state["changed_concat"] > 0 and s.state["changed_sum"] < 1e-12
    assert f"{s.state['changed_concat']} entries of the concatenation changed, the sum not at all" in s.readout.value
    assert s.image.value != png and s.canvas.builds == 1
    assert "pronoun → its noun) found <b>cat</b>" in s.readout.value
    s.controls["token"].value = "cat"
    assert "previous token) found <b>the</b>" in s.readout.value
    s.controls["source"].value = "random"
    assert plots.UNTRAINED in s.figure.get_suptitle() and s.state["changed_sum"] < 1e-12


def test_head_grid_explorer_sharing_head_1s_projections_gives_identical_panels():
    g = widgets.head_grid_explorer(SENTENCE)
    assert g.state["distinct"] == 4 and "<b>4</b> different patterns" in g.readout.value
    own = g.state["weights"].copy()
    png = g.image.value
    g.controls["shared"].value = True
    assert g.state["distinct"] == 1 and g.canvas.builds == 1 and g.image.value != png
    for w in g.state["weights"]:
        np.testing.assert_allclose(w, own[0])
    assert g.figure.get_suptitle().startswith("All 4 heads sharing")
    g.controls["source"].value = "random"
    assert g.state["distinct"] == 1 and plots.UNTRAINED in g.figure.get_suptitle()
    g.controls["shared"].value = False
    assert g.state["distinct"] == 4
    for image, w in zip(g.images, g.state["weights"]):
        np.testing.assert_allclose(np.ma.getdata(image.get_array()), w)


# --- Level 4 explorers -----------------------------------------------------------------------------


def test_parameter_explorer_is_flat_at_4_d_model_squared_for_every_h():
    p = widgets.parameter_explorer(d_model=256)
    assert p.state["counts"] == [4 * 256**2] * len(plots.head_options(256))
    figure, png = p.figure, p.image.value
    p.controls["d_model"].value = 96
    assert p.state["hs"] == [d for d in range(1, 97) if 96 % d == 0]
    assert p.state["counts"] == [4 * 96 * 96] * len(p.state["hs"]) and f"{4 * 96 * 96:,}" in p.readout.value
    assert p.figure is figure and p.canvas.builds == 1 and p.image.value != png
    ax = p.figure.axes[0]
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x(), 9)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert sorted(tops.values()) == [4 * 96 * 96] * len(p.state["hs"])


PROBLEM_Q = np.array([1.0, 0.0])
K = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
V = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]])


def by_hand(q, position):
    """Problem 4.2 step by step with a loop: scores, scaled scores, weights over keys 1..position, output."""
    scores = np.array([q @ k for k in K])
    scaled = scores / np.sqrt(2)
    e = np.array([np.exp(s) if j < position else 0.0 for j, s in enumerate(scaled)])
    w = e / e.sum()
    return scores, scaled, w, sum(w_j * v for w_j, v in zip(w, V))


def test_causal_step_explorer_does_not_start_at_the_problems_query(state_only):
    c = widgets.causal_step_explorer(**KV_4_2)
    assert not np.allclose(c.state["q"], PROBLEM_Q), "the student must not see 4.2's answer before answering"
    assert c.state["position"] == 4 and c.state["allowed"].all()
    _, _, _, answer = by_hand(PROBLEM_Q, 4)
    assert f"{answer[0]:.4f}" not in c.readout.value and f"{answer[0]:.2f}" not in c.canvas.alt


def test_causal_step_explorer_follows_the_query_and_its_position():
    c = widgets.causal_step_explorer(**KV_4_2)
    for q, position in [((0.0, 1.0), 4), ((2.0, -1.0), 4), ((2.0, -1.0), 2), ((-3.0, 3.0), 1)]:
        with c.paused():
            c.controls["q1"].value, c.controls["q2"].value = q
            c.controls["position"].value = position
        scores, scaled, w, out = by_hand(np.array(q), position)
        np.testing.assert_allclose(c.state["scores"], scores)
        np.testing.assert_allclose(c.state["scaled"], scaled)
        np.testing.assert_allclose(c.state["weights"], w, atol=1e-12)
        np.testing.assert_allclose(c.state["output"], out)
        np.testing.assert_allclose([b.get_height() for b in c.bars[2]], w, atol=1e-12)
        assert [t.get_text() for t in c.texts[2]][position:] == ["masked"] * (4 - position)
        assert c.row.get_y() == position - 1.5, "the mask's row is the query's position"
        np.testing.assert_allclose(c.star.get_xdata(), [out[0]])
        assert f"({out[0]:.4f}, {out[1]:.4f})" in c.readout.value
    assert c.canvas.builds == 1, "moving q redraws the bars, not the figure"


def test_causal_step_explorer_table_has_padded_columns(state_only):
    html = widgets.causal_step_explorer(**KV_4_2).readout.value
    cells = re.findall(r"<t[dh]\b[^>]*>", html)
    assert len(cells) == 4 * 5, "a header and 4 keys, 4 columns each"
    assert all(f"style='{widgets.STEP_CELL}" in cell for cell in cells), "numbers in a row must not run together"
    assert "padding" in widgets.STEP_CELL


@pytest.mark.parametrize("build", [
    lambda: widgets.parameter_explorer(d_model=256),
    lambda: widgets.sum_concat_explorer(SENTENCE, "it"),
    lambda: widgets.causal_step_explorer(**KV_4_2),
    lambda: widgets.shape_explorer(d_model=16, h=2, n=4),
])
def test_explorer_controls_keep_their_width_beside_the_readout(build, state_only):
    """A long readout beside the controls wraps: it must not squeeze them (a slider's value hidden,
    radio labels cut, as seen in JupyterLab)."""
    explorer = build()
    row = explorer.children[0]
    assert row.children[0] is explorer.controls_box
    assert set(explorer.controls.values()) <= set(explorer.controls_box.children)
    assert explorer.controls_box.layout.flex == "0 0 auto"


def test_causal_step_explorer_rejects_bad_data():
    with pytest.raises(ValueError, match="K"):
        widgets.causal_step_explorer(K=np.ones((4, 3)), V=KV_4_2["V"])
    with pytest.raises(ValueError, match="V"):
        widgets.causal_step_explorer(K=KV_4_2["K"], V=np.ones((3, 2)))
    with pytest.raises(ValueError, match="q"):
        widgets.causal_step_explorer(q=(5.0, 0.0), **KV_4_2)
    with pytest.raises(ValueError, match="position"):
        widgets.causal_step_explorer(position=5, **KV_4_2)
    with pytest.raises(ValueError, match="K must be given"):
        widgets.causal_step_explorer()


# --- where does this word look? ----------------------------------------------------------------------


def _loop_weights(block, x, x_kv=None):
    """Every head's weights from the plain-loop reference implementation."""
    from tests import reference

    _, weights = reference.multi_head_attention(x, x if x_kv is None else x_kv, block.W_Q, block.W_K, block.W_V,
                                                block.W_O, block.h)
    return np.array(weights)  # (h, n_q, n_k)


def test_head_view_explorer_draws_the_chosen_words_row_of_every_constructed_head():
    v = widgets.head_view_explorer(HEAD_VIEW_SENTENCES)
    tokens = SENTENCE
    it, cat = tokens.index("it"), tokens.index("cat")
    built = mha.heads.constructed(tokens, widgets.PATTERNS, seed=1)
    expected = _loop_weights(built.block, built.x)
    assert (v.state["sentence"], v.state["query"], v.state["source"]) == (0, it, "constructed")
    np.testing.assert_allclose(v.state["rows"], expected[:, it, :], atol=1e-12)
    np.testing.assert_allclose(v.state["drawn"], expected[:, it, :], atol=1e-12, err_msg="what the figure drew")
    assert v.state["names"] == [plots.PATTERN_TITLES[p] for p in widgets.PATTERNS]
    assert f"pronoun → its noun looks at “cat” ({expected[3, it, cat]:.2f})" in v.state["alt"]
    assert v.state["alt"].startswith("Constructed heads. Lines from “it” (word 8 of 10)")
    before, builds = bytes(v.image.value), v.canvas.builds
    v.controls["query"].value = cat
    np.testing.assert_allclose(v.state["drawn"], expected[:, cat, :], atol=1e-12)
    assert bytes(v.image.value) != before and "Lines from “cat” (word 2 of 10)" in v.state["alt"]
    assert v.canvas.builds == builds, "a new word redraws the lines, not the layout"


def test_head_view_explorer_switches_to_random_weights():
    v = widgets.head_view_explorer(HEAD_VIEW_SENTENCES)
    it = v.state["query"]
    built = mha.heads.constructed(SENTENCE, widgets.PATTERNS, seed=1)
    v.controls["source"].value = "random"
    block = mha.MultiHeadAttention.from_seed(built.block.d_model, built.block.h, 1)
    np.testing.assert_allclose(v.state["drawn"], _loop_weights(block, built.x)[:, it, :], atol=1e-12)
    assert v.state["names"] == ["head 1", "head 2", "head 3", "head 4"]
    assert plots.UNTRAINED in v.parts["title"].get_text() and v.state["alt"].startswith("Random (untrained)")
    assert v.state["rows"].max() < 0.5 and "spread out" in v.state["alt"]


def test_head_view_explorer_new_sentence_resets_the_word_and_shows_the_translation_heads():
    v = widgets.head_view_explorer(HEAD_VIEW_SENTENCES)
    english, french = "the black cat sat on the mat".split(), "le chat noir s'assit sur le tapis".split()
    v.controls["sentence"].value = 4
    noir = french.index("noir")
    assert v.state["query"] == noir and v.state["cross"] and v.state["key_tokens"] == english
    assert [label for label, _ in v.controls["query"].options] == ["le (1)", "chat", "noir", "s'assit", "sur",
                                                                   "le (2)", "tapis"]
    built = mha.heads.translation(english, french, widgets.CROSS_PATTERNS, seed=1)
    expected = _loop_weights(built.block, built.x, built.x_kv)
    np.testing.assert_allclose(v.state["drawn"], expected[:, noir, :], atol=1e-12)
    assert int(np.argmax(expected[0, noir])) == english.index("black"), "translation: noir -> black"
    assert int(np.argmax(expected[1, noir])) == english.index("cat"), "same position: noir -> cat"
    assert "word → its translation looks at “black”" in v.state["alt"]
    assert [t.get_text() for t in v.parts["keys"]][: len(english)] == english


def test_head_view_explorer_controls_are_named_and_announced(state_only):
    import ipywidgets

    v = widgets.head_view_explorer(HEAD_VIEW_SENTENCES)
    assert set(v.controls) == {"sentence", "query", "source"}
    for name, control in v.controls.items():
        assert control.description, f"{name} has no accessible name"
    assert isinstance(v.controls["query"], ipywidgets.RadioButtons), "the chosen word is announced as selected"
    assert "aria-live='polite'" in v.canvas.caption.value and v.canvas.alt == v.state["alt"]
    assert v.canvas.caption in v.children


@pytest.mark.parametrize("kwargs, name", [
    ({"sentence": 9}, "sentence"),
    ({"query": 10}, "query"),
    ({"sentences": [("long", ["w"] * 17, None, "w")]}, "sentences"),
    ({"sentences": [("x", ["w"])]}, "sentences"),
    ({"sentences": None}, "sentences"),
])
def test_head_view_explorer_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        widgets.head_view_explorer(**{"sentences": HEAD_VIEW_SENTENCES, **kwargs})


# --- end of the head view tests


# --- explorers sized in pixels for a projector (the classroom demo) ----------------------------------


def test_shape_explorer_in_a_box_shows_the_heads_that_fit_and_pages_through_the_rest():
    e = widgets.shape_explorer(d_model=64, h=8, n=8, box=(740, 560))
    figure = e.figure
    shown = e.state["shown_heads"]
    assert 1 <= shown < 8 and e.state["grid"][0] * e.state["grid"][1] == shown
    pages = [value for _, value in e.controls["heads"].options]
    covered = sorted({head for first in pages for head in range(first, first + shown)})
    assert covered == list(range(1, 9)), "every head is on a page"
    e.controls["heads"].value = pages[-1]
    first = e.state["first_head"]
    assert first == pages[-1] and first + shown - 1 == 8
    for k, panel in enumerate(e.state["shown"]):  # the panels are heads first .. first + shown - 1
        np.testing.assert_allclose(np.ma.filled(panel, np.nan), e.state["weights"][first - 1 + k])
    assert f"showing heads {first} to 8 of 8" in e.note.value
    e.controls["n"].value = 16  # fewer heads fit: the same figure, the page that held head `first`
    assert e.figure is figure and e.state["shown_heads"] < shown and e.state["first_head"] <= first
    e.controls["h"].value = 1
    assert e.figure is figure and e.state["shown_heads"] == 1 and "all 1 head" in e.note.value
    assert "mha-text-15px" in e.image._dom_classes


def test_cross_attention_explorer_in_a_box_resizes_one_figure():
    c = widgets.cross_attention_explorer(n_q=4, n_k=6, box=(740, 540), source_tokens=ENGLISH, target_tokens=FRENCH)
    figure, builds = c.figure, c.canvas.builds
    for n_q, n_k in [(12, 12), (1, 1), (9, 12)]:
        c.controls["n_q"].value, c.controls["n_k"].value = n_q, n_k
        assert c.figure is figure and c.state["shown"].shape == (n_q, n_k)
        np.testing.assert_allclose(np.ma.filled(c.state["shown"], np.nan), c.state["weights"])
    assert c.canvas.builds > builds and "mha-text-15px" in c.image._dom_classes
    with pytest.raises(ValueError, match="box"):
        widgets.cross_attention_explorer(box=(740,), source_tokens=ENGLISH, target_tokens=FRENCH)


def test_cost_explorer_redraws_two_figures_laid_out_once():
    c = widgets.cost_explorer(d_model=64, n=4, width=900, height=400)
    flops_figure = c.figure
    c.controls["n"].value = 8
    assert c.figure is flops_figure and c.state["flops"] == [mha.flop_count(64, h, 8) for h in plots.head_options(64)]
    c.controls["count"].value = "parameters"
    parameters_figure, png = c.figure, c.image.value
    c.controls["n"].value = 9
    assert c.image.value is png, "the parameters do not depend on n: nothing is drawn again"
    c.controls["n"].value = 8
    c.controls["d_model"].value = 128
    assert c.figure is parameters_figure is not flops_figure
    assert c.state["parameters"] == [4 * 128 * 128] * len(plots.head_options(128))
    assert screen.min_text_px(c.figure) >= 15 and "mha-text-15px" in c.image._dom_classes
    c.controls["count"].value = "FLOPs"
    assert c.figure is flops_figure and f"n = 8" in c.canvas.alt


@functools.cache
def _fresh_cost_explorer(d_model, n, count):
    """A cost explorer drawn fresh at these values, only read: the cases that end at the same values share it."""
    return widgets.cost_explorer(d_model=d_model, n=n, count=count, width=900, height=400)


COST_CHANGES = [  # each from the start values (d_model 64, n 4, FLOPs)
    [("n", 30)], [("d_model", 768)], [("d_model", 1024), ("n", 30), ("d_model", 64)],
    [("count", "parameters"), ("d_model", 768)], [("d_model", 768), ("count", "parameters"), ("d_model", 128),
                                                  ("count", "FLOPs")]]


def test_cost_explorer_blits_a_change_to_the_pixels_of_a_fresh_figure():
    """A new n or d_model is drawn in place over the saved frame: the picture is the one a fresh explorer
    draws for the same values (bars, curves, h ticks and titles included). One explorer goes through every
    case, moved back to its start values before each (building one costs more than a case)."""
    import io

    from PIL import Image

    c = widgets.cost_explorer(d_model=64, n=4, width=900, height=400)
    start = {name: c.controls[name].value for name in ("count", "d_model", "n")}
    for changes in COST_CHANGES:
        with c.paused():
            for name, value in start.items():
                c.controls[name].value = value
        builds = c.canvas.builds
        for name, value in changes:
            c.controls[name].value = value
        fresh = _fresh_cost_explorer(*(c.controls[name].value for name in ("d_model", "n", "count")))
        moved, drawn = (np.asarray(Image.open(io.BytesIO(bytes(e.image.value))), int) for e in (c, fresh))
        assert moved.shape == drawn.shape and (np.abs(moved - drawn).sum(axis=-1) > 30).sum() == 0, changes
        switches = sum(name == "count" for name, _ in changes)
        assert c.canvas.builds == builds + switches, f"{changes}: only a switch of count draws a whole figure again"


def test_shape_explorer_keeps_its_layout_while_the_labels_fit_and_never_cuts_one():
    """A new n relabels the same figure; its margins are laid out again only when a longer token, a title
    line or another label size or angle needs room: every label stays inside the figure."""
    e = widgets.shape_explorer(d_model=64, h=8, n=5, tokens=TOKENS)
    figure = e.figure
    positions = lambda: [ax.get_position().bounds for ax in figure.axes]  # noqa: E731
    for n in (16, 15, 16, 9, e.controls["n"].max, 3, 12, 1, 11):
        e.controls["n"].value = n
        assert e.figure is figure and e.state["shown"][0].shape == (n, n)
        renderer = figure.canvas.get_renderer()
        labels = [t for ax in figure.axes for axis in (ax.xaxis, ax.yaxis) if axis.get_visible() and ax.get_visible()
                  for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
        width, height = figure.canvas.get_width_height()
        # Pasted labels (the same layout, a new n): their pixels' boxes, rows from the top.
        panels = [image.axes for image in e.images]
        ticked = [t for t in labels if t.axes in panels]
        pasted = [] if ticked else list(e.labels.placed(TOKENS[:n], TOKENS[:n], figure.dpi, height))
        assert set(TOKENS[:n]) <= {t.get_text() for t in labels} | {p[0] for p in pasted}, \
            "every token is labelled"
        assert len(pasted) in (0, 6 * n), "each of the 2 rows and 4 columns of panels labels every token"
        for text in [*labels, *figure.texts]:
            box = text.get_window_extent(renderer)
            assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= figure.bbox.width + 1 and \
                box.y1 <= figure.bbox.height + 1, f"n={n}: {text.get_text()!r} is cut"
        for text, pixels, row, col in pasted:
            assert row >= 0 and col >= 0 and row + pixels.shape[0] <= height and col + pixels.shape[1] <= width, \
                f"n={n}: {text!r} is cut"
    e.controls["n"].value = 16
    before = positions()
    e.controls["n"].value = 15  # the same room: nothing moves
    assert positions() == before


def test_shape_explorer_without_a_figure_draws_nothing_and_still_shows_the_shapes():
    e = widgets.shape_explorer(d_model=64, h=4, n=5, figure=False)
    e.controls["n"].value = 9
    assert e.figure is None and e.canvas.builds == 0 and not e.image.value
    assert e.state["score_shape"] == (9, 9) and "9 × 64" in e.table.value


def test_an_explorer_redraws_with_one_blas_thread(monkeypatch):
    """A change's small products run on one BLAS thread (threads only wait for each other there); the
    limit holds during the update and is lifted after it."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    e = widgets.shape_explorer(d_model=64, h=4, n=5)
    seen, update = [], e.update
    monkeypatch.setattr(e, "update", lambda change=None: (seen.append(blas_threads()), update(change)))
    before = blas_threads()
    e.controls["seed"].value = 3
    with e.paused():
        e.controls["n"].value = 7
    assert seen == [{1}, {1}] and blas_threads() == before


def test_labels_reach_the_caption_escaped():
    e = widgets.softmax_playground(scores=(1.0, 2.0), labels=("<b>x</b>", "y & z"))
    assert "&lt;b&gt;x&lt;/b&gt;" in e.canvas.caption.value and "y &amp; z" in e.canvas.caption.value
    assert "<b>x</b>" not in e.canvas.caption.value


def _pixels(png):
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(bytes(png))).convert("RGB")).astype(int)


def test_a_new_n_in_the_same_layout_shows_every_token_label_where_a_whole_drawing_puts_it():
    """What a student sees after a new n (the same layout kept): the picture of the figure drawn whole by
    matplotlib, its ticks labelled (how fast it is drawn: ``python -m benchmarks widgets``, its ``n`` row)."""
    e = widgets.shape_explorer(d_model=512, h=8, n=16, tokens=TOKENS)
    e.controls["n"].value = 15
    e.controls["n"].value = 16
    e.controls["n"].value = 15
    assert e.state["shown"][0].shape == (15, 15)
    fast = _pixels(e.image.value)
    # The same figure drawn whole by matplotlib, its ticks labelled: the labels where the ticks put them.
    from mha_core.figures import grid

    tokens = TOKENS[:15]
    figure = e.figure
    grid.relabel_head_grid(figure, e.images, tokens, tokens, figure.get_suptitle())
    e._set_images(e.state)
    figure.canvas.draw()
    for image in e.images:
        figure.draw_artist(image)
    full = np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(int)
    assert fast.shape == full.shape, "the same figure size"
    assert np.abs(fast - full).mean() < 3, "the pasted labels sit where the whole drawing puts them"
    assert (np.abs(fast - full).max(axis=2) > 128).mean() < 0.01


def test_every_n_keeps_the_grids_layout_and_labels_in_the_size_its_tokens_need():
    """The margins are made once for the widest labels the n slider reaches: past 16 tokens the labels are
    smaller (6 points, not 8) and no panel moves."""
    e = widgets.shape_explorer(d_model=512, h=8, n=16, tokens=TOKENS)
    positions = [image.axes.get_position().bounds for image in e.images]
    e.controls["n"].value = 17
    assert [image.axes.get_position().bounds for image in e.images] == positions
    assert "mha-text-6px" in " ".join(e.image._dom_classes) and e.state["shown"][0].shape == (17, 17)
    e.controls["n"].value = 16
    assert "mha-text-8px" in " ".join(e.image._dom_classes)
