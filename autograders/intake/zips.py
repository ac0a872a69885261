"""An LMS's export into the course: the files it exports (one zip per student, as nbgrader's
``zip_collect`` takes them), checked, their notebooks filed in ``submitted/``.

An LMS's files are read here rather than by ``zip_collect``'s extractor, because a
zip is the student's to make: its members' names, sizes and types are untrusted.

* Whose work a zip holds is decided by the zip's own name and never by anything
  inside it: by default ``alice.zip`` is alice's; with a naming rule
  (``--zip-regexp`` or the course's ``FileNameCollectorPlugin.named_regexp``,
  matched as nbgrader does against the path ``.../extracted/<zip name>/<member>``)
  the ``student_id`` it captures must come from the part of that path before the
  member. A member that would be filed under another student refuses its zip.
* A zip is taken whole or not at all. It is refused, with one line saying why, if it
  is not a zip, has a member whose name leaves its folder (``../``, an absolute or a
  drive path, backslashes read as separators), a link or special file, an encrypted
  or corrupt notebook, a notebook larger than :data:`MAX_NOTEBOOK_BYTES` (checked
  on the declared size, then while streaming, whatever the header says), more than
  :data:`MAX_MEMBERS` members or :data:`MAX_ZIP_BYTES` of notebooks, the same
  notebook twice (or two names differing only in case), or no notebook at all.
  A refused zip leaves its student's earlier submission as it was; the other zips
  are taken.
* Only notebooks are extracted, and only under ``downloaded/<assignment>/extracted/``;
  zips inside zips are not opened, hidden folders (``__MACOSX``,
  ``.ipynb_checkpoints``) are skipped.
"""

import os
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..common.course_config import course_config
from ..student.settings import DEFAULT

MAX_NOTEBOOK_BYTES = DEFAULT.file_size  # a kernel may write no larger file: no notebook of ours is larger
MAX_ZIP_BYTES = 4 * DEFAULT.file_size  # all the notebooks of one zip together
MAX_MEMBERS = 10_000
ARCHIVES = (".gz", ".tgz", ".tar", ".bz2", ".xz", ".7z", ".rar")  # refused: only zips are read
# A student id names folders and appears in the formgrader, the CSV and the report:
# letters, digits and _ . @ + -, starting with a letter or digit.
STUDENT_ID = re.compile(r"\w[\w.@+-]*")
_CHUNK = 1 << 20


class Refused(Exception):
    """A file of an LMS's export that is not taken in; the message says why."""


@dataclass
class Intake:
    """What :func:`collect_zips` took in."""

    collected: list = field(default_factory=list)  # [(student, assignment)]
    refused: list = field(default_factory=list)  # [(student or "" when unknown, assignment, reason)]


def check_student_id(student):
    """``student`` if it is a safe student id, else :class:`Refused` saying why."""
    if not STUDENT_ID.fullmatch(student or ""):
        raise Refused(f"{student!r} is not a student id (letters, digits and _ . @ + -, "
                      "starting with a letter or digit)")
    return student


# --- one zip -------------------------------------------------------------------------


def member_parts(name):
    """The parts of a zip member's name, or :class:`Refused` if it would leave its folder.
    Backslashes count as separators (zips made on Windows)."""
    if any(ord(c) < 32 for c in name):
        raise Refused(f"member {name!r} has control characters in its name")
    path = name.replace("\\", "/")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise Refused(f"member {name!r} has an absolute path")
    if ".." in parts:
        raise Refused(f"member {name!r} leaves the zip's folder")
    return parts


def _is_link_or_special(info):
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip gives no file type (most zippers)
    return info.create_system == 3 and kind not in (0, stat.S_IFREG, stat.S_IFDIR)


def _stream(source, target, limit, what):
    """Copy the open file ``source`` into a new file ``target``, at most ``limit`` bytes."""
    written = 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > limit:
                    raise Refused(f"{what} is larger than {limit // 2**20} MiB")
                out.write(chunk)
    except BaseException:
        os.unlink(target)
        raise
    return written


