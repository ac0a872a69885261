"""Per-student variants: the keyed choice, the course key, the overrides, vetting and the record."""

import hashlib
import json
import os

import pytest

from autograders.variants import SHEET, VariantError, choose, read_key, seed, write_key
from autograders.variants import overrides, record
from autograders.problems.pools import Pool, entry_problems, vet

KEY = bytes(range(32))


def hmac_by_hand(key, message):
    """RFC 2104 HMAC-SHA256, written out: a second implementation of the seed."""
    block = 64
    key = key.ljust(block, b"\0")
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + message).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).digest()


def shapes_pool(entries=None, **changes):
    """d_k = d_model / h with the misconceptions of problem 1.1 (a pool for these tests)."""
    grid = [{"d_model": d, "h": h} for d in (96, 120, 144, 240, 360, 480, 720, 960) for h in (3, 5, 6, 10)
            if d % h == 0 and d // h not in (h, d) and h != 1]
    fields = dict(problem="q1_1_d_k", sheet={"d_model": 768, "h": 12}, entries=tuple(entries or grid),
                  answer=lambda e: e["d_model"] / e["h"],
                  mistakes=lambda e: {"multiplied-by-h": e["d_model"] * e["h"], "roles-swapped": e["h"] / e["d_model"],
                                      "head-full-width": e["d_model"], "heads-free": e["h"]},
                  valid=lambda e: None if e["d_model"] % e["h"] == 0 else f"h = {e['h']} does not divide d_model = {e['d_model']}")
    return Pool(**(fields | changes))


# --- the keyed choice ------------------------------------------------------------------


def test_the_seed_is_the_hmac_of_the_five_fields_as_json():
    fields = ["mha-workbook", "level1_recognition", "q1_1_d_k", "ann", 0]
    expected = int.from_bytes(hmac_by_hand(KEY, json.dumps(fields).encode()), "big")
    assert seed(KEY, *fields) == expected


def test_fields_cannot_run_into_each_other():
    assert seed(KEY, "c", "a|b", "p", "s", 0) != seed(KEY, "c", "a", "b|p", "s", 0)
    assert seed(KEY, "c", "a", "p", "s1", 0) != seed(KEY, "c", "a", "p", "s", 1)


def test_the_same_student_gets_the_same_entry_and_a_class_gets_many():
    pool = vet(shapes_pool())
    chosen = [choose(pool, KEY, "course", "level1", f"student{i}") for i in range(30)]
    assert chosen == [choose(pool, KEY, "course", "level1", f"student{i}") for i in range(30)]
    assert len({tuple(sorted(e.items())) for e in chosen}) >= 12, "30 students shared too few entries"
    other_key = bytes(reversed(KEY))
    assert [choose(pool, other_key, "course", "level1", f"student{i}") for i in range(30)] != chosen


def test_a_new_generation_can_change_the_entry_and_sheet_gives_the_sheets_numbers():
    pool = vet(shapes_pool())
    generations = {tuple(sorted(choose(pool, KEY, "c", "a", "ann", g).items())) for g in range(10)}
    assert len(generations) > 1
    assert choose(pool, KEY, "c", "a", "ann", SHEET) == {"d_model": 768, "h": 12}


@pytest.mark.parametrize("generation", [-1, 1.5, "1", True, None])
def test_a_bad_generation_is_refused_by_name(generation):
    with pytest.raises(VariantError, match="generation must be"):
        seed(KEY, "c", "a", "p", "s", generation)


@pytest.mark.parametrize("key", [b"short", "a string key" * 4, None])
def test_a_bad_key_is_refused_by_name(key):
    with pytest.raises(VariantError, match="key must be at least 32 bytes"):
        seed(key, "c", "a", "p", "s", 0)


def test_an_empty_student_id_is_refused():
    with pytest.raises(VariantError, match="student must be a non-empty string"):
        seed(KEY, "c", "a", "p", "", 0)


# --- the course key --------------------------------------------------------------------


def test_a_written_key_is_private_and_kept(tmp_path):
    path = tmp_path / "secrets" / "variants.key"
    key = write_key(path)
    assert len(key) == 32 and oct(path.stat().st_mode & 0o777) == "0o600"
    assert write_key(path) == key == read_key(path)


@pytest.mark.parametrize("content, mode, message", [
    (None, 0o600, "missing"),
    ("not hex at all", 0o600, "hexadecimal digits"),
    ("ab" * 8, 0o600, "got 16"),
    ("ab" * 32, 0o644, "readable by others"),
])
def test_an_unusable_key_file_is_named(tmp_path, content, mode, message):
    path = tmp_path / "variants.key"
    if content is not None:
        path.write_text(content)
        os.chmod(path, mode)
    with pytest.raises(VariantError, match=message) as caught:
        read_key(path)
    assert str(path) in str(caught.value)


# --- vetting ---------------------------------------------------------------------------


def test_the_test_pool_passes_vetting():
    assert vet(shapes_pool()).problem == "q1_1_d_k"


@pytest.mark.parametrize("entry, reason", [
    ({"d_model": 100, "h": 3}, "does not divide"),
    ({"d_model": 64, "h": 8}, "'heads-free' gives the right answer"),   # d_k = 8 = h
    ({"d_model": 16, "h": 4}, "'heads-free' gives the right answer"),
    ({"d_model": 12}, "are not the sheet's"),
])
def test_an_entry_that_would_make_the_feedback_ambiguous_fails(entry, reason):
    assert any(reason in r for r in entry_problems(shapes_pool(), entry))
    pool = shapes_pool(entries=shapes_pool().entries + (entry,))
    with pytest.raises(VariantError, match=reason):
        vet(pool)


def test_two_misconceptions_with_one_answer_fail():
    pool = shapes_pool(mistakes=lambda e: {"a": e["h"] * 2, "b": 2 * e["h"] + 1e-12})
    assert "the misconceptions 'a' and 'b' give the same answer" in " ".join(entry_problems(pool, pool.sheet))


def test_duplicates_and_a_small_pool_fail():
    entries = shapes_pool().entries
    with pytest.raises(VariantError, match="a duplicate"):
        vet(shapes_pool(entries=entries + entries[:1]))
    with pytest.raises(VariantError, match="at least 24 expected"):
        vet(shapes_pool(entries=entries[:5]))


# --- overrides -------------------------------------------------------------------------

PROBLEMS = {"level1_recognition": {"q1_1_d_k", "q1_2_shape"}, "level2_application": {"q2_2_scaled_score"}}


def write_csv(tmp_path, *rows):
    path = tmp_path / "overrides.csv"
    path.write_text("student_id,assignment,problem,generation\n" + "".join(r + "\n" for r in rows))
    return path


def test_the_most_specific_row_wins(tmp_path):
    path = write_csv(tmp_path, "ann,level1_recognition,q1_1_d_k,3", "ann,*,*,1", "ben,level1_recognition,*,sheet")
    found = overrides.read_overrides(path, students={"ann", "ben"}, problems=PROBLEMS)
    assert found.generation("ann", "level1_recognition", "q1_1_d_k") == 3
    assert found.generation("ann", "level1_recognition", "q1_2_shape") == 1
    assert found.generation("ben", "level1_recognition", "q1_2_shape") == SHEET
    assert found.generation("ben", "level2_application", "q2_2_scaled_score") == 0


def test_no_overrides_file_is_no_overrides(tmp_path):
    found = overrides.read_overrides(tmp_path / "absent.csv", students={"ann"}, problems=PROBLEMS)
    assert found.generation("ann", "level1_recognition", "q1_1_d_k") == 0


def test_every_bad_row_is_named_and_the_file_refused(tmp_path):
    path = write_csv(tmp_path, "ann,level1_recognition,q1_1_d_k,2", "zed,level1_recognition,q1_1_d_k,1",
                     "ann,level9,q1_1_d_k,1", "ann,level2_application,q1_1_d_k,1", "ann,*,*,-2")
    with pytest.raises(VariantError) as caught:
        overrides.read_overrides(path, students={"ann"}, problems=PROBLEMS)
    lines = str(caught.value).splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == ["line 3", "line 4", "line 5", "line 6"]
    assert "'zed' is not in the gradebook" in lines[0] and "has no variants in 'level2_application'" in lines[2]


def test_a_wrong_header_is_refused(tmp_path):
    path = tmp_path / "overrides.csv"
    path.write_text("id,generation\nann,1\n")
    with pytest.raises(VariantError, match="the first line must be student_id,assignment,problem,generation"):
        overrides.read_overrides(path, students={"ann"}, problems=PROBLEMS)


# --- the record ------------------------------------------------------------------------


def test_the_record_round_trips_sorted(tmp_path):
    rows = [("ben", "q1_1_d_k", 0, {"d_model": 96, "h": 3}), ("ann", "q1_1_d_k", SHEET, {"d_model": 768, "h": 12})]
    path = record.write(tmp_path / "variants", "level1_recognition", rows)
    assert path.name == "level1_recognition.csv"
    assert path.read_text().splitlines()[1].startswith("ann,")
    assert record.read(path) == {("ann", "q1_1_d_k"): (SHEET, {"d_model": 768, "h": 12}),
                                 ("ben", "q1_1_d_k"): (0, {"d_model": 96, "h": 3})}
