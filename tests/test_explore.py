"""The explorers' state functions (mha_core.explore), without a widget or a figure: numbers against a
second implementation (plain loops), shapes, which cells are masked, what the readouts say; and the
library's shape: no module over 600 lines, no HTML written by an f-string."""

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest

from autograders.problems.level4 import SHEET_4_2
from autograders.student.sentences import ENGLISH, FRENCH, HEAD_VIEW_SENTENCES, SENTENCE, TOKENS
import mha_core as mha
from mha_core.explore import (  # noqa: I001
    causal_step,
    cross,
    flops,
    head_grid,
    head_view,
    parameters,
    shapes,
    softmax,
    sum_concat,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_widget_no_figure(monkeypatch):
    """A state function builds no widget and no figure: either raises here."""
    import ipywidgets
    from matplotlib.figure import Figure

    def refuse(*args, **kwargs):
        raise AssertionError("a state function built a widget or a figure")

    monkeypatch.setattr(ipywidgets.Widget, "open", refuse)
    monkeypatch.setattr(Figure, "__init__", refuse)


def loop_softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


# --- (a) shapes --------------------------------------------------------------------------------------


def test_shape_state_d_k_table_and_every_head_against_the_block():
    s = shapes.shape_state(64, 8, 6)
    assert (s["d_k"], s["shown_heads"], s["score_shape"], s["output_shape"]) == (8, 8, (6, 6), (6, 64))
    assert "64 / 8 = <b>8</b>" in s["readout"], "the readout says d_k = d_model / h"
    assert [tuple(r.shape) for r in s["table"]] == [tuple(r.shape) for r in mha.shape_table(64, 8, 6)]
    x = mha.plots.example_embeddings(6, 64, 0)
    _, expected = mha.MultiHeadAttention.from_seed(64, 8, 0)(x)
    np.testing.assert_allclose(np.ma.getdata(np.array(s["panels"])), expected, err_msg="panels are the heads' weights")
    assert "all 8 heads" in s["note"] and "random (untrained) weights" in s["note"]


def test_shape_state_causal_masks_exactly_the_upper_triangle():
    s = shapes.shape_state(64, 4, 5, causal=True)
    for panel in s["panels"]:
        np.testing.assert_array_equal(np.ma.getmaskarray(panel), np.triu(np.ones((5, 5), bool), 1),
                                      err_msg="hidden cells: the keys after the query")
        np.testing.assert_allclose(panel.sum(axis=1), 1.0, err_msg="each row of allowed weights sums to 1")
    assert "hatched cells are masked" in s["note"]
    assert not np.ma.getmaskarray(shapes.shape_state(64, 4, 5)["panels"][0]).any()


def test_shape_state_constructed_heads_and_their_fallback():
    s = shapes.shape_state(512, 4, 10, source="constructed")
    assert s["head_names"] == ["head 1: previous token", "head 2: same word elsewhere", "head 3: first token (sink)",
                               "head 4: pronoun → its noun"]
    assert not s["untrained"] and "heads built to follow a pattern" in s["note"]
    narrow = shapes.shape_state(8, 8, 10, source="constructed")  # d_k = 1: no room for the codes
    assert narrow["untrained"] and "need a wider d_k" in narrow["note"]


def test_shape_state_in_a_box_pages_the_heads_that_do_not_fit():
    s = shapes.shape_state(512, 16, 8, source="constructed", box=(740, 540), page=9)
    shown = s["shown_heads"]
    assert shown < 16 and s["fit"][0] * s["fit"][1] == shown
    assert s["pages"][0] == (f"heads 1 to {shown} of 16", 1) and s["pages"][-1][1] == 16 - shown + 1
    assert s["first_head"] <= 9 < s["first_head"] + shown, "the page holding head 9"
    assert s["head_names"][0].startswith(f"head {s['first_head']}")
    assert f"showing heads {s['first_head']} to {s['first_head'] + shown - 1} of 16" in s["note"]


def test_the_shape_table_escapes_its_cells():
    html = shapes.shape_table_html([("<x>", (2, 3), "a & b")])
    assert "<code>&lt;x&gt;</code>" in html and "a &amp; b" in html and "2 × 3" in html


# --- (b) softmax -------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [0.05, 0.5, 1.0, 8.0, 16.0])
def test_softmax_state_weights_entropy_and_readout(T):
    scores = (4.0, 2.0, 5.0)
    s = softmax.softmax_state(scores, T, labels=["a", "b", "<c>"])
    expected = loop_softmax([v / T for v in scores])
    np.testing.assert_allclose(s["weights"], expected, err_msg="softmax(s / T)")
    entropy = -sum(w * math.log(w) for w in expected if w > 0)
    assert s["entropy"] == pytest.approx(entropy)
    assert f"<b>{entropy:.4f}</b> nats" in s["readout"]
    assert "<c> " in s["alt"], "the alt text is plain text (its caption's template escapes it)"


def test_softmax_state_linked_says_t_is_root_d_k():
    s = softmax.softmax_state((1.0, 3.0), 8.0, d_k=64, linked=True)
    assert "T = √d_k = √64 = <b>8</b>" in s["readout"]
    assert "for d_k = 16 that is T = √16 = 4" in softmax.softmax_state((1.0, 3.0), 1.0, d_k=16)["readout"]


# --- (c) cross-attention -----------------------------------------------------------------------------


def test_cross_state_shapes_and_rows():
    s = cross.cross_state(4, 6, head=2, source="random", source_tokens=ENGLISH, target_tokens=FRENCH)
    assert s["weights"].shape == (4, 6) and s["all_weights"].shape == (3, 4, 6) and s["output_shape"] == (4, 96)
    np.testing.assert_allclose(s["weights"].sum(axis=1), 1.0)
    assert "n_q × n_k = <b>4 × 6</b>" in s["readout"] and "n_k × d_k = 6 × 32" in s["readout"]
    assert "random (untrained) weights" in s["readout"]
    built = cross.cross_state(3, 3, source="constructed", source_tokens=ENGLISH, target_tokens=FRENCH)
    assert built["name"] == "head 1 (word → its translation)" and not built["untrained"]
    assert [built["sources"][j] for j in built["weights"].argmax(axis=1)] == ["the", "cat", "black"]


# --- (d) what h costs ------------------------------------------------------------------------------------


def test_flop_state_counts_are_flat_in_h_and_the_claim_is_not():
    s = flops.flop_state(256, 8)
    assert s["hs"] == mha.plots.head_options(256)
    assert set(s["attention"]) == {2 * 8**2 * 256}, "scores + weighted sum = 2·n²·d_model for every h"
    assert s["claim"] == [h * 2 * 8**2 * 256 for h in s["hs"]]
    assert s["softmax"] == [h * 8**2 for h in s["hs"]]
    assert "<b>32,768</b> multiply-adds for every h from 1 to 256" in s["readout"]


def test_flop_state_can_leave_the_exponentials_out():
    """3.1's written answer names a part that grows with h (the h·n² exponentials among them): the level's
    explorer, which a student may run before writing it, leaves them out of the state, readout and alt text."""
    full, without = flops.flop_state(512, 10), flops.flop_state(512, 10, exponentials=False)
    assert "exponential" in full["readout"] and "exponential" in full["alt"]
    for text in (without["readout"], without["alt"]):
        assert "exponential" not in text and "softmax" not in text and "h·n²" not in text
        assert f"{2 * 10**2 * 512:,}" in text  # what the student checks is still there
    assert without["softmax"] is None and all("softmax" not in c for c in without["flops"])
    assert without["multiply_adds"] == full["multiply_adds"] == [2 * 10**2 * 512 + 4 * 10 * 512**2] * len(full["hs"])
    assert {k: full[k] for k in ("hs", "attention", "claim")} == {k: without[k] for k in ("hs", "attention", "claim")}


def test_parameter_state_is_four_d_model_squared_for_every_h():
    s = parameters.parameter_state(96)
    assert set(s["counts"]) == {4 * 96**2} and s["hs"] == mha.plots.head_options(96)
    assert "<b>36,864</b> for every one of the 12 possible h" in s["readout"]


# --- (e) concatenate, don't sum -------------------------------------------------------------------------


def test_sum_concat_state_a_swap_changes_the_concatenation_not_the_sum():
    plain = sum_concat.sum_concat_state(False, "it", tokens=SENTENCE)
    swapped = sum_concat.sum_concat_state(True, "it", tokens=SENTENCE)
    assert plain["concat"].shape == (10, 76) and plain["summed"].shape == (10, 19)
    assert swapped["changed_concat"] > 0 and swapped["changed_sum"] < 1e-9
    np.testing.assert_allclose(swapped["summed"], plain["summed"])
    assert "the sum not at all" in swapped["readout"] and "swap heads 1 and 2" in plain["readout"]
    assert ("head 4", "pronoun → its noun", "cat") in plain["found"], "the pronoun head finds the noun for 'it'"
    assert "found <b>cat</b>" in plain["readout"]


def test_sum_concat_state_escapes_the_token():
    tokens = ["<b>", "cat", "sat", "<b>"]
    s = sum_concat.sum_concat_state(False, token="<b>", tokens=tokens)
    assert "token <b>&lt;b&gt;</b>" in s["readout"]


# --- (f) the head grid ------------------------------------------------------------------------------------


def test_head_grid_state_sharing_head_1_leaves_one_pattern():
    own, shared = head_grid.head_grid_state(tokens=SENTENCE), head_grid.head_grid_state(shared=True, tokens=SENTENCE)
    assert own["distinct"] == 4 and shared["distinct"] == 1
    for w in shared["weights"]:
        np.testing.assert_allclose(w, shared["weights"][0])
    assert shared["names"][1] == "head 2 (= head 1)"
    assert "<b>1</b> different pattern among 4 heads" in shared["readout"]
    assert "<b>4</b> different patterns among 4 heads" in own["readout"]


# --- (h) one causal query, step by step ----------------------------------------------------------------------


@pytest.mark.parametrize("q, position", [((1.0, 1.0), 4), ((0.0, 1.0), 2), ((-3.0, 2.5), 1), ((3.0, -3.0), 3)])
def test_step_state_against_a_loop(q, position):
    K, V = SHEET_4_2["keys"], SHEET_4_2["values"]
    s = causal_step.step_state(q, position, K, V)
    scores = [sum(a * b for a, b in zip(k, q)) for k in K]
    scaled = [v / math.sqrt(2) for v in scores]
    seen = loop_softmax(scaled[:position])
    weights = seen + [0.0] * (len(K) - position)
    out = [sum(w * v[c] for w, v in zip(weights, V)) for c in range(2)]
    np.testing.assert_allclose(s["scores"], scores, err_msg="q·k_j")
    np.testing.assert_allclose(s["scaled"], scaled, err_msg="q·k_j / √d_k")
    np.testing.assert_allclose(s["weights"], weights, atol=1e-12, err_msg="softmax over the keys it may see")
    np.testing.assert_allclose(s["output"], out, err_msg="Σ w_j v_j")
    np.testing.assert_array_equal(s["allowed"], np.arange(4) < position)
    masked = [j + 1 for j in range(4) if j >= position]
    for j in masked:
        assert f"masked: position {position} may not look at key {j}" in s["readout"]
    assert s["readout"].count("masked:") == len(masked)


def test_step_state_reads_the_model_trace(monkeypatch):
    """The numbers come from MultiHeadAttention.trace, not a copy of the forward pass."""
    calls = []
    trace = mha.MultiHeadAttention.trace
    monkeypatch.setattr(mha.MultiHeadAttention, "trace", lambda self, *a, **k: calls.append(1) or trace(self, *a, **k))
    causal_step.step_state((1.0, 1.0), 4, SHEET_4_2["keys"], SHEET_4_2["values"])
    assert calls == [1]


# --- (i) the head view ----------------------------------------------------------------------------------------


def test_head_view_state_rows_are_the_chosen_words_rows():
    s = head_view.head_view_state(HEAD_VIEW_SENTENCES, 0, 7)
    assert s["word"] == "it" and s["rows"].shape == (4, 10)
    np.testing.assert_allclose(s["rows"], s["weights"][:, 7, :])
    assert s["names"] == ["previous token", "same word elsewhere", "first token (sink)", "pronoun → its noun"]
    assert "pronoun → its noun looks at “cat”" in s["alt"]
    french = head_view.head_view_state(HEAD_VIEW_SENTENCES, 4, 2)
    assert french["cross"] and french["headers"] == ("French (queries)", "English (keys)")


# --- the library's shape --------------------------------------------------------------------------------------


def test_no_module_of_mha_core_is_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "mha_core").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, f"modules over 600 lines: {long}"