def _hidden(parts):
    return any(p.startswith(".") or p == "__MACOSX" for p in parts)


def _notebook_members(archive, label):
    """[(ZipInfo, parts)] of the notebooks of an open zip, after checking every member."""
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise Refused(f"{label} has {len(members)} members (at most {MAX_MEMBERS})")
    notebooks, total = [], 0
    for info in members:
        parts = member_parts(info.filename)
        if _is_link_or_special(info):
            raise Refused(f"member {info.filename!r} is a link or a special file")
        if info.is_dir() or not parts or _hidden(parts[:-1]) or parts[-1].startswith("._"):
            continue
        if not parts[-1].endswith(".ipynb"):
            continue
        if info.flag_bits & 0x1:
            raise Refused(f"member {info.filename!r} is encrypted")
        if info.file_size > MAX_NOTEBOOK_BYTES:
            raise Refused(f"member {info.filename!r} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
        total += info.file_size
        if total > MAX_ZIP_BYTES:
            raise Refused(f"{label}'s notebooks add up to more than {MAX_ZIP_BYTES // 2**20} MiB")
        notebooks.append((info, parts))
    return notebooks


# --- naming ---------------------------------------------------------------------------


class Naming:
    """Whose a file is and under which name it is filed: by default ``<student>.zip``
    holding ``<notebook>.ipynb`` anywhere inside; else a ``named_regexp`` as nbgrader's
    ``FileNameCollectorPlugin`` applies it (to the extracted file's absolute path)."""

    def __init__(self, regexp=None):
        self.regexp = re.compile(regexp) if regexp else None

    def owner_of(self, file):
        """The student a zip names by default (its name without the extension)."""
        name = file.name
        while Path(name).suffix.lower() in (".zip", *ARCHIVES):
            name = Path(name).stem
        return name

    def place(self, path, owned, default_owner=None):
        """(student, file_id, timestamp) of the file extracted at ``path`` (a str);
        ``owned``: how much of ``path`` comes from the export's own file names (the
        student must be read there, not from a zip's member names)."""
        if self.regexp is None:
            if default_owner is None:
                raise Refused("a notebook outside a zip: name one zip per student <student>.zip, "
                              "or give the LMS's naming with --zip-regexp")
            return check_student_id(default_owner), Path(path).name, None
        match = self.regexp.match(path)
        if not match or "student_id" not in match.groupdict() or "file_id" not in match.groupdict():
            raise Refused(f"{path[owned:].lstrip('/') or Path(path).name!r} does not match the naming "
                          f"{self.regexp.pattern!r}")
        student, file_id = match.group("student_id"), match.group("file_id")
        if student is None or file_id is None:
            raise Refused(f"the naming {self.regexp.pattern!r} gives no student or no file for {path!r}")
        if match.end("student_id") > owned:
            raise Refused(f"member {path[owned:].lstrip('/')!r} would be filed as {student!r}'s work: "
                          "a zip's student comes from the zip's name, never from inside it")
        file_id = os.path.splitext(file_id)[0] + os.path.splitext(path)[1]
        parts = member_parts(file_id)
        if not parts or _hidden(parts):
            raise Refused(f"the naming gives the unsafe file name {file_id!r}")
        timestamp = (match.groupdict().get("timestamp") or "").strip() or None
        if timestamp:
            from nbgrader.utils import parse_utc

            try:
                timestamp = parse_utc(timestamp).isoformat(" ")
            except (ValueError, OverflowError):
                raise Refused(f"invalid timestamp {timestamp!r}") from None
        return check_student_id(student), "/".join(parts), timestamp


def _read_zip(file, label, extracted, naming, relative):
    """Extract the notebooks of the zip ``file`` into ``extracted/<relative>/<name>/``;
    return {student: {file_id: (path, timestamp)}} (one student) or raise Refused."""
    folder = extracted.joinpath(*relative.parent.parts, naming.owner_of(relative))
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
        raise Refused(f"not a readable zip file ({error})") from None
    found = {}
    with archive:
        notebooks = _notebook_members(archive, label)
        if not notebooks:
            raise Refused("no notebook (.ipynb) in it" + (" (zips inside zips are not opened)"
                          if any(i.filename.lower().endswith(".zip") for i in archive.infolist()) else ""))
        seen = {}
        for info, parts in notebooks:
            target = folder.joinpath(*parts)
            student, file_id, timestamp = naming.place(str(target), len(str(folder)), naming.owner_of(relative))
            key = file_id.casefold()
            if key in seen:
                first = seen[key]
                why = "the same notebook twice" if first[0] == file_id else "notebooks whose names differ only in case"
                raise Refused(f"{why}: {first[1]!r} and {info.filename!r}")
            seen[key] = (file_id, info.filename)
            found.setdefault(student, {})[file_id] = (target, timestamp, info)
        if len(found) > 1:
            raise Refused(f"its notebooks are filed under several students ({', '.join(sorted(found))})")
        size = 0
        for student, files in found.items():
            for file_id, (target, timestamp, info) in files.items():
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with archive.open(info) as source:
                        size += _stream(source, target, MAX_NOTEBOOK_BYTES, f"member {info.filename!r}")
                except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, RuntimeError,
                        OSError, ValueError) as error:
                    raise Refused(f"member {info.filename!r} cannot be read ({type(error).__name__}: {error})") from None
                if size > MAX_ZIP_BYTES:
                    raise Refused(f"its notebooks add up to more than {MAX_ZIP_BYTES // 2**20} MiB")
                files[file_id] = (target, timestamp)
    return found


