"""Feedback never names a mistake the student did not make.

A declared answer recognises a wrong answer by its value: where two plausible mistakes give one value, the
message must be true for each (:class:`~autograders.problems.declare.Coincidence`). Here the plausible mistakes of
4.5 and 4.7 (b), computed again from the numbers (not from the declarations), at the sheet's numbers and every
pool entry: the feedback names each one's cause, and names another cause only beside it. The vetting finds the
coincidences a declaration words together when it no longer does; the coincidences are where they were counted
(over the sheet and the 108 + 1 entries of 4.5, the 48 + 1 of 4.7); and the pools are the ones handed out.
"""

import dataclasses
import hashlib
import json

import pytest

from autograders.checks.feedback import WrongAnswer
from autograders.problems import beyond, shared
from autograders.problems.declare import Answer, Coincidence, Mistake
from autograders.problems.engine import check, pool
from autograders.problems.pools import vet
from autograders.variants import VariantError
from autograders.variants.levels import POOLS, problems
from tests.test_problems import handed

ASSIGNMENT = beyond.ASSIGNMENT


def cache(e):
    return 2 * e["n_layers"] * e["n_ctx"] * e["n_kv_heads"] * e["d_head"] * e["bytes_per_value"]


def macs(e):
    """One generated token, one layer: 2 · n_heads · n_ctx · d_head multiply-adds over 2 · n_ctx · n_kv_heads ·
    d_head · bytes_per_value bytes (n_ctx and d_head cancel: 1 for both)."""
    return (2 * e["n_heads"]) / (2 * e["n_kv_heads"] * e["bytes_per_value"])


def ratio(e):
    """4 n d_model² over 2 n² d_model at n = n_short."""
    return 4 * e["n_short"] * e["d_model"] ** 2 / (2 * e["n_short"] ** 2 * e["d_model"])


