"""mha_core.counting: parameters (Problem 4.1), operation counts (Problem 3.1) and shapes (Problem 2.1)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_core as mha


@st.composite
def d_model_and_heads(draw):
    """A width and two different numbers of heads that both divide it."""
    d_model = draw(st.integers(1, 1024))
    divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
    return d_model, draw(st.sampled_from(divisors)), draw(st.sampled_from(divisors))


@settings(max_examples=100, deadline=None)
@given(d_model_and_heads())
def test_parameter_count_is_4_d_model_squared_whatever_h(case):
    d_model, h, other_h = case
    assert mha.parameter_count(d_model, h) == 4 * d_model**2 == mha.parameter_count(d_model, other_h)
    assert mha.parameter_count(d_model, h, bias=True) == 4 * d_model**2 + 4 * d_model


def test_parameter_count_of_the_sheet_and_of_a_real_block():
    assert mha.parameter_count(512, 8) == 1_048_576
    block = mha.MultiHeadAttention.from_seed(64, 4)
    assert mha.parameter_count(64, 4) == sum(W.size for W in (block.W_Q, block.W_K, block.W_V, block.W_O))


@settings(max_examples=100, deadline=None)
@given(d_model_and_heads(), st.integers(1, 4096), st.none() | st.integers(1, 4096))
def test_multiply_adds_do_not_depend_on_h_but_the_softmax_does(case, n_q, n_k):
    """Problem 3.1: h heads of width d_model/h cost what one head of width d_model costs."""
    d_model, h, other_h = case
    flops, other = mha.flop_count(d_model, h, n_q, n_k), mha.flop_count(d_model, other_h, n_q, n_k)
    assert flops["multiply_adds"] == other["multiply_adds"] == mha.flop_count(d_model, 1, n_q, n_k)["multiply_adds"]
    n_k = n_q if n_k is None else n_k
    assert flops["softmax"] == h * n_q * n_k, "one exponential per score, h score matrices"
    assert other["softmax"] * h == flops["softmax"] * other_h
    assert flops["scores"] == flops["weighted_sum"] == n_q * n_k * d_model
    assert flops["total"] == flops["multiply_adds"] + flops["softmax"]


def test_flop_count_stages_match_the_shapes_of_the_products():
    d_model, h, n_q, n_k = 512, 8, 10, 30
    d_k = d_model // h
    flops = mha.flop_count(d_model, h, n_q, n_k)
    # An (a x b) @ (b x c) product takes a*b*c multiply-adds.
    assert flops["projections"] == n_q * d_model * d_model + 2 * n_k * d_model * d_model
    assert flops["scores"] == h * (n_q * d_k * n_k)
    assert flops["weighted_sum"] == h * (n_q * n_k * d_k)
    assert flops["output_projection"] == n_q * d_model * d_model
    stages = ("projections", "scores", "weighted_sum", "output_projection")
    assert flops["multiply_adds"] == sum(flops[s] for s in stages)
    assert mha.flop_count(d_model, h, n_q) == mha.flop_count(d_model, h, n_q, n_q)


def test_shape_table_for_problem_2_1():
    rows = mha.shape_table(512, 8, 10)
    shapes = {r.name: r.shape for r in rows}
    assert shapes["X"] == (10, 512)
    assert shapes["W_i^Q, W_i^K, W_i^V"] == (512, 64)
    assert shapes["Q_i"] == (10, 64)
    assert shapes["Q_i K_i^T"] == (10, 10)
    assert shapes["head_i"] == (10, 64)
    assert shapes["Concat(head_1..head_h)"] == (10, 512)
    assert shapes["output"] == (10, 512)
    assert all(isinstance(r, mha.ShapeRow) and r.meaning for r in rows)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(8, 1), (8, 2), (8, 4), (12, 3)]), st.integers(1, 6), st.integers(1, 6))
def test_shape_table_agrees_with_a_real_forward_pass(case, n_q, n_k):
    d_model, h = case
    shapes = {r.name: r.shape for r in mha.shape_table(d_model, h, n_q, n_k)}
    assert shapes["X_q"] == (n_q, d_model) and shapes["X_kv"] == (n_k, d_model)
    block = mha.MultiHeadAttention.from_seed(d_model, h)
    t = block.trace(np.ones((n_q, d_model)), np.ones((n_k, d_model)))
    assert shapes["W_i^Q, W_i^K, W_i^V"] == block.head_weights(0)[0].shape
    assert shapes["Q_i"] == t.Q[0].shape
    assert shapes["K_i, V_i"] == t.K[0].shape == t.V[0].shape
    assert shapes["Q_i K_i^T"] == t.scores[0].shape == t.weights[0].shape
    assert shapes["head_i"] == t.heads[0].shape
    assert shapes["Concat(head_1..head_h)"] == t.concat.shape
    assert shapes["W^O"] == block.W_O.shape
    assert shapes["output"] == t.output.shape
