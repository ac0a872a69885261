"""Instructor and author tools: ``python -m autograders COMMAND`` (or ``mha-workbook COMMAND``).

    clean [PATHS]             strip outputs and normalise metadata of source notebooks
    practice --out workbook   build the practice edition (never overwrites your changes)
    release --course course   create the nbgrader course and release every level
"""

import argparse
import sys
from pathlib import Path


def _clean(args):
    from .clean import clean_file

    paths = [p for arg in args.paths for p in (sorted(Path(arg).glob("*.ipynb")) if Path(arg).is_dir() else [Path(arg)])]
    changed = [p for p in paths if clean_file(p)]
    for p in changed:
        print(f"cleaned {p}")
    if args.check and changed:
        return 1
    return 0


def _practice(args):
    from .editions import build_practice

    build_practice(args.out, args.source)
    return 0


def _release(args):
    from .editions import build_release

    build_release(args.course, args.source, force=args.force)
    return 0


def main(argv=None):
    from .editions import SOURCE

    parser = argparse.ArgumentParser(
        prog="mha-workbook", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    clean = commands.add_parser("clean", help="strip outputs and normalise metadata of source notebooks")
    clean.add_argument("paths", nargs="*", default=["notebooks"])
    clean.add_argument("--check", action="store_true", help="exit 1 if any notebook needed cleaning")
    clean.set_defaults(run=_clean)

    practice = commands.add_parser("practice", help="build the practice edition (self-study)")
    practice.add_argument("--out", default="workbook", help="directory to build into (default: workbook)")
    practice.add_argument("--source", default=SOURCE, type=Path, help="source notebooks (default: notebooks/)")
    practice.set_defaults(run=_practice)

    release = commands.add_parser("release", help="create the nbgrader course and release every level")
    release.add_argument("--course", default="course", help="course directory (default: course)")
    release.add_argument("--source", default=SOURCE, type=Path, help="source notebooks (default: notebooks/)")
    release.add_argument("--force", action="store_true", help="release again assignments already released")
    release.set_defaults(run=_release)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
