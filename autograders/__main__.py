"""Instructor and author tools: ``python -m autograders COMMAND`` (or ``mha-workbook COMMAND``).

    clean [PATHS]             strip outputs and normalise metadata of source notebooks
    practice --out workbook   build the practice edition (never overwrites your changes)
    release --course course   create the nbgrader course and release every level
    course --course course    the same: the course directory, ready to grade
    grade --course course [--submissions DIR | --zips DIR] [--student S] [--assignment A]
          [--workers N] [--backend local|dask] [--scheduler ADDR] [--db URL] [--out DIR]
                              autograde every submission in parallel; gradebook, HTML
                              feedback (feedback/<student>/<assignment>/), grades.csv and
                              report.html (in --out, default <course>/reports)
    report --course course [--out DIR]
                              grades.csv and report.html from the gradebook as it is
    feedback --course course [--assignment A] [--student S] [--db URL]
                              write the HTML feedback again from the gradebook, e.g.
                              after manual grading (manual scores and comments shown)
    variants init --course course
                              turn per-student numbers on: the course key (variants.key, 0600)
    variants write --course course --assignment A --out DIR
                              each student's numbers, DIR/<student>/A.json (copied into their lab)
    answer-key [--out answer-key.html] [--course course --student S]
                              the answer key, one printable page for teachers (with --student,
                              that student's own numbers and right answers)
    student-wheel [--out dist]
                              the students' wheel: mha_core and autograders.student only, no answer
                              (what a graded class's students install)
    hub up --roster R [--instructor I] | hub stop | hub status
                              host the class on this server (JupyterHub, the exchange)
"""

import argparse
import sys
import time
from pathlib import Path


def _clean(args):
    from .editions.clean import clean_file

    paths = [p for arg in args.paths for p in (sorted(Path(arg).glob("*.ipynb")) if Path(arg).is_dir() else [Path(arg)])]
    changed = [p for p in paths if clean_file(p)]
    for p in changed:
        print(f"cleaned {p}")
    if args.check and changed:
        return 1
    return 0


def _practice(args):
    from .editions.editions import build_practice

    build_practice(args.out, args.source)
    return 0


def _release(args):
    from .editions.editions import build_release, source_notebooks

    if not source_notebooks(args.source):
        print(f"{args.source}: no source notebooks there (--source names the folder of the levels)", file=sys.stderr)
        return 2
    build_release(args.course, args.source, force=args.force)
    return 0


def _grade(args):
    from . import intake
    from .grading import grading
    from .report import build

    course = Path(args.course)
    if not (course / "nbgrader_config.py").exists():
        print(f"{course} is not a course directory: run `python -m autograders course --course {course}` first",
              file=sys.stderr)
        return 2
    for given in (args.zips, args.submissions):
        if given and not Path(given).is_dir():
            print(f"{given}: no such folder", file=sys.stderr)
            return 2
    pairs, refused = None, None
    if args.zips:
        if args.assignment and len(args.assignment) > 1:
            print("--zips takes one --assignment (or a folder per assignment)", file=sys.stderr)
            return 2
        try:
            taken = intake.collect_zips(course, args.zips, args.assignment[0] if args.assignment else None,
                                        regexp=args.zip_regexp)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        pairs, refused = taken.collected, taken.refused
        if args.student:
            pairs = [(s, a) for s, a in pairs if s in args.student]
            refused = [(s, a, r) for s, a, r in refused if s in args.student]
    elif args.submissions:
        pairs = intake.take_submissions(course, args.submissions, args.assignment, args.student)
        print(f"took {len(pairs)} submissions from {args.submissions}")
    from .grading.sandbox import why_not_isolated, why_not_unisolated
    from .variants import VariantError

    why = why_not_isolated()
    if why and not args.unisolated:  # never strangers' code in the open unless the teacher says so
        print(f"grade: refused: bubblewrap cannot isolate students' code here ({why}); install it, or grade "
              "trusted work with --unisolated", file=sys.stderr)
        return 2
    if args.unisolated:
        if why_not_unisolated():
            print(f"grade: refused: {why_not_unisolated()}", file=sys.stderr)
            return 2
        print("warning: --unisolated: students' code runs without bubblewrap: it can read what the machine's "
              "users can read, write where they can, reach the network and leave processes running; as root, "
              "as a throwaway user (never root). Trusted work only: see docs/grading.md, 'What the sandbox "
              "isolates'", file=sys.stderr)
    try:
        summary = grading.grade(
            course, assignments=args.assignment, students=args.student, workers=args.workers, backend=args.backend,
            scheduler=args.scheduler, db_url=args.db, progress=not args.quiet, feedback=not args.no_feedback,
            new_only=args.new_only, pairs=pairs, recheck=not args.no_recheck, refused=refused,
            unisolated=args.unisolated,
        )
    except VariantError as error:
        print(f"variants: {error}", file=sys.stderr)
        return 2
    for student, assignment, reason in summary.failed:
        print(f"FAILED {student or '?'}/{assignment}: {reason}")
    for student, assignment, grade_id, old, new, _max, message in summary.rechecked:
        change = f"{old:g} -> {new:g} of {_max:g}: " if old is not None else ""
        print(f"re-checked {student}/{assignment} {grade_id}: {change}{message}")
    for student, assignment, reason in summary.feedback_failed:
        print(f"NO FEEDBACK {student}/{assignment}: its feedback page says it is unavailable ({reason})")
    print(summary.line())
    if not args.no_report:
        csv_path, html_path = build(course, args.out, args.db)
        print(f"grades: {csv_path}\nreport: {html_path}\nfeedback: {course / 'feedback'}/<student>/<assignment>/")
    return 0