def test_no_html_is_written_by_an_f_string_with_a_value():
    found = []
    for path in sorted((ROOT / "mha_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
                text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                if re.search(r"<[a-zA-Z/!]", text):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"HTML from f-strings (use a template of mha_core/templates/): {found}"


def test_every_explorer_is_a_module_with_a_state_function():
    for module, name in ((shapes, "shape_state"), (softmax, "softmax_state"), (cross, "cross_state"),
                         (flops, "flop_state"), (parameters, "parameter_state"), (sum_concat, "sum_concat_state"),
                         (head_grid, "head_grid_state"), (causal_step, "step_state"),
                         (head_view, "head_view_state")):
        assert callable(getattr(module, name)), f"{module.__name__}.{name}"


# --- a readout fits its column at every value its controls reach ------------------------------------------

COLUMN_PX, READOUT_PX = 440, 20  # the demo's control column and its readouts' type (demo/classroom.css)
EM = 0.64  # the widest digit or letter of the sans-serif face, in em (DejaVu Sans: 0.636)
LONGEST = int(COLUMN_PX / (READOUT_PX * EM))  # characters a line can hold without a break


def unbreakable(html):
    """The longest run of a readout's text that a browser cannot break (no space in it: a span kept on one
    line, a no-break space, or a number), in characters."""
    import html as entities

    kept = re.sub(r"<span style='white-space:nowrap'>(.*?)</span>", lambda m: m.group(1).replace(" ", "\xa0"), html)
    text = entities.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<br>|</t[dh]>", " ", kept)))
    return max((len(word) for word in re.split(r"[ \t\n]+", text)), default=0), text


def assert_fits(html, where):
    longest, text = unbreakable(html)
    word = max(re.split(r"[ \t\n]+", text), key=len)
    assert longest <= LONGEST, (f"{where}: {word!r} is {longest} characters that cannot wrap, about "
                                f"{longest * READOUT_PX * EM:.0f} px in a {COLUMN_PX} px column")


def reachable(low, high, step):
    """Every value a slider reaches: low, low + step, ..., high."""
    return [round(low + k * step, 10) for k in range(int(round((high - low) / step)) + 1)]


def test_the_softmax_readout_fits_at_every_reachable_temperature_and_score():
    """Screen 2 at T = 0.05 printed e^(s/T) summed in full: 87 digits, 726 px past its 440 px column."""
    temperatures = softmax.temperatures()
    assert temperatures[0] == 0.0625 and temperatures[-1] == 16.0 and len(temperatures) == 33
    for T in temperatures:
        for scores in ((10.0, 10.0, 10.0), (-10.0, -10.0, -10.0), (10.0, -10.0, 0.0), (0.0, 0.0, 0.0)):
            assert_fits(softmax.softmax_state(scores, T)["readout"], f"T = {T}, scores {scores}")
    for score in reachable(-10.0, 10.0, 0.1):
        for T in (temperatures[0], temperatures[-1]):
            assert_fits(softmax.softmax_state((score, 10.0, -10.0), T)["readout"], f"T = {T}, s1 = {score}")
    for d_k in softmax.D_K_OPTIONS:
        assert_fits(softmax.softmax_state((4.0, 2.0, 5.0), d_k**0.5, d_k=d_k, linked=True)["readout"], f"d_k {d_k}")


def test_the_temperatures_a_student_is_asked_for_are_a_few_presses_apart():
    """Level 2 asks for T = 1 from its start at T = 2, the demo for a low and a high T; linked, T = √d_k.
    Each round value is a stop of the slider, 4 arrow presses from its half and its double."""
    stops = [round(T, 9) for T in softmax.temperatures()]
    presses = {T: stops.index(T) for T in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)}
    assert all(presses[T] - presses[T / 2] == 4 for T in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0))
    assert all(round(d_k**0.5, 9) in stops for d_k in softmax.D_K_OPTIONS)


