"""Taking an LMS's zips in (``autograders/intake/zips.py``): a zip is its owner's, named by
the zip and never by its members; a bad zip is refused alone, with its reason, and
nothing is ever written outside the extraction folder.

No grading here: each test builds zips with :mod:`zipfile` in a bare course folder
and looks at what lands in ``submitted/``. The command end to end, with a bad zip
among good ones, is in ``tests/test_cli.py``.
"""

import io
import stat
import struct
import warnings
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograders.intake import zips

LEVEL = "level1_recognition"
NOTEBOOK = f"{LEVEL}.ipynb"


def notebook(owner):
    """A notebook whose one cell says whose it is."""
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"work of {owner}")]))


def make_zip(path, members):
    """``members``: {name: text or bytes} or [(ZipInfo or name, data)]."""
    path.parent.mkdir(parents=True, exist_ok=True)
    items = members.items() if isinstance(members, dict) else members
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on a duplicate name: that is the point
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in items:
                z.writestr(name, data)
    return path


def files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*") if p.is_file() or p.is_symlink())


def submitted(course, student):
    path = course / "submitted" / student / LEVEL / NOTEBOOK
    return path.read_text() if path.exists() else None


@pytest.fixture
def course(tmp_path):
    course = tmp_path / "course"
    (course / "source" / LEVEL).mkdir(parents=True)
    return course


@pytest.fixture
def lms(tmp_path):
    folder = tmp_path / "lms" / LEVEL
    folder.mkdir(parents=True)
    return folder


def collect(course, lms, **kw):
    lines = []
    taken = zips.collect_zips(course, lms, LEVEL, say=lines.append, **kw)
    return taken, {s: r for s, _, r in taken.refused}, lines


def test_each_zip_is_its_owners(course, lms):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "bob.zip", {f"some/folder/{NOTEBOOK}": notebook("bob")})
    taken, refused, lines = collect(course, lms)
    assert taken.collected == [("ada", LEVEL), ("bob", LEVEL)] and not refused
    assert "work of ada" in submitted(course, "ada") and "work of bob" in submitted(course, "bob")
    assert lines == [f"{LEVEL}: collected 2 submissions from {lms}"]


def test_a_decoy_path_inside_a_zip_never_names_another_student(course, lms):
    """alice's zip holds ``decoy/extracted/bob/<notebook>``: with the old greedy pattern it
    was filed as bob's and replaced his work. By default it is alice's own; with a
    naming rule that would read bob from inside alice's zip, her zip is refused."""
    make_zip(lms / "bob.zip", {NOTEBOOK: notebook("bob")})
    make_zip(lms / "alice.zip", {f"decoy/extracted/bob/{NOTEBOOK}": notebook("alice pretending to be bob")})
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("alice", LEVEL), ("bob", LEVEL)]
    assert "work of bob" in submitted(course, "bob")
    assert "pretending" in submitted(course, "alice")

    greedy = r".*[/\\]extracted[/\\](?P<student_id>[^/\\]+)[/\\](?:.*[/\\])?(?P<file_id>[^/\\]+\.ipynb)$"
    make_zip(lms / "alice.zip", {NOTEBOOK: notebook("alice"),
                                 f"decoy/extracted/bob/x/{NOTEBOOK}": notebook("alice pretending to be bob")})
    taken, refused, _ = collect(course, lms, regexp=greedy)
    assert taken.collected == [("bob", LEVEL)]
    assert "would be filed as 'bob''s work" in refused["alice"] and "decoy/extracted/bob" in refused["alice"]
    assert "work of bob" in submitted(course, "bob")
    assert "pretending" in submitted(course, "alice"), "alice's refused zip leaves her earlier submission as it was"


@pytest.mark.parametrize("name", [
    f"../{NOTEBOOK}", f"a/../../{NOTEBOOK}", f"/tmp/{NOTEBOOK}", f"..\\..\\{NOTEBOOK}", f"C:\\temp\\{NOTEBOOK}",
    f"C:{NOTEBOOK}", f"../../outside.txt",
])
def test_a_member_leaving_its_folder_refuses_only_its_zip(course, lms, tmp_path, name):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "mallory.zip", {NOTEBOOK: notebook("mallory"), name: notebook("escaped")})
    before = files_under(tmp_path)
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)]
    assert repr(name) in refused["mallory"] and ("absolute" in refused["mallory"] or "leaves" in refused["mallory"])
    new = [f for f in files_under(tmp_path) if f not in before]
    assert all(f.startswith(("course/downloaded/", f"course/submitted/ada/{LEVEL}/")) for f in new), new
    assert not any("escaped" in (tmp_path / f).read_text(errors="replace") for f in new)
    assert submitted(course, "mallory") is None


@pytest.mark.parametrize("members, why", [
    ([(NOTEBOOK, notebook("1")), (NOTEBOOK, notebook("2"))], "the same notebook twice"),
    ([(f"a/{NOTEBOOK}", notebook("1")), (f"b/{NOTEBOOK}", notebook("2"))], "the same notebook twice"),
    ([(NOTEBOOK, notebook("1")), ("Level1_Recognition.ipynb", notebook("2"))], "differ only in case"),
])
def test_the_same_notebook_twice_is_refused(course, lms, members, why):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "twice.zip", members)
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)] and why in refused["twice"]


def test_an_honestly_large_member_is_refused_before_extraction(course, lms):
    big = zips.MAX_NOTEBOOK_BYTES + 1
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "bomb.zip", {NOTEBOOK: b"0" * big})
    assert (lms / "bomb.zip").stat().st_size < big // 100, "a zip bomb: small zip, large member"
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)]
    assert f"larger than {zips.MAX_NOTEBOOK_BYTES // 2**20} MiB" in refused["bomb"]
    assert not list((course / "downloaded").rglob("bomb")), "nothing of it extracted"