def _report(args):
    from .report import build

    csv_path, html_path = build(args.course, args.out, args.db)
    print(f"grades: {csv_path}\nreport: {html_path}")
    return 0


def _feedback(args):
    from .grading.feedback_html import regenerate

    course = Path(args.course)
    if not (course / "nbgrader_config.py").exists():
        print(f"{course} is not a course directory", file=sys.stderr)
        return 2
    start = time.perf_counter()
    written, failed = regenerate(course, args.assignment, args.student, args.db, progress=not args.quiet)
    if not written and not failed:
        print("no autograded submission in the gradebook matches: nothing to do", file=sys.stderr)
        return 2
    for student, assignment, reason in failed:
        print(f"FAILED {student}/{assignment}: {reason}")
    print(f"feedback written {len(written)}, failed {len(failed)}, in {time.perf_counter() - start:.1f} s: "
          f"{course / 'feedback'}/<student>/<assignment>/")
    return 0


def _variants(args):
    from .grading.gradebooks import course_db_url, course_config
    from .variants import VariantError
    from .variants import course as variants

    course = Path(args.course)
    if not (course / "nbgrader_config.py").exists():
        print(f"{course} is not a course directory", file=sys.stderr)
        return 2
    if args.action == "init":
        print(f"course key: {variants.init(course)} (readable by you only; keep it out of any repository)")
        return 0
    if not args.assignment:
        print("variants write needs --assignment", file=sys.stderr)
        return 2
    from nbgrader.api import Gradebook

    db_url, course_id = course_db_url(course, course_config(course))
    with Gradebook(args.db or db_url, course_id) as gb:
        students = [s.id for s in gb.students]
    try:
        paths = variants.write_files(course, course_id, args.assignment, students, args.out)
    except VariantError as error:
        print(f"variants: {error}", file=sys.stderr)
        return 2
    print(f"wrote {len(paths)} files: {args.out}/<student>/{args.assignment}.json")
    return 0


def _student_wheel(args):
    from .editions import student_wheel

    try:
        path = student_wheel.build(args.out)
    except RuntimeError as error:
        print(f"student-wheel: {error}", file=sys.stderr)
        return 2
    print(f"the students' wheel: {path} (mha_core and autograders.student: no answer, no check)")
    return 0


def _answer_key(args):
    from .editions import answer_key

    if args.student and not (Path(args.course) / "nbgrader_config.py").exists():
        print(f"--student needs --course: {args.course} is not a course directory", file=sys.stderr)
        return 2
    try:
        path = answer_key.write(args.out, args.source, args.course, args.student, args.db)
    except ValueError as error:
        print(f"answer-key: {error}", file=sys.stderr)
        return 2
    whose = f"{args.student}'s own numbers" if args.student else "the sheet's numbers"
    print(f"answer key ({whose}): {path} (for teachers only; print it from a browser)")
    return 0