def test_the_power_of_ten_keeps_its_digits():
    assert softmax.power_of_ten(3.0) == ("20.086", None)
    assert softmax.power_of_ten(200.0) == ("7.226", 86)
    assert softmax.power_of_ten(math.log(9.99999e7)) == ("1.000", 8), "rounded up to the next power"
    s = softmax.softmax_state((40.0, 10.0, 10.0), 0.05)  # e^800 overflows a float: its power still shown
    assert "× 10<sup>347</sup>" in s["readout"] and s["sum_exp"] == math.inf


def test_the_shape_readouts_fit_at_every_reachable_value():
    for d_model in reachable(8, 1024, 8):
        for h in mha.plots.head_options(d_model):
            assert_fits(shapes.render("shape_readout.html", d_model=d_model, h=h, d_k=d_model // h), f"{d_model}/{h}")
    # The note, at every number of heads, panels shown and page (the template itself: a state per case
    # would compute thousands of blocks), then from the state at every n the demo's screen reaches.
    for h in sorted({h for d_model in reachable(8, 1024, 8) for h in mha.plots.head_options(d_model)}):
        for shown in sorted({min(h, s) for s in (1, 2, 3, 4, 6, 8, 16)}):
            for first in {1, h - shown + 1}:
                for causal, untrained in ((False, False), (True, True)):
                    note = shapes.render("shape_note.html", shown=shown, h=h, paged=True, first=first, causal=causal,
                                         untrained=untrained, untrained_label=mha.plots.UNTRAINED,
                                         need="constructed heads need a wider d_k" * untrained)
                    assert_fits(note, f"h = {h}, {shown} shown from {first}")
    for n in range(1, len(TOKENS) + 1):
        s = shapes.shape_state(512, 8, n, True, source="constructed", box=(740, 540), page=8)
        assert_fits(s["note"], f"n = {n}")


def test_the_cross_attention_readout_fits_at_every_reachable_value():
    for n_q in range(1, 13):
        for n_k in range(1, 13):
            for source in ("constructed", "random"):
                for head in (1, 3):
                    assert_fits(cross.cross_state(n_q, n_k, head, source, source_tokens=ENGLISH,
                                                     target_tokens=FRENCH)["readout"], f"{n_q} x {n_k}, head {head}")


def test_the_notebooks_readouts_have_no_long_unbreakable_run():
    for d_model in reachable(8, 1024, 8):
        assert_fits(flops.flop_state(d_model, 64)["readout"], f"FLOPs d_model {d_model}")
        assert_fits(parameters.parameter_state(d_model)["readout"], f"parameters d_model {d_model}")
    for n in range(1, 65):
        assert_fits(flops.flop_state(1024, n)["readout"], f"FLOPs n {n}")
    for q1 in reachable(-3.0, 3.0, 0.1):
        for position in (1, 4):
            assert_fits(causal_step.step_state((q1, -3.0), position, SHEET_4_2["keys"],
                                               SHEET_4_2["values"])["readout"], f"q1 {q1}")
    for swapped in (False, True):
        for token in dict.fromkeys(SENTENCE):
            assert_fits(sum_concat.sum_concat_state(swapped, token, tokens=SENTENCE)["readout"],
                        f"{token}, swapped {swapped}")


def test_the_alt_text_names_the_temperature_as_the_slider_shows_it():
    """The slider's readout rounds the double's exact value half up (JavaScript's toFixed): T = 2^-3 reads 0.13."""
    assert softmax.as_slider_shows(0.125) == "0.13" and softmax.as_slider_shows(1.0) == "1.00"
    assert softmax.as_slider_shows(2 ** 0.25) == "1.19" and softmax.as_slider_shows(0.0625) == "0.06"
    assert "at T = 0.13:" in softmax.softmax_state((4.0, 2.0, 5.0), 0.125)["alt"]


def test_the_explorers_take_their_sentences_and_say_so_when_none_is_given():
    """The sentences are the workbook's: an explorer over words asks for them by name; the shape explorer,
    whose words only label its rows, numbers them when it is given none."""
    for call, name in ((lambda: cross.cross_state(3, 5, source_tokens=ENGLISH), "target_tokens"),
                       (lambda: cross.cross_state(3, 13, source_tokens=ENGLISH, target_tokens=FRENCH), "source_tokens"),
                       (lambda: head_grid.head_grid_state(), "tokens"),
                       (lambda: sum_concat.sum_concat_state(False), "tokens"),
                       (lambda: sum_concat.sum_concat_state(False, tokens="the cat sat"), "tokens")):
        with pytest.raises(ValueError, match=name):
            call()
    assert shapes.shape_state(64, 4, 3)["tokens"] == ["1", "2", "3"]
    assert shapes.shape_state(64, 4, 3, tokens=TOKENS)["tokens"] == ["the", "cat", "sat"]
    assert sum_concat.sum_concat_state(False, tokens=SENTENCE)["token"] == "the"  # its first word by default
