"""Submissions into the course: a folder in nbgrader's ``submitted/`` layout, or the
zip files an LMS exports (nbgrader's ``zip_collect``)."""

import shutil
from pathlib import Path

from .gradebooks import course_config


# Where nbgrader's zip_collect extracts ``alice.zip``: downloaded/<assignment>/extracted/alice/...
DEFAULT_ZIP_REGEXP = r".*[/\\]extracted[/\\](?P<student_id>[^/\\]+)[/\\](?:.*[/\\])?(?P<file_id>[^/\\]+\.ipynb)$"


def _snapshot(course):
    submitted = Path(course) / "submitted"
    return {str(p.relative_to(submitted)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in submitted.rglob("*") if p.is_file()} if submitted.exists() else {}


def _changed(before, after):
    """{(student, assignment)} whose files differ between two snapshots of ``submitted/``."""
    keys = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    return {tuple(Path(k).parts[:2]) for k in keys if len(Path(k).parts) >= 3}


def take_submissions(course, folder, assignments=None, students=None):
    """Copy ``folder/<student>/<assignment>/`` (nbgrader's ``submitted/`` layout) into the
    course's ``submitted/``, replacing each of those folders and nothing else; return
    [(student, assignment)] copied."""
    course, folder = Path(course).resolve(), Path(folder).resolve()
    if folder == course / "submitted":
        return pairs(folder, assignments, students)
    taken = []
    for student, assignment in pairs(folder, assignments, students):
        target = course / "submitted" / student / assignment
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(folder / student / assignment, target)
        taken.append((student, assignment))
    return taken


def pairs(folder, assignments=None, students=None):
    """[(student, assignment)] of ``folder/<student>/<assignment>/``, sorted; hidden folders skipped."""
    found = []
    for student_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir() and not p.name.startswith(".")):
        if students and student_dir.name not in students:
            continue
        for assignment_dir in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if not assignments or assignment_dir.name in assignments:
                found.append((student_dir.name, assignment_dir.name))
    return found


def collect_zips(course, folder, assignment=None, regexp=None, say=print):
    """Put an LMS's exported files into ``submitted/`` with nbgrader's ``zip_collect``.

    ``folder`` holds ``<assignment>/<files>`` (one folder per assignment) or, with
    ``assignment``, the files of that one assignment. Each file is copied into
    ``downloaded/<assignment>/archive/`` as zip_collect expects; zip files are
    extracted and the notebooks collected by ``FileNameCollectorPlugin.named_regexp``
    (the course's, else ``regexp``, else :data:`DEFAULT_ZIP_REGEXP`: one zip per
    student named after the student, holding the notebooks). Returns
    [(student, assignment)] collected.
    """
    from . import editions

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
    pattern = regexp or configured or DEFAULT_ZIP_REGEXP
    collected = set()
    for name, files in groups.items():
        archive = course / "downloaded" / name / "archive"
        if archive.exists():
            shutil.rmtree(archive)
        shutil.copytree(files, archive)
        before = _snapshot(course)
        args = ["zip_collect", name, "--force", "--log-level=WARN"]
        if regexp or not configured:
            args.append(f"--FileNameCollectorPlugin.named_regexp={pattern}")
        result = editions.nbgrader(course, *args, check=False, capture=True)
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader zip_collect {name} failed:\n{result.stdout}{result.stderr}")
        got = {(s, a) for s, a in _changed(before, _snapshot(course)) if a == name}
        say(f"{name}: collected {len(got)} submissions from {files}")
        collected |= got
    return sorted(collected)
