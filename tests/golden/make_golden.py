"""A golden record of what the checks of numbers, shapes, vectors and labelled choices say.

Run with the code to be preserved: ``python -m tests.golden.make_golden write``; then, after a change,
``python -m tests.golden.make_golden compare`` replays every stored input against the current code and
prints each difference (message, tag, pass or fail, confirmation). A safety net for a refactoring,
not a test: the record is a restatement of the messages.
"""

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

from autograders.variants import current

HERE = Path(__file__).resolve().parent
RECORD = HERE / "golden.json"

CHOICES = {  # answer grade_id: module
    "q1_2_why": 1, "q2_2_why": 2, "q3_1_claim": 3, "q3_2_wrong_step": 3, "q3_3_shared_outcome": 3,
    "q5_1_refutation": 5, "q5_2_power": 5, "q5_3_unchanged": 5,
}
FIXED_NUMBERS = {  # answers without a pool: a handful of candidate values
    "q5_1_d_k_limit": (5, [1, 1.0, 512, 64, 262144, 1 / 512, 8, 7, 0, -1]),
    "q5_1_sweet_spot_heads": (5, [8, 8.0, 512, 64, 32768, 1, 7, 16, 0.5, 4]),
}
MALFORMED = [None, "x", "5", True, [1, 2, 3], (1, 2, 3), (1.5, 2), (2,), np.array([1.0, np.nan, 2.0]), float("inf"),
             {"a": 1}, [[1.0, 2.0]], ...]


def encode(value):
    if value is None:
        return ["none"]
    if value is Ellipsis:
        return ["ellipsis"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, np.ndarray):
        return ["array", [encode(v) for v in value.tolist()] if value.ndim else encode(value.item()), list(value.shape),
                str(value.dtype)]
    if isinstance(value, np.generic):
        return ["np", str(value.dtype), encode(value.item())]
    if isinstance(value, float):
        return ["float", repr(value)]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, tuple):
        return ["tuple", [encode(v) for v in value]]
    if isinstance(value, list):
        return ["list", [encode(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[k, encode(v)] for k, v in value.items()]]
    raise TypeError(type(value))


def decode(code):
    kind, *rest = code
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind in ("bool", "int", "str"):
        return rest[0]
    if kind == "float":
        return float(rest[0])
    if kind == "np":
        return np.dtype(rest[0]).type(decode(rest[1]))
    if kind == "array":
        data, shape, dtype = rest
        plain = decode(data) if shape == [] else [decode(v) for v in data]
        return np.array(plain, dtype=dtype).reshape(shape)
    if kind == "tuple":
        return tuple(decode(v) for v in rest[0])
    if kind == "list":
        return [decode(v) for v in rest[0]]
    if kind == "dict":
        return {k: decode(v) for k, v in rest[0]}
    raise ValueError(kind)


def _forms(value):
    """The value in several forms (a number: int, float, numpy scalar, 1-element array; a shape: list, array)."""
    found = [value]
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        found += [float(value), np.float64(value), np.array([value]), round(float(value), 3), float(value) + 1,
                  3 * float(value) + 0.7, -float(value)]
        if float(value) == int(value):
            found += [int(value), np.int64(int(value))]
    elif isinstance(value, tuple):
        found += [list(value), np.array(value), tuple(float(v) for v in value), tuple(v + 1 for v in value),
                  value[::-1], (*value, 1)]
    elif isinstance(value, np.ndarray):
        found += [value.tolist(), value.reshape(1, -1), value.reshape(-1, 1), np.round(value, 4), value + 0.1,
                  value[::-1].copy()]
    return found


def _check(module, answer):
    import importlib

    return getattr(importlib.import_module(f"autograders.checks.level{module}"), answer)


def run(check, value, document):
    """(passed, printed, message, tag) of ``check(value)`` and ``check(value, hidden=True)``."""
    results = []
    for hidden in (False, True):
        out = io.StringIO()
        try:
            with current.handing(document), redirect_stdout(out):
                check(value, hidden=hidden)
            results.append([True, out.getvalue(), None, None])
        except AssertionError as error:
            results.append([False, out.getvalue(), str(error), getattr(error, "misconception", None)])
    return results


def document(assignment, problem, entry):
    return json.loads(json.dumps({"student": "ann", "assignment": assignment, "generation": {problem: 0},
                                  "numbers": {problem: entry}}))


def cases():
    """[(answer, module, document, value)]: every input the record holds."""
    from autograders.variants.levels import POOLS

    found = []
    for assignment, pools in POOLS.items():
        module = int(assignment[5])
        for answer, pool in pools.items():
            entries = [pool.sheet] + [pool.entries[i] for i in sorted({0, len(pool.entries) // 3, len(pool.entries) // 2,
                                                                        len(pool.entries) - 1})]
            for entry in entries:
                doc = document(assignment, pool.problem, entry)
                values = []
                right = pool.answer(entry)
                right = tuple(right) if isinstance(right, (tuple, list)) else right
                values += _forms(right)
                for other in entries:
                    for wrong in pool.mistakes(other).values():
                        wrong = tuple(wrong) if isinstance(wrong, (tuple, list)) else wrong
                        values += _forms(wrong)[:3]
                values += MALFORMED
                found += [(answer, module, doc, v) for v in values]
    for answer, module in CHOICES.items():
        doc = document("x", "x", {})
        for v in ["A", "B", "C", "D", "a", " b ", "E", "", 1, None, ["A"]]:
            found.append((answer, module, doc, v))
    for answer, (module, values) in FIXED_NUMBERS.items():
        for v in values + MALFORMED:
            found.append((answer, module, document("x", "x", {}), v))
    return found


def write():
    rows = []
    for answer, module, doc, value in cases():
        rows.append({"answer": answer, "module": module, "document": doc, "value": encode(value),
                     "result": run(_check(module, answer), value, doc)})
    RECORD.write_text(json.dumps(rows, ensure_ascii=False) + "\n")
    print(f"{len(rows)} cases written to {RECORD}")


def compare(only=None):
    rows = json.loads(RECORD.read_text())
    differ = 0
    for row in rows:
        if only and not row["answer"].startswith(only):
            continue
        value = decode(row["value"])
        got = run(_check(row["module"], row["answer"]), value, row["document"])
        if got != row["result"]:
            differ += 1
            if differ <= 30:
                print(f"{row['answer']} {row['document']['numbers']} {value!r}:\n  was {row['result']}\n  now {got}")
    print(f"{differ} of {len(rows)} cases differ")
    return differ


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write()
    else:
        sys.exit(1 if compare(sys.argv[2] if len(sys.argv) > 2 else None) else 0)