def build_parser():
    """The command line's parser (every subcommand and option; the docs' commands are checked against it)."""
    from .editions.editions import SOURCE

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

    course = commands.add_parser("course", help="create the nbgrader course (the five levels as assignments), released")
    course.add_argument("--course", default="course", help="course directory (default: course)")
    course.add_argument("--source", default=SOURCE, type=Path, help="source notebooks (default: notebooks/)")
    course.add_argument("--force", action="store_true", help="release again assignments already released")
    course.set_defaults(run=_release)

    grade = commands.add_parser("grade", help="autograde submissions in parallel; feedback, grades.csv, report")
    grade.add_argument("--course", default="course", help="course directory (default: course)")
    given = grade.add_mutually_exclusive_group()
    given.add_argument("--submissions", help="a folder <student>/<assignment>/ to take in (default: <course>/submitted)")
    given.add_argument("--zips", help="an LMS's files: <assignment>/*.zip, or *.zip with --assignment "
                                      "(each checked: a bad zip is refused alone, with its reason)")
    grade.add_argument("--zip-regexp", help="FileNameCollectorPlugin.named_regexp for --zips "
                                            "(default: the course's, else one <student>.zip per student)")
    grade.add_argument("--assignment", action="append", help="only this assignment (repeatable)")
    grade.add_argument("--student", action="append", help="only this student (repeatable)")
    grade.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    grade.add_argument("--backend", choices=["local", "dask", "serial"], default="local",
                       help="local processes (default), a Dask cluster (--scheduler), or serial")
    grade.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://10.0.0.5:8786")
    grade.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's gradebook.db)")
    grade.add_argument("--out", help="where grades.csv and report.html go (default: <course>/reports)")
    grade.add_argument("--new-only", action="store_true", help="skip submissions autograded since they were submitted")
    grade.add_argument("--no-feedback", action="store_true", help="do not write the HTML feedback")
    grade.add_argument("--no-report", action="store_true", help="do not write grades.csv and report.html")
    grade.add_argument("--no-recheck", action="store_true",
                       help="trust nbgrader's scores: skip the re-check in a clean process (faster; not for untrusted work)")
    grade.add_argument("--unisolated", action="store_true",
                       help="grade without bubblewrap where it cannot run (trusted work only: students' code reads "
                            "and writes what the machine's users can; as root it runs as a throwaway user)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.set_defaults(run=_grade)

    report = commands.add_parser("report", help="grades.csv and report.html (plots) from the gradebook")
    report.add_argument("--course", default="course", help="course directory (default: course)")
    report.add_argument("--out", help="output folder (default: <course>/reports)")
    report.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's gradebook.db)")
    report.set_defaults(run=_report)

    feedback = commands.add_parser("feedback", help="HTML feedback again from the gradebook (after manual grading)")
    feedback.add_argument("--course", default="course", help="course directory (default: course)")
    feedback.add_argument("--assignment", action="append", help="only this assignment (repeatable)")
    feedback.add_argument("--student", action="append", help="only this student (repeatable)")
    feedback.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's gradebook.db)")
    feedback.add_argument("--quiet", action="store_true", help="no progress bar")
    feedback.set_defaults(run=_feedback)

    varied = commands.add_parser("variants", help="per-student numbers: init (the course key) or write (students' files)")
    varied.add_argument("action", choices=["init", "write"])
    varied.add_argument("--course", default="course", help="course directory (default: course)")
    varied.add_argument("--assignment", help="write: the assignment whose numbers to write")
    varied.add_argument("--out", default="variants-out", help="write: folder of <student>/<assignment>.json")
    varied.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's gradebook.db)")
    varied.set_defaults(run=_variants)

    key = commands.add_parser("answer-key", help="the answer key: one printable HTML page, for teachers only")
    key.add_argument("--out", default="answer-key.html", help="the page to write (default: answer-key.html)")
    key.add_argument("--source", default=SOURCE, type=Path, help="source notebooks (default: notebooks/)")
    key.add_argument("--course", default="course", help="with --student: the course (default: course)")
    key.add_argument("--student", help="this student's own numbers and answers (a course with variants)")
    key.add_argument("--db", help="gradebook SQLAlchemy URL (default: the course's gradebook.db)")
    key.set_defaults(run=_answer_key)

    wheel = commands.add_parser("student-wheel", help="the students' wheel: the library and autograders.student, no answer")
    wheel.add_argument("--out", default="dist", help="the folder to write it in (default: dist)")
    wheel.set_defaults(run=_student_wheel)

    from .hub.cli import add_commands

    add_commands(commands)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from .common.inputs import InputError

    try:
        return args.run(args)
    except InputError as error:  # a file a person wrote is broken: one line, nothing changed
        print(f"{error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
