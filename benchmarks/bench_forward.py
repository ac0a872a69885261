"""Forward pass of ``multi_head_attention`` against its BLAS floor, float32.

The floor is the same six matrix products done alone, into preallocated arrays:
``x @ W_Q``, ``x @ W_K``, ``x @ W_V``, the batched ``Q_i K_i^T``, ``weights_i @ V_i``
and ``concat @ W_O``. Everything else the library does (validation, scaling,
softmax, the mask, splitting and concatenating heads) is the overhead the ratio
shows. The two are measured in alternate rounds of one run and compared by
their medians, so a busy machine slows both alike; the ratio of the fastest
rounds is printed too (timeit's advice: the minimum is the least disturbed).

    python -m benchmarks forward
"""

import time

import numpy as np

import mha_core as mha

CASES = [  # (n, d_model, h, causal, rounds)
    (16, 512, 8, False, 400),
    (512, 512, 8, False, 40),
    (512, 512, 8, True, 40),  # for information: the floor is the same products, with no mask
]
TARGET = 1.5  # at n = 512, no mask


def floor_pass(x, W_Q, W_K, W_V, W_O, h):
    """Return a function doing only the forward pass's matrix products, into preallocated arrays."""
    n, d_model = x.shape
    d_k = d_model // h
    Q, K, V, concat, out = (np.empty((n, d_model), np.float32) for _ in range(5))
    scores = np.empty((h, n, n), np.float32)

    def heads(a):
        return a.reshape(n, h, d_k).transpose(1, 0, 2)  # (h, n, d_k), a view

    Q_h, K_h, V_h, concat_h = heads(Q), heads(K), heads(V), heads(concat)

    def run():
        np.matmul(x, W_Q, out=Q)  # (n, d_model)
        np.matmul(x, W_K, out=K)
        np.matmul(x, W_V, out=V)
        np.matmul(Q_h, K_h.transpose(0, 2, 1), out=scores)  # (h, n, n)
        np.matmul(scores, V_h, out=concat_h)  # (h, n, d_k), written into concat's columns
        np.matmul(concat, W_O, out=out)  # (n, d_model)
        return out

    return run


def measure(n, d_model, h, causal, rounds, seed=0):
    """Seconds of (multi_head_attention, floor) in each of ``rounds`` alternate rounds."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model)).astype(np.float32)
    Ws = mha.MultiHeadAttention.from_seed(d_model, h, seed=seed, dtype=np.float32)
    W = (Ws.W_Q, Ws.W_K, Ws.W_V, Ws.W_O)
    floor = floor_pass(x, *W, h)

    def full():
        return mha.multi_head_attention(x, None, *W, h, causal=causal)

    out, _ = full()
    assert out.dtype == np.float32 and out.shape == floor().shape
    for f in (full, floor):  # warm up
        f()
    times = {full: [], floor: []}
    for r in range(rounds):
        for f in (full, floor) if r % 2 else (floor, full):
            start = time.perf_counter()
            f()
            times[f].append(time.perf_counter() - start)
    return np.array(times[full]), np.array(times[floor])


def main():
    print(f"{'n':>5} {'d_model':>7} {'h':>3} {'causal':>6} {'mha ms':>9} {'floor ms':>9} {'ratio':>6} {'fastest':>8}")
    ok = True
    for n, d_model, h, causal, rounds in CASES:
        t_mha, t_floor = measure(n, d_model, h, causal, rounds)
        ratio = np.median(t_mha) / np.median(t_floor)
        fastest = t_mha.min() / t_floor.min()
        print(
            f"{n:>5} {d_model:>7} {h:>3} {causal!s:>6} {1e3 * np.median(t_mha):>9.3f} {1e3 * np.median(t_floor):>9.3f}"
            f" {ratio:>5.2f}x {fastest:>7.2f}x",
            flush=True,
        )
        if n == 512 and not causal:
            ok = ratio <= TARGET
    print(f"float32, medians of {CASES[1][-1]}-{CASES[0][-1]} alternate rounds; target at n=512 without a mask: "
          f"<= {TARGET}x floor: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