def _read_notebook(file, extracted, naming, relative):
    """A notebook given as it is (not in a zip): copied into ``extracted/<relative>``."""
    target = extracted.joinpath(*relative.parts)
    student, file_id, timestamp = naming.place(str(target), len(str(target)))
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(file, "rb") as source:
        _stream(source, target, MAX_NOTEBOOK_BYTES, relative.as_posix())
    return {student: {file_id: (target, timestamp)}}


# --- an export -----------------------------------------------------------------------


def _files(folder):
    """The regular files under ``folder`` (links not followed), sorted; hidden ones skipped."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__MACOSX")
        found += [Path(root) / f for f in sorted(files) if not f.startswith(".")]
    return found


def _take_export(course, assignment, files, naming, say):
    """Take in one assignment's export (the folder ``files``); return an :class:`Intake`."""
    extracted = course / "downloaded" / assignment / "extracted"
    if extracted.exists():
        shutil.rmtree(extracted)
    extracted.mkdir(parents=True)
    by_student, refused, origins, ignored = {}, {}, {}, 0
    for file in _files(files):
        relative = file.relative_to(files)
        label = relative.as_posix()
        suffix = file.suffix.lower()
        default_owner = naming.owner_of(relative) if naming.regexp is None and suffix in (".zip", *ARCHIVES) else None
        try:
            if file.is_symlink() or not file.is_file():
                raise Refused("not a regular file")
            if suffix == ".zip":
                found = _read_zip(file, label, extracted, naming, relative)
            elif suffix == ".ipynb":
                found = _read_notebook(file, extracted, naming, relative)
            elif suffix in ARCHIVES:
                raise Refused("only .zip archives are read")
            else:
                ignored += 1
                continue
        except Refused as error:
            owner = default_owner if default_owner and STUDENT_ID.fullmatch(default_owner) else ""
            if not owner and naming.regexp is not None and suffix == ".zip":
                owner = _owner_by_regexp(naming, extracted, relative)
            refused.setdefault(owner, []).append(f"{label} refused: {error}")
            continue
        for student, notebooks in found.items():
            mine = by_student.setdefault(student, {})
            for file_id, (path, timestamp) in notebooks.items():
                if file_id in mine:
                    old_path, old_stamp, old_label = mine[file_id]
                    if timestamp and old_stamp and timestamp != old_stamp:
                        if timestamp > old_stamp:
                            mine[file_id] = (path, timestamp, label)
                        continue
                    refused.setdefault(student, []).append(
                        f"{old_label} and {label} both give {file_id} (and no later timestamp tells them apart)")
                    continue
                mine[file_id] = (path, timestamp, label)
            origins.setdefault(student, set()).add(label)

    intake = Intake()
    for student, reasons in sorted(refused.items()):
        by_student.pop(student, None)  # a student with a refused file: nothing of theirs is taken
        for reason in (reasons if not student else ["; ".join(reasons)]):
            intake.refused.append((student, assignment, reason))
    for student, notebooks in sorted(by_student.items()):
        _file_submission(course / "submitted" / student / assignment, notebooks)
        intake.collected.append((student, assignment))
    counts = f"{len(intake.collected)} submissions" + (f", refused {len(intake.refused)}" if intake.refused else "")
    say(f"{assignment}: collected {counts} from {files}" + (f" ({ignored} other files ignored)" if ignored else ""))
    return intake


