"""Instructor and author tools: ``python -m autograders COMMAND`` (or ``mha-workbook COMMAND``)."""

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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mha-workbook", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    clean = commands.add_parser("clean", help="strip outputs and normalise metadata of source notebooks")
    clean.add_argument("paths", nargs="*", default=["notebooks"])
    clean.add_argument("--check", action="store_true", help="exit 1 if any notebook needed cleaning")
    clean.set_defaults(run=_clean)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
