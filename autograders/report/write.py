"""The class report's two files: ``grades.csv`` (:func:`write_csv`) and ``report.html``
(:func:`write_report`, from ``templates/report.html.j2``), both from one :class:`~.results.Results`;
:func:`build` writes them for a course.

    python -m autograders report --course course --out course/reports
"""

import base64
import csv
import functools
from pathlib import Path

from .analysis import (
    OTHER, UNCONFIRMED, _items_alt, item_analysis, plot_items, plot_misconceptions, plot_scores, plot_success,
    prediction_summary,
)
from .results import read_results

TEMPLATES = Path(__file__).parent / "templates"  # report.html.j2


# --- grades.csv ----------------------------------------------------------------------


def write_csv(results, path):
    """One row per submission the intake or the gradebook knows of: student, assignment,
    status (graded, not graded, failed, refused), score, max_score, late_penalty, late_by, reason
    (why it failed or was refused), then one column per graded cell of every assignment
    (empty where not that assignment's)."""
    columns = [gid for ids in results.cells.values() for gid in ids]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "status", "score", "max_score", "late_penalty", "late_by", "reason",
                         *columns])
        for r in results.rows:
            cells = [_number(r["cells"][gid][0]) if gid in r["cells"] else "" for gid in columns]
            writer.writerow([_text(r["student"]), _text(r["assignment"]), r["status"], _number(r["score"]),
                             _number(r["max_score"]), _number(r["late_penalty"]), r.get("late_by", ""),
                             _text(r.get("reason", "")), *cells])
    return path


def _text(value):
    """A text cell a spreadsheet will not read as a formula (OWASP's CSV injection advice)."""
    value = str(value or "")
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _number(value):
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


@functools.lru_cache(maxsize=None)
def _template():
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.get_template("report.html.j2")


def write_report(results, path, course=None):
    """``report.html`` (``templates/report.html.j2``, autoescaped): summary per level, the three plots
    (embedded PNG), the misconceptions with the problems where they occurred, and the failed submissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts, where = results.misconception_counts()
    levels = []
    for name in results.cells:
        rows = [r for r in results.rows if r["assignment"] == name]
        graded = [r for r in rows if r["status"] == "graded"]
        mean = sum(r["score"] for r in graded) / len(graded) if graded else None
        levels.append({"name": name, "submissions": len(rows), "graded": len(graded),
                       "failed": sum(1 for s, a, _ in results.failed if a == name),
                       "mean": "" if mean is None else f"{mean:.2f}",
                       "max": _number(next((r["max_score"] for r in rows if r["max_score"] is not None), ""))})
    plots = [{"heading": heading, "alt": alt, "png": base64.b64encode(png).decode()} for heading, alt, png in (
        ("Score distribution per level", "score distribution per level", plot_scores(results)),
        ("Success rate per problem", "success rate per problem", plot_success(results)),
        ("Misconceptions", "misconceptions", plot_misconceptions(results)))]
    items = item_analysis(results)
    item_plot = {"alt": _items_alt(items), "png": base64.b64encode(plot_items(items)).decode()} if items else None
    for item in items:
        item["shares"] = [f"{100 * item[key]:.0f}%" for key in ("full", "partial", "none")]
    misconceptions = [{"name": name, "count": n, "where": where[name].most_common()} for name, n in counts.most_common()]
    late = [r for r in results.rows if r.get("late_by")]
    from .copying import copied

    page = _template().render(levels=levels, plots=plots, misconceptions=misconceptions, failed=results.failed,
                              copying=copied(course) if course else [],
                              no_feedback=results.no_feedback, late=late, items=items, item_plot=item_plot,
                              predictions=prediction_summary(results),
                              other=OTHER, unconfirmed=UNCONFIRMED)
    path.write_text(page, encoding="utf-8")
    return path


def build(course, out=None, db_url=None):
    """Write ``grades.csv`` and ``report.html`` into ``out`` (default ``<course>/reports``); return their paths."""
    course = Path(course).resolve()
    out = Path(out) if out else course / "reports"
    results = read_results(course, db_url)
    from ..variants import record

    for path in sorted((course / "variants").glob("*.csv")):
        record.read(path)  # a broken record stops the report before anything is written (an InputError)
    return write_csv(results, out / "grades.csv"), write_report(results, out / "report.html", course)