def _owner_by_regexp(naming, extracted, relative):
    """The student a naming rule reads from a zip's own name (a notebook in it), or ""."""
    folder = extracted.joinpath(*relative.parent.parts, naming.owner_of(relative))
    try:
        return naming.place(str(folder / "notebook.ipynb"), len(str(folder)))[0]
    except Refused:
        return ""


def _file_submission(target, notebooks):
    """Replace the folder ``target`` by the ``notebooks`` {file_id: (path, timestamp, label)}."""
    fresh = target.with_name(target.name + ".new")
    if fresh.exists():
        shutil.rmtree(fresh)
    fresh.mkdir(parents=True)
    stamps = []
    for file_id, (path, timestamp, _) in notebooks.items():
        destination = fresh.joinpath(*file_id.split("/"))
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        stamps += [timestamp] if timestamp else []
    if stamps:
        (fresh / "timestamp.txt").write_text(max(stamps))
    if target.exists():
        shutil.rmtree(target)
    fresh.rename(target)


def collect_zips(course, folder, assignment=None, regexp=None, say=print):
    """Take an LMS's exported files into ``submitted/``.

    ``folder`` holds ``<assignment>/<files>`` (one folder per assignment) or, with
    ``assignment``, the files of that one assignment. Each zip is checked and its
    notebooks extracted into ``downloaded/<assignment>/extracted/`` (see the module's
    docstring); the naming is ``regexp``, else the course's
    ``FileNameCollectorPlugin.named_regexp``, else one ``<student>.zip`` per student.
    Returns an :class:`Intake`: [(student, assignment)] collected and
    [(student, assignment, reason)] refused (student "" when no student can be told).
    """
    course, folder = Path(course).resolve(), Path(folder).resolve()
    known = {p.name for p in (course / "source").iterdir() if p.is_dir()} if (course / "source").exists() else set()
    if assignment:
        groups = {assignment: folder}
    else:
        groups = {p.name: p for p in sorted(folder.iterdir()) if p.is_dir() and p.name in known}
        if not groups:
            raise ValueError(f"{folder} has no folder named after an assignment ({', '.join(sorted(known))}); "
                             "give --assignment for a folder of one assignment's files")
    configured = course_config(course).get("FileNameCollectorPlugin", {}).get("named_regexp")
    try:
        naming = Naming(regexp or configured or None)
    except re.error as error:
        raise ValueError(f"the zip naming {regexp or configured!r} is not a regular expression: {error}") from None
    intake = Intake()
    for name, files in groups.items():
        taken = _take_export(course, name, files, naming, say)
        intake.collected += taken.collected
        intake.refused += taken.refused
    return intake
