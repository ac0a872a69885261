"""``variants/<assignment>.csv``: what each student was asked, written when grading.

One row per student and problem: the generation and the entry's numbers (JSON), so that the
instructor can read what each student saw and a later regrade can be compared with it.
"""

import csv
import json
from pathlib import Path

COLUMNS = ("student_id", "problem", "generation", "numbers")


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
    """{(student, problem): (generation, numbers)} of a file written by :func:`write`."""
    with open(path, newline="") as f:
        return {(row["student_id"], row["problem"]): (_generation(row["generation"]), json.loads(row["numbers"]))
                for row in csv.DictReader(f)}


def _generation(text):
    return int(text) if text.isdigit() else text
