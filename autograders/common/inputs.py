"""The files the grader and the hub read from people (the roster, the due dates, the overrides,
the variants records and key, the course's config, the grading status, capacity.json), read one
way: a broken file stops the command before anything is graded or changed, with one line saying
which file, which line, what is wrong and what to do (:class:`InputError`). Nothing here writes.

Broken forms each reader answers: unreadable (missing, a folder, no permission), not text (a NUL
byte, not UTF-8), a control character, empty, bad JSON, a CSV's wrong columns or a row with a
wrong number of fields.
"""

import csv
import json
import re
from pathlib import Path

# C0 controls but tab, newline and carriage return; DEL; C1 controls.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class InputError(ValueError):
    """A file a person wrote cannot be used: ``path``, ``line`` (or None), what is wrong, what to do."""

    def __init__(self, path, problem, todo, line=None):
        self.path, self.problem, self.todo, self.line = Path(path), problem, todo, line
        where = f"{path}, line {line}" if line else f"{path}"
        super().__init__(f"{where}: {problem}; {todo}" if todo else f"{where}: {problem}")


def read_text(path, todo, *, empty_ok=False, error=InputError):
    """The text of ``path`` (UTF-8, a leading BOM dropped), refused with ``error`` (an InputError)
    when it is not readable text with no control characters (or, unless ``empty_ok``, empty)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise error(path, "missing (no such file)", todo) from None
    except IsADirectoryError:
        raise error(path, "a folder, not a file", todo) from None
    except OSError as bad:
        raise error(path, f"cannot be read ({bad.strerror})", todo) from None
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise error(path, "not a text file (a NUL byte: binary data?)", todo, line)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        line = data[:bad.start].count(b"\n") + 1
        raise error(path, f"not UTF-8 text (byte 0x{data[bad.start]:02x})", todo, line) from None
    found = CONTROL.search(text)
    if found:
        line = text[:found.start()].count("\n") + 1
        raise error(path, f"a control character (U+{ord(found.group()):04X}) in the text", todo, line)
    if not empty_ok and not text.strip():
        raise error(path, "empty", todo)
    return text


def read_json(path, todo, *, error=InputError):
    """The JSON document at ``path`` (read as :func:`read_text` reads)."""
    text = read_text(path, todo, error=error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as bad:
        raise error(path, f"not valid JSON ({bad.msg}, column {bad.colno})", todo, bad.lineno) from None


def read_csv(path, columns, todo, *, extra_ok=True, error=InputError):
    """[(line number, {column: stripped value})] of the CSV at ``path``, whose header has every one of
    ``columns`` (others too, when ``extra_ok``). Blank lines are skipped; a row with a different
    number of fields than the header, or that the csv module cannot parse, is refused by its line."""
    text = read_text(path, todo, error=error)
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    try:
        header = [name.strip() for name in next(reader)]
        missing = [name for name in columns if name not in header]
        if missing or (not extra_ok and len(header) != len(columns)):
            raise error(path, f"the first line must be {','.join(columns)}, got {','.join(header)}", todo, 1)
        rows, line = [], reader.line_num
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) != len(header):
                    raise error(path, f"{len(row)} field(s), the header has {len(header)}", todo, line + 1)
                rows.append((line + 1, {name: cell.strip() for name, cell in zip(header, row)}))
            line = reader.line_num
    except csv.Error as bad:
        raise error(path, f"not valid CSV ({bad})", todo, reader.line_num) from None
    return rows
