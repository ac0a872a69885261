"""``variants/<assignment>.csv``: what each student was asked, written when grading.

One row per student and problem: the generation and the entry's numbers (JSON), so that the
instructor can read what each student saw and a later regrade can be compared with it.
"""

import csv
import json
from pathlib import Path

from ..common.inputs import read_csv
from .choice import VariantInputError

COLUMNS = ("student_id", "problem", "generation", "numbers")
TODO = "restore it from a backup, or remove it: the next `mha-workbook grade` writes it again from the course key"


def write(folder, assignment, rows):
    """Write ``rows`` ((student, problem, generation, numbers dict), ...) sorted; return the path."""
    path = Path(folder, f"{assignment}.csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for student, problem, generation, numbers in sorted(rows, key=lambda row: (row[0], row[1])):
            writer.writerow([student, problem, generation, json.dumps(numbers, sort_keys=True)])
    return path


def read(path):
    """{(student, problem): (generation, numbers)} of a file written by :func:`write`; a
    VariantInputError naming the line when it is broken."""
    found = {}
    for line, row in read_csv(path, COLUMNS, TODO, error=VariantInputError):
        if not row["student_id"] or not row["problem"]:
            raise VariantInputError(path, "a row without a student_id or a problem", TODO, line)
        try:
            numbers = json.loads(row["numbers"])
        except json.JSONDecodeError as error:
            raise VariantInputError(path, f"the numbers are not valid JSON ({error.msg})", TODO, line) from None
        if not isinstance(numbers, dict):
            raise VariantInputError(path, "the numbers are not a JSON object ({\"name\": value, ...})", TODO, line)
        found[row["student_id"], row["problem"]] = (_generation(row["generation"]), numbers)
    return found


def _generation(text):
    return int(text) if text.isdigit() else text
