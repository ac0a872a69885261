"""System accounts of the hub's people: one per student and one for the instructor.

nbgrader's exchange and the spawner identify a student by their system user, so every
roster id is a real account with its own home (mode 0700: no student reads another's
files). Every account this hub creates is in the group ``mha-workbook``; an existing
account outside it is never taken over. Nothing that exists is changed: re-running with a
longer roster only adds accounts.
"""

import grp
import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

GROUP = "mha-workbook"
GRADERS = "mha-workbook-graders"  # the instructors of every hub on this machine: they run the grader's environment
SBIN = ("/usr/sbin", "/sbin", "/usr/bin")


def _tool(name):
    found = shutil.which(name, path=":".join(SBIN))
    if not found:
        raise RuntimeError(f"{name} not found in {', '.join(SBIN)}: the hub needs the system's account tools")
    return found


def exists(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def members():
    """The accounts this hub created (the members of GROUP)."""
    try:
        return list(grp.getgrnam(GROUP).gr_mem)
    except KeyError:
        return []


def ours(name):
    """Whether ``name`` is an account this hub created."""
    return name in members()


def foreign(name):
    """An existing account that this hub did not create."""
    return exists(name) and not ours(name)


def ensure_group():
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run([_tool("groupadd"), "--system", GROUP], check=True)


def ensure_grader(name):
    """Put ``name`` (an instructor) in the group :data:`GRADERS` (made if missing); its gid. Every hub's
    instructor joins it, so a second hub on the same environments (another course, another instructor)
    keeps the first one's instructor in: their group was the grader's folder's before, and the second
    hub's took its place."""
    try:
        group = grp.getgrnam(GRADERS)
    except KeyError:
        subprocess.run([_tool("groupadd"), "--system", GRADERS], check=True)
        group = grp.getgrnam(GRADERS)
    if name not in group.gr_mem:
        subprocess.run([_tool("usermod"), "--append", "--groups", GRADERS, name], check=True)
    return group.gr_gid


def ensure_account(name, full_name=""):
    """Create ``name`` (home ``/home/<name>``, mode 0700) unless it exists; True if created."""
    if exists(name):
        return False
    comment = (full_name or name).replace(":", " ").replace(",", " ")
    subprocess.run([_tool("useradd"), "--create-home", "--user-group", "--groups", GROUP,
                    "--shell", "/bin/bash", "--comment", comment, name], check=True)
    home(name).chmod(0o700)
    return True


def home(name):
    return Path(pwd.getpwnam(name).pw_dir)


def give(path, name):
    """Make ``path`` (a file or a tree) belong to ``name``."""
    user = pwd.getpwnam(name)
    for p in [Path(path), *(Path(path).rglob("*") if Path(path).is_dir() else [])]:
        os.chown(p, user.pw_uid, user.pw_gid, follow_symlinks=False)


# Run as the user: a home is the user's, so a link they put there reaches only what they may write.
_WRITE = """\
import json, os, sys
replace = sys.argv[1] == "replace"
written = []
for path, text in json.load(sys.stdin).items():
    if os.path.lexists(path) and not replace:
        continue
    os.makedirs(os.path.dirname(path), exist_ok=True)
    part = path + ".part"
    with open(part, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(part, path)
    written.append(path)
print(json.dumps(written))
"""


def write_as(name, files, python, replace=False):
    """Write ``files`` (``{relative path: text}``) into ``~name`` as the user ``name`` (never as root: a
    link the user made cannot send it elsewhere, with the user's groups as at a login), in one process of ``python``
    (one the user may run: an instructor's is the grader's, open to the group :data:`GRADERS`);
    an existing file is kept unless ``replace``. Returns the relative paths written."""
    user, where = pwd.getpwnam(name), home(name)
    paths = {str(where / relative): relative for relative in files}
    done = subprocess.run([str(python), "-c", _WRITE, "replace" if replace else "keep"],
                          input=json.dumps({path: files[relative] for path, relative in paths.items()}), text=True,
                          user=user.pw_uid, group=user.pw_gid, extra_groups=os.getgrouplist(name, user.pw_gid), cwd="/",
                          env={"PATH": "/usr/bin:/bin", "HOME": user.pw_dir}, capture_output=True)
    if done.returncode != 0:
        raise OSError(f"could not write {', '.join(sorted(files))} in ~{name}: {done.stderr.strip()[-300:]}")
    return [paths[path] for path in json.loads(done.stdout)]


def place_file(name, relative, text, python):
    """Write ``text`` to ``~name/relative`` unless it is there; the file is the user's. True when written."""
    return bool(write_as(name, {relative: text}, python))


def remove_account(name):
    """Remove an account of ours and its home (tests only: a course never deletes anyone)."""
    if not ours(name):
        raise ValueError(f"account {name!r} is not one this hub created")
    subprocess.run([_tool("userdel"), "--remove", name], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