def _lie_about_size(path, claimed):
    """Rewrite the uncompressed size of the zip's only member in both headers."""
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, claimed)
    struct.pack_into("<I", data, central + 24, claimed)
    path.write_bytes(bytes(data))


def test_a_member_whose_header_lies_about_its_size_is_refused(course, lms):
    real = 8 * 2**20
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "liar.zip", {NOTEBOOK: b"0" * real})
    _lie_about_size(lms / "liar.zip", 1000)
    assert zipfile.ZipFile(lms / "liar.zip").infolist()[0].file_size == 1000
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)]
    assert "cannot be read" in refused["liar"]
    assert not list((course / "downloaded").rglob("liar")) or not list((course / "downloaded").rglob(f"liar/{NOTEBOOK}"))


def test_streaming_stops_at_the_cap_whatever_the_header_says(tmp_path):
    target = tmp_path / "out.ipynb"
    with pytest.raises(zips.Refused, match="larger than 1 MiB"):
        zips._stream(io.BytesIO(b"0" * (2**20 + 1)), target, 2**20, "member")
    assert not target.exists(), "a partly written file is removed"
    assert zips._stream(io.BytesIO(b"0" * 2**20), target, 2**20, "member") == 2**20


def test_links_and_special_members_are_refused(course, lms):
    link = zipfile.ZipInfo(NOTEBOOK)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "linker.zip", [(link, "/etc/passwd")])
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)] and "link" in refused["linker"]
    assert not [p for p in course.rglob("*") if p.is_symlink()]


def test_what_is_not_a_zip_or_holds_no_notebook(course, lms):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    (lms / "carol.zip").write_bytes(b"this is not a zip file at all")
    (lms / "dave.tar.gz").write_bytes(b"\x1f\x8b not read")
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr(NOTEBOOK, notebook("eve"))
    make_zip(lms / "eve.zip", {"inner.zip": inner.getvalue()})
    make_zip(lms / "fay.zip", {"notes.txt": "nothing"})
    (lms / "README.txt").write_text("an instructor's note, not a submission")
    taken, refused, lines = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)]
    assert "not a readable zip file" in refused["carol"]
    assert "only .zip archives are read" in refused["dave"]
    assert "zips inside zips are not opened" in refused["eve"]
    assert "no notebook" in refused["fay"]
    assert lines == [f"{LEVEL}: collected 1 submissions, refused 4 from {lms} (1 other files ignored)"]


def test_a_name_that_is_not_utf8_is_read(course, lms):
    make_zip(lms / "ada.zip", {f"X/{NOTEBOOK}": notebook("ada")})
    data = (lms / "ada.zip").read_bytes()
    assert data.count(b"X/") == 2
    (lms / "ada.zip").write_bytes(data.replace(b"X/", b"\xff/"))  # cp437, no UTF-8 flag
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)] and "work of ada" in submitted(course, "ada")


def test_hidden_folders_and_resource_forks_are_skipped(course, lms):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada"), f"__MACOSX/._{NOTEBOOK}": b"\x00\x05\x16\x07",
                               f".ipynb_checkpoints/{NOTEBOOK}": notebook("an old checkpoint")})
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)] and not refused
    assert files_under(course / "submitted/ada" / LEVEL) == [NOTEBOOK]
    assert "work of ada" in submitted(course, "ada")


def test_a_zip_named_with_markup_is_not_a_student(course, lms):
    make_zip(lms / "ada.zip", {NOTEBOOK: notebook("ada")})
    make_zip(lms / "<img src=x onerror=alert(1)>.zip", {NOTEBOOK: notebook("x")})
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [("ada", LEVEL)]
    assert list(refused) == [""] and "is not a student id" in refused[""]
    assert [p.name for p in (course / "submitted").iterdir()] == ["ada"]


def test_a_refused_zip_leaves_the_earlier_submission(course, lms):
    make_zip(lms / "bob.zip", {NOTEBOOK: notebook("bob, first")})
    collect(course, lms)
    make_zip(lms / "bob.zip", {NOTEBOOK: notebook("bob, second"), "../x": "y"})
    taken, refused, _ = collect(course, lms)
    assert taken.collected == [] and "leaves the zip's folder" in refused["bob"]
    assert "bob, first" in submitted(course, "bob")


def test_a_naming_rule_with_timestamps_keeps_the_latest(course, lms):
    """An LMS that names each attempt ``<student>_<timestamp>.zip``: the later one is filed;
    two attempts without a timestamp to tell them apart refuse that student."""
    rule = r".*[/\\]extracted[/\\](?P<student_id>[a-z]+)_(?P<timestamp>[0-9-]+)[/\\](?:.*[/\\])?(?P<file_id>[^/\\]+)$"
    make_zip(lms / "ada_2026-01-02.zip", {NOTEBOOK: notebook("ada, later")})
    make_zip(lms / "ada_2026-01-01.zip", {NOTEBOOK: notebook("ada, earlier")})
    taken, refused, _ = collect(course, lms, regexp=rule)
    assert taken.collected == [("ada", LEVEL)] and not refused
    assert "ada, later" in submitted(course, "ada")
    assert (course / "submitted/ada" / LEVEL / "timestamp.txt").read_text().startswith("2026-01-02")

    rule = r".*[/\\]extracted[/\\](?P<student_id>[a-z]+)_[0-9-]+[/\\](?:.*[/\\])?(?P<file_id>[^/\\]+)$"
    taken, refused, _ = collect(course, lms, regexp=rule)
    assert taken.collected == [] and "both give" in refused["ada"]
