"""The exercise sheet's worked numbers (NOTES.md), recomputed by mha_core, and compared with the declarations the
editions fill them in from (2.2's)."""

import nbformat
import numpy as np
import pytest

import mha_core as mha
from autograders.editions import editions
from autograders.problems import level2
from tests.conftest import NOTEBOOKS


def test_1_1_head_dim():
    assert mha.head_dim(768, 12) == 64


def test_2_1_shapes():
    rows = {r.name: r.shape for r in mha.shape_table(512, 8, 10)}
    assert rows["W_i^Q, W_i^K, W_i^V"] == (512, 64)
    assert rows["Q_i"] == (10, 64)
    assert rows["Q_i K_i^T"] == (10, 10)
    assert rows["head_i"] == (10, 64)
    trace = mha.MultiHeadAttention.from_seed(512, 8).trace(np.ones((10, 512)))
    assert trace.Q[0].shape == (10, 64) and trace.scores[0].shape == (10, 10) and trace.heads[0].shape == (10, 64)


SHEET_2_2 = {"d_k": 64, "dot": 40.0, "d_model": 512}  # the sheet's: q . k = 40 for a head of width 64, d_model = 512


def test_2_2_scaled_score():
    q = np.full(64, 1.0)
    k = np.full(64, 40 / 64)  # q . k = 40
    _, w = mha.scaled_dot_product_attention(q[None], np.stack([k, 0 * k]), np.eye(2))
    assert w[0, 0] / w[0, 1] == pytest.approx(np.exp(5.0))


def test_2_2_declaration_has_the_sheet_s_numbers_and_answer():
    """2.2's statement and solutions are filled in from its declaration (autograders/problems/level2.py): it holds
    the sheet's numbers, its right answer is the sheet's, and option D's premise holds (√d_k = h = d_model / d_k)."""
    assert level2.SHEET_2_2 == SHEET_2_2
    n = level2.DOT_2_2.view(level2.SHEET_2_2)
    assert level2.SCALED_SCORE.answer(n) == pytest.approx(5.0)
    assert np.sqrt(n.d_k) == n.d_model / n.d_k == 8


def _practice(name):
    """The text of the cells of the practice edition of ``notebooks/<name>.ipynb``."""
    nb = nbformat.reads(editions.practice_text(NOTEBOOKS / f"{name}.ipynb"), as_version=4)
    return "\n".join(cell.source for cell in nb.cells)


def test_2_2_worked_values_in_the_editions():
    """The Level 2 practice edition and the self-test show the sheet's worked values, computed here from the sheet."""
    text = _practice("level2_application")
    d_k, dot, d_model = SHEET_2_2["d_k"], SHEET_2_2["dot"], SHEET_2_2["d_model"]
    for shown in (f"d_k = {d_k},$ $q k^{{\\top}} = {dot:g}).$",       # the statement
                  f"scaled_score = {dot:g} / np.sqrt({d_k})",          # the solution
                  f"{dot / np.sqrt(d_k):.1f} .$$",                     # 5.0
                  f"{dot / d_k:.3f}.$",                                # divided by d_k: 0.625
                  f"\\approx {dot / np.sqrt(d_model):.3f},$",        # divided by sqrt(d_model): 1.768
                  f"divided by {d_k} it is about {1 / np.sqrt(d_k):.3f}",  # a graded example: 0.125
                  f"about {np.sqrt(d_k):g} in size"):                 # unscaled: 8
        assert shown in text, shown
    card = _practice("self_test")
    assert f"= {dot / np.sqrt(d_k):g}.$" in card and f"{dot:g}/{np.sqrt(d_k):g} =" in card


def test_2_3_weights():
    w = mha.softmax([4.0, 2.0, 5.0])
    assert np.round(w, 4).tolist() == [0.2595, 0.0351, 0.7054]
    assert np.exp([4.0, 2.0, 5.0]).sum() == pytest.approx(210.400, abs=5e-4)


def test_4_1_parameter_count():
    assert mha.parameter_count(512, 8) == 1_048_576
    assert mha.parameter_count(512, 8, bias=True) == 1_048_576 + 4 * 512


def test_4_2_causal_query_output():
    q = np.array([[1.0, 0.0]])
    K = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    V = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]])
    out, w = mha.scaled_dot_product_attention(q, K, V)
    assert np.round(w[0], 4).tolist() == [0.2212, 0.1091, 0.2212, 0.4486]
    assert np.round(out[0], 4).tolist() == [0.8847, 2.0124]
    # The same query as the last row of a causal self-attention over 4 positions.
    Q4 = np.vstack([np.zeros((3, 2)), q])
    out4, _ = mha.scaled_dot_product_attention(Q4, K, V, causal=True)
    np.testing.assert_allclose(out4[3], out[0])
