"""Submissions in nbgrader's ``submitted/`` layout (``<student>/<assignment>/``): listed, and copied
into the course."""

import shutil
from pathlib import Path


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
        shutil.copytree(folder / student / assignment, target, symlinks=True)
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