# (the cause, its wrong answer from the numbers (None: not made with these numbers), a phrase naming it, the tags
# its feedback may carry: its own, or a coincidence's naming it beside another)
CAUSES = [
    (beyond.KV_CACHE_BYTES, [
        ("one cache per layer", lambda e: cache(e) / 2, "one cache per layer", {beyond.KV_COUNTED_ONCE, beyond.KV_HALF}),
        ("every query head cached", lambda e: cache(e) * e["n_heads"] / e["n_kv_heads"], "keys and values for",
         {beyond.GQA_IGNORED, beyond.KV_EIGHTFOLD}),
        ("numbers, not bytes", lambda e: cache(e) / e["bytes_per_value"] if e["bytes_per_value"] > 1 else None,
         "not their bytes", {beyond.BYTES_FORGOTTEN, beyond.KV_HALF}),
        ("bits, not bytes", lambda e: 8 * cache(e), "bits", {beyond.BITS_FOR_BYTES, beyond.KV_EIGHTFOLD}),
    ]),
    (beyond.MACS_PER_BYTE, [
        ("every query head reads its own", lambda e: 1 / e["bytes_per_value"], "a key and a value per query head",
         {beyond.GQA_IGNORED, beyond.MACS_GQA_OR_UPSIDE_DOWN}),
        ("per number", lambda e: e["n_heads"] / e["n_kv_heads"] if e["bytes_per_value"] > 1 else None,
         "per cached number", {beyond.BYTES_FORGOTTEN, beyond.MACS_DOUBLED}),
        ("FLOPs", lambda e: 2 * macs(e), "2 FLOPs", {shared.TWO_FLOPS, beyond.MACS_DOUBLED}),
        ("the keys' bytes alone", lambda e: (2 * e["n_heads"]) / (e["n_kv_heads"] * e["bytes_per_value"]),
         "bytes of the keys alone", {beyond.KV_COUNTED_ONCE, beyond.MACS_DOUBLED}),
        ("upside down", lambda e: 1 / macs(e), "upside down", {None, beyond.MACS_GQA_OR_UPSIDE_DOWN}),
        ("the scores alone", lambda e: e["n_heads"] / (2 * e["n_kv_heads"] * e["bytes_per_value"]),
         "multiply-adds of the scores alone", {beyond.SCORES_ALONE, beyond.MACS_SCORES_OR_SHEET}),
        ("the sheet's numbers", lambda e: macs(beyond.SHEET_4_5) if e != beyond.SHEET_4_5 else None,
         "the sheet's numbers", {shared.EXAMPLE_NUMBERS_ONLY, beyond.MACS_SCORES_OR_SHEET}),
    ]),
    (beyond.PROJECTIONS_OVER_SCORES, [
        ("heads of the full width", lambda e: ratio(e) / e["h"], "h heads of the full width",
         {shared.HEADS_COST_MORE, beyond.HEADS_WIDTH_EITHER}),
        ("projections per head", lambda e: 4 * e["n_short"] * e["d_model"] * (e["d_model"] // e["h"])
         / (2 * e["n_short"] ** 2 * e["d_model"]), "projections at one head's width",
         {beyond.PROJECTIONS_PER_HEAD, beyond.HEADS_WIDTH_EITHER}),
        ("rounded", lambda e: round(ratio(e)), "rounded to a whole number", {None}),
        ("rounded down", lambda e: int(ratio(e)), "rounded to a whole number", {None}),
        ("the scores alone", lambda e: 2 * ratio(e), "scores Q_i K_i^T alone", {beyond.N2_HALF_COUNTED}),
        ("one head's n² stages", lambda e: ratio(e) * e["h"], "n² stages of one head", {shared.ONE_HEAD_FOR_ALL}),
    ]),
    (beyond.EVEN_N, [
        ("heads of the full width", lambda e: 2 * e["d_model"] // e["h"], "h heads of the full width",
         {shared.HEADS_COST_MORE, beyond.HEADS_WIDTH_EITHER}),
        ("projections per head", lambda e: 2 * (e["d_model"] // e["h"]), "projections at one head's width",
         {beyond.PROJECTIONS_PER_HEAD, beyond.HEADS_WIDTH_EITHER}),
    ]),
]
CASES = [pytest.param(answer, *cause, id=f"{answer.id}-{cause[0]}") for answer, causes in CAUSES for cause in causes]


def everywhere(answer):
    return (answer.numbers.sheet, *answer.numbers.entries)


def feedback(answer, entry, value, hidden=False):
    """The WrongAnswer the check of ``answer`` raises for ``value`` at the student's numbers ``entry``."""
    with handed(ASSIGNMENT, answer, entry), pytest.raises(WrongAnswer) as raised:
        check(answer, ASSIGNMENT)(value, hidden=hidden)
    return raised.value


@pytest.mark.parametrize("answer, cause, wrong, phrase, allowed", CASES)
def test_each_plausible_mistake_is_named_at_every_entry_and_never_for_another_alone(answer, cause, wrong, phrase,
                                                                                       allowed):
    made = 0
    for entry in everywhere(answer):
        value = wrong(entry)
        right = answer.answer(answer.numbers.view(entry))
        if value is None or abs(value - right) <= answer.tolerance:
            continue
        made += 1
        raised = feedback(answer, entry, value)
        assert phrase.lower() in str(raised).lower(), (entry, str(raised))
        assert raised.misconception in allowed, (entry, raised.misconception, str(raised))
    assert made >= 9, f"{cause}: made at {made} entries only"


# Where two causes give one value (the sheet and the pool's entries, counted): the feedback names both.
COUNTED = [
    (beyond.KV_CACHE_BYTES, beyond.KV_HALF, 55),  # one cache per layer, or numbers (2 bytes each), not bytes
    (beyond.KV_CACHE_BYTES, beyond.KV_EIGHTFOLD, 72),  # every query head (n_heads = 8 n_kv_heads), or bits
    (beyond.MACS_PER_BYTE, beyond.MACS_DOUBLED, 109),  # 2 FLOPs or the keys' bytes alone; per number too at 2 bytes
    (beyond.MACS_PER_BYTE, beyond.MACS_GQA_OR_UPSIDE_DOWN, 19),  # n_heads = n_kv_heads · bytes²
    (beyond.MACS_PER_BYTE, beyond.MACS_SCORES_OR_SHEET, 54),  # the scores alone give the sheet's 2
    (beyond.PROJECTIONS_OVER_SCORES, beyond.HEADS_WIDTH_EITHER, 49),  # 2 d_k / n, always
    (beyond.EVEN_N, beyond.HEADS_WIDTH_EITHER, 49),
]


@pytest.mark.parametrize("answer, tag, count", COUNTED, ids=[f"{a.id}-{t}" for a, t, _ in COUNTED])
def test_the_coincidences_are_where_they_were_counted_and_their_messages_name_each_cause(answer, tag, count):
    found = 0
    for entry in everywhere(answer):
        for mistake, wrong in answer.mistakes_of(entry):
            if mistake.tag == tag:
                found += 1
                raised = feedback(answer, entry, wrong)
                assert raised.misconception == tag and str(raised).count(", or ") >= 1, str(raised)
    assert found == count


def test_the_messages_of_the_issue_are_the_ones_seen_at_the_sheets_numbers():
    sheet = beyond.SHEET_4_5
    says = str(feedback(beyond.KV_CACHE_BYTES, sheet, cache(sheet) / 2))  # counted once, or numbers not bytes
    assert "one cache per layer" in says and "not their bytes" in says and says.startswith("That is half the cache")
    says = str(feedback(beyond.MACS_PER_BYTE, sheet, 4.0))  # per number, FLOPs, or the keys alone
    assert all(p in says for p in ("2 FLOPs", "bytes of the keys alone", "per cached number")), says
    says = str(feedback(beyond.MACS_PER_BYTE, sheet, 0.5))  # upside down, or a cache per query head
    assert "upside down" in says and "a key and a value per query head" in says, says
    says = str(feedback(beyond.PROJECTIONS_OVER_SCORES, beyond.SHEET_4_7, 12.8))  # 2 d_k / n
    assert "h heads of the full width" in says and "projections at one head's width" in says, says
    for rounded in (102, 102.0, 103):
        raised = feedback(beyond.PROJECTIONS_OVER_SCORES, beyond.SHEET_4_7, rounded)
        assert "rounded to a whole number" in str(raised) and "and divide" not in str(raised), str(raised)
    assert "rounded" not in str(feedback(beyond.PROJECTIONS_OVER_SCORES, beyond.SHEET_4_7, 100))


def test_a_whole_right_ratio_is_right_and_never_taken_for_a_rounded_one(capsys):
    entry = next(e for e in beyond.COST_4_7.entries if ratio(e) == int(ratio(e)))
    with handed(ASSIGNMENT, beyond.PROJECTIONS_OVER_SCORES, entry):
        check(beyond.PROJECTIONS_OVER_SCORES, ASSIGNMENT)(int(ratio(entry)))
    assert capsys.readouterr().out.startswith("✔ Correct.")


# --- the vetting ------------------------------------------------------------------------------------


COINCIDING = [(answer, c) for answer, _ in CAUSES for c in answer.coinciding]


@pytest.mark.parametrize("answer, coincidence", COINCIDING, ids=[f"{a.id}-{c.key}" for a, c in COINCIDING])
def test_the_vetting_finds_the_coincidence_a_declaration_no_longer_words_together(answer, coincidence):
    vet(pool(answer))
    without = dataclasses.replace(answer, coinciding=tuple(c for c in answer.coinciding if c is not coincidence))
    with pytest.raises(VariantError) as raised:
        vet(pool(without))
    assert "give the same answer" in str(raised.value)
    assert any(repr(key) in str(raised.value) for key in coincidence.keys), str(raised.value)


def test_a_coincidence_takes_its_mistakes_place_where_they_agree_and_only_there():
    a = Mistake("-/a", lambda n: 2 * n.x, "A.")
    b = Mistake("-/b", lambda n: n.x + 2, "B.")
    c = Mistake("-/c", lambda n: 3 * n.x, "C.")
    from autograders.problems.declare import Numbers

    numbers = Numbers("", {"x": 2})
    answer = Answer("q9_9_x", "number", lambda n: n.x, numbers, mistakes=(c, a, b),
                    coinciding=(Coincidence(("-/a", "-/b"), "-/both", "A or B."),))
    assert [m.key for m, _ in answer.mistakes_of({"x": 2})] == ["-/c", "-/both"]  # 2 · 2 = 2 + 2
    assert [m.key for m, _ in answer.mistakes_of({"x": 3})] == ["-/c", "-/a", "-/b"]  # 6 and 5: apart
    with pytest.raises(VariantError, match="'-/a' and '-/b' give the same answer"):
        vet(pool(dataclasses.replace(answer, coinciding=())))


def test_the_vetting_finds_a_mistake_whose_wider_test_takes_another_ones_answer():
    """A mistake recognised by more than its value (any whole number near the answer, for a rounded one) must not
    take the answer of a mistake declared after it: that one's message would never be seen."""
    from autograders.problems.declare import Numbers

    rounded = Mistake("-/rounded", lambda n: -(-n.x // 3), "Rounded.",  # up, and recognised rounded either way
                      matches=lambda value, n: value == int(value) and abs(value - n.x / 3) < 1)
    slip = Mistake("-/integer-division", lambda n: n.x // 3, "Integer division.")
    numbers = Numbers("", {"x": 7}, entries=tuple({"x": x} for x in range(10, 60) if x % 3))
    answer = Answer("q9_9_x", "number", lambda n: n.x / 3, numbers, tolerance=0.05, mistakes=(rounded, slip))
    with pytest.raises(VariantError, match="the answer of the misconception '-/integer-division' .* is named '-/rounded'"):
        vet(pool(answer))
    vet(pool(dataclasses.replace(answer, mistakes=(slip, rounded))))  # the slip's own value is named first


# --- the pools ----------------------------------------------------------------------------------------

# Every pool's entries as handed out: a changed pool would give every student of a course other numbers.
HANDED_OUT = {
    "q1_1": "36f9362d4ca2a1a5", "q1_2": "f69c645c9a073a68", "q2_1": "6de2483d7940d482", "q2_2": "e0c79a20ff817d77",
    "q2_3": "e86cfbd44998717e", "q3_1": "f1f1a37a3206e1a7", "q3_2": "516893a8fdec6295", "q4_1": "bbf41345457939c5",
    "q4_2": "f1730c84fab41626", "q5_3": "7bc295820c147045", "q4_5": "c2898537d8bd332c", "q4_7": "c22383aba7221e76",
}


def test_the_pools_are_the_ones_handed_out():
    found = {}
    for assignment in POOLS:
        for problem, first in problems(assignment).items():
            entries = json.dumps([sorted(entry.items()) for entry in first.entries])
            found[problem] = hashlib.sha256(entries.encode()).hexdigest()[:16]
    assert found == HANDED_OUT
