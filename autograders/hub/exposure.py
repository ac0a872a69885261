"""Whether a student could read the solutions on this machine, and closing it before the class starts.

The solutions are in the clone ``make hub`` runs from (``notebooks/``, and every version of them in
``.git``) and in the instructor's course (``source/``, ``release/`` before release, the gradebook,
``variants.key``, the students' submissions). A student reads a file when every folder above it
lets them search it and the file lets them read it: through its "other" bits, or its group bits when
the group is one that students are in (the hub's group). ACLs are not looked at.

``hub up`` calls :func:`find` before it changes anything: each place found open is closed by
taking the others' (and students' group's) bits off that one folder, or refused with what to do
when it cannot be (a read-only file system). :func:`close` does it, one line each.
"""

import grp
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .accounts import GROUP


@dataclass
class Opening:
    folder: Path        # the folder whose bits close it
    what: str           # what a student could read there
    example: Path       # one file a student could read

    def line(self):
        return f"closed: chmod o-rwx{',g-rwx' if _students_group(self.folder) else ''} {self.folder} " \
               f"(any student could read {self.what}, e.g. {self.example})"


class ExposureError(RuntimeError):
    """A place students could read cannot be closed by ``hub up``."""


def students_gids():
    try:
        return {grp.getgrnam(GROUP).gr_gid}
    except KeyError:
        return set()


def _students_group(path):
    return os.stat(path).st_gid in students_gids()


def _allows(st, bit_other, bit_group, gids):
    return bool(st.st_mode & bit_other or (st.st_gid in gids and st.st_mode & bit_group))


def readable_by_students(path, gids=None):
    """Whether a student (not its owner, not root) could read ``path``: every folder above it
    searchable by them, and the file readable (a folder: searchable)."""
    gids = students_gids() if gids is None else gids
    path = Path(os.path.abspath(path))
    for folder in reversed(path.parents):
        if not _allows(os.stat(folder), stat.S_IXOTH, stat.S_IXGRP, gids):
            return False
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        return _allows(st, stat.S_IXOTH, stat.S_IXGRP, gids)
    return _allows(st, stat.S_IROTH, stat.S_IRGRP, gids)


def _files(root, names):
    for name in names:
        place = Path(root, name)
        if place.is_file():
            yield place
        elif place.is_dir():
            yield from (p for p in sorted(place.rglob("*")) if p.is_file() and not p.is_symlink())


def first_readable(root, names):
    """The first file under ``root/<name>`` (for each of ``names``) a student could read, or None."""
    gids = students_gids()
    return next((p for p in _files(root, names) if readable_by_students(p, gids)), None)


CLONE_SECRETS = ("notebooks", ".git", "tests")  # sources, their history, the graded fixtures
COURSE_SECRETS = ("source", "release", "autograded", "submitted", "feedback", "gradebook.db",
                  "variants.key", "variants")


def find(clone, course):
    """What students could read: an Opening for the clone and one for the course, when open."""
    found = []
    for folder, names, what in ((clone, CLONE_SECRETS, "the solutions and hidden tests in this clone"),
                                (course, COURSE_SECRETS, "the course's solutions, gradebook and submissions")):
        if folder is None or not Path(folder).is_dir():
            continue
        example = first_readable(folder, names)
        if example is not None:
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                raise ExposureError(f"any student could read {what} in {folder} (e.g. {example}), on a read-only "
                                    f"file system: move it into a folder only root reads, then run make hub again; "
                                    f"nothing was changed")
            found.append(Opening(Path(folder), what, example))
    return found


def close(openings, log=print):
    for opening in openings:
        line = opening.line()
        mode = os.stat(opening.folder).st_mode & 0o7777
        off = 0o007 | (0o070 if _students_group(opening.folder) else 0)
        os.chmod(opening.folder, mode & ~off)
        log(line)
