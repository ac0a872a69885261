"""What students do to a submission's cells, put right before nbgrader's own checks fail it.

:class:`RestoreCellMetadata` gives every cell the assignment knows its nbgrader metadata back (edited,
renamed or emptied ``grade_id``s, a test flipped to "solution + grade"), :class:`RestoreMissingCells`
puts deleted test cells back where they belong and tolerates pasted copies, and
:func:`prepare_submission` (nbgrader's pre-convert hook) grades a renamed notebook, or one that is not
valid JSON, with a note at its top. :func:`autograders.grading.autograde.configure` puts them in the
course's autograde, and :class:`CheckCellMetadataOnce` in place of nbgrader's ``CheckCellMetadata``.
"""

import json
import os
from pathlib import Path
from unittest.mock import patch

from nbformat import NotebookNode
from nbgrader import utils as nbgrader_utils
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata, NbGraderPreprocessor, OverwriteCells


class _SchemaOnce(BaseMetadataValidator):
    """nbgrader's check of a cell's metadata alone (its version, then ``jsonschema.validate``, which checks the
    schema itself first: 4/5 of the time), once per distinct metadata that passed (nbgrader 0.9.6)."""

    passed = set()  # the metadata, as sorted JSON

    def validate_cell(self, cell):
        key = json.dumps(cell.metadata.get("nbgrader"), sort_keys=True, default=repr)
        if key not in self.passed:
            super().validate_cell(cell)
            if len(self.passed) < 100_000:
                self.passed.add(key)


class CheckCellMetadataOnce(CheckCellMetadata):
    """nbgrader 0.9.6's CheckCellMetadata with MetadataValidatorV3's own checks of each cell, its schema's once."""

    def preprocess(self, nb, resources):
        with patch("nbgrader.preprocessors.checkcellmetadata.MetadataValidator", _Validator):
            return super().preprocess(nb, resources)


class _Validator(MetadataValidator, _SchemaOnce):  # MetadataValidatorV3's super().validate_cell: _SchemaOnce's
    pass


class RestoreCellMetadata(NbGraderPreprocessor):
    """Give every cell the assignment grades, locks or asks an answer in the nbgrader metadata
    the gradebook has for it (:func:`restore_metadata`), before nbgrader's own steps: those
    fail the whole submission on edited metadata ("Inconsistent checksums", "the nbgrader
    metadata may be corrupted"). A note at the top of the notebook says what was restored."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            source_nb = gb.find_notebook(info["notebook"], info["assignment"])
            grades = {c.name: c.max_score for c in source_nb.grade_cells}
            solutions = {c.name for c in source_nb.solution_cells}
            tasks = {c.name: c.max_score for c in source_nb.task_cells}
            source = []
            for cell in source_nb.source_cells:
                meta = {"grade": cell.name in grades, "grade_id": cell.name, "locked": bool(cell.locked),
                        "schema_version": 3, "solution": cell.name in solutions, "task": cell.name in tasks}
                if cell.name in grades or cell.name in tasks:
                    meta["points"] = grades.get(cell.name, tasks.get(cell.name))
                source.append((cell.name, cell.cell_type, meta, cell.source or ""))
        changes = restore_metadata(nb.cells, source)
        for change in changes:
            self.log.warning("Restored the nbgrader metadata of a cell: %s", change)
        if changes:
            nb.cells.insert(0, NotebookNode(cell_type="markdown", metadata={}, source=METADATA_NOTE.format(
                changes="; ".join(changes)), id="mha-metadata-note"))
        return nb, resources

class RestoreMissingCells(OverwriteCells):
    """nbgrader's OverwriteCells, robust to what students do to cells: a deleted test
    cell is added back even when the cells around it were deleted too, and pasted
    copies of a cell do not fail the submission (nbgrader's own code raises in both
    cases and the whole submission is lost).

    nbgrader documents no hook for where a missing cell goes: this overrides
    ``add_missing_grade_cells`` / ``add_missing_task_cells`` and uses ``gradebook``,
    ``notebook_id``, ``assignment_id`` and ``missing_cell_transform`` as nbgrader 0.9.6's
    ``OverwriteCells.preprocess`` sets them (pyproject.toml pins nbgrader below 0.10). A
    preprocessor of our own before OverwriteCells would lose nbgrader's note in the added
    cell (OverwriteCells rewrites a locked cell's source) and copy its cell-making code."""

    def preprocess(self, nb, resources):
        # DeduplicateIds leaves ``nbgrader: {}`` on all but the last copy of a pasted
        # cell, which CheckCellMetadata then rejects as an old schema (the whole
        # submission fails): such a copy is a plain cell.
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", None) == {}:
                del cell.metadata["nbgrader"]
        return super().preprocess(nb, resources)

    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        order = [cell.name for cell in source_nb.source_cells]
        solutions = {cell.name for cell in source_nb.solution_cells}
        present = [nbgrader_utils.is_grade(c) or nbgrader_utils.is_solution(c) for c in nb.cells]
        ids = [c.metadata.nbgrader.get("grade_id") if p else None for c, p in zip(nb.cells, present)]
        for grade_cell in source_nb.grade_cells:
            if grade_cell.name in ids:
                continue
            self.log.warning("Missing grade cell %s: adding it back", grade_cell.name)
            cell = self.missing_cell_transform(
                source_nb.source_cells[order.index(grade_cell.name)], grade_cell.max_score,
                is_solution=grade_cell.name in solutions,
            )
            before = order[: order.index(grade_cell.name)]
            at = max((i + 1 for i, gid in enumerate(ids) if gid in before), default=0)
            nb.cells.insert(at, cell)
            ids.insert(at, grade_cell.name)
        return nb, resources

    def add_missing_task_cells(self, nb, resources):
        # nbgrader's own fails on a cell whose duplicated grade_id DeduplicateIds removed.
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        order = [cell.name for cell in source_nb.source_cells]
        present = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
        for task_cell in source_nb.task_cells:
            if task_cell.name not in present:
                source_cell = source_nb.source_cells[order.index(task_cell.name)]
                nb.cells.append(self.missing_cell_transform(source_cell, task_cell.max_score, is_task=True))
        return nb, resources


NOTE = "**Note from the grader:** "
METADATA_NOTE = NOTE + "the nbgrader metadata of some cells was edited; it was restored from the assignment ({changes})."


def _nbgrader_meta(cell):
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else None


def restore_metadata(cells, source):
    """Give every cell of ``cells`` that the assignment knows its nbgrader metadata from the
    assignment, in place; return what changed (one phrase per cell).

    ``source``: ``[(grade_id, cell_type, nbgrader metadata, source code)]`` in the assignment's
    order. A cell with nbgrader metadata whose grade_id the assignment does not know (renamed,
    emptied, removed) is taken for one of the assignment's cells missing from the submission: the
    one expected at its place (between the known cells around it), by cell type, kind and
    content when several are; with none, its nbgrader metadata goes (a plain cell: a test it held
    is put back from the assignment by ``RestoreMissingCells``)."""
    import difflib

    order = {gid: i for i, (gid, _, _, _) in enumerate(source)}
    entries = {gid: (kind, meta, code) for gid, kind, meta, code in source}
    changes, orphans, present = [], [], set()
    for index, cell in enumerate(cells):
        if "nbgrader" not in cell.get("metadata", {}):
            continue
        meta = _nbgrader_meta(cell)
        gid = meta.get("grade_id") if meta else None
        if gid in entries:
            present.add(gid)
            wanted = entries[gid][1]
            if {k: v for k, v in meta.items() if k != "checksum" and k != "cell_type"} != wanted:
                changes.append(f"`{gid}`: edited")
                cell.metadata["nbgrader"] = dict(wanted)
        elif meta is None or gid is not None or any(meta.get(k) for k in ("grade", "solution", "locked", "task")):
            orphans.append(index)  # (nbgrader metadata saying nothing is graded: a plain cell, left alone)
    missing = [gid for gid, _, _, _ in source if gid not in present]
    for index in orphans:
        cell = cells[index]
        before = [order[g] for g in (_grade_id_of(c) for c in cells[:index]) if g in order and g in present]
        after = [order[g] for g in (_grade_id_of(c) for c in cells[index + 1:]) if g in order and g in present]
        low, high = max(before, default=-1), min(after, default=len(source))
        candidates = [gid for gid in missing if low < order[gid] < high]
        meta = _nbgrader_meta(cell) or {}
        old = meta.get("grade_id")
        if not candidates:
            del cell.metadata["nbgrader"]
            changes.append(f"a cell marked `{old}` is not part of the assignment: graded as a plain cell")
            continue

        def fit(gid):
            kind, wanted, code = entries[gid]
            return (kind == cell.get("cell_type"), bool(wanted.get("solution")) == bool(meta.get("solution")),
                    difflib.SequenceMatcher(None, str(cell.get("source", "")), code).ratio())

        gid = max(candidates, key=fit)  # the first of equals: the assignment's order
        missing.remove(gid)
        present.add(gid)
        cell.metadata["nbgrader"] = dict(entries[gid][1])
        changes.append(f"`{gid}`: found by its place" + (f" (it was marked `{old}`)" if old else ""))
    return changes


def _grade_id_of(cell):
    meta = _nbgrader_meta(cell)
    return meta.get("grade_id") if meta else None
RENAMED_NOTE = NOTE + "this notebook was submitted as `{got}`; it was graded as `{expected}`, the name the assignment expects."
INVALID_NOTE = NOTE + "`{got}` is not a valid notebook ({error}); it was graded as an empty notebook. The file is kept as `{kept}`."


def prepare_submission(assignment=None, student=None, notebooks=None, **_):
    """nbgrader's pre-convert hook: make a broken submission gradable, with a note at its top.

    - A submission whose only notebook has another name than the assignment's only
      notebook (``level1_recognition (1).ipynb``) is graded as that notebook (nbgrader
      would skip it as unknown and fail the submission); the student's file stays.
    - A notebook that cannot be read (malformed JSON) is kept as ``<name>.invalid``
      and an empty notebook saying why is graded in its place (every test scores 0)
      instead of the whole submission failing without a word to the student.
    """
    import nbformat

    if not notebooks:
        return
    for name in list(notebooks):
        path = Path(name)
        try:
            nb = nbformat.read(str(path), as_version=4)
        except Exception as error:  # noqa: BLE001 (whatever is wrong with it, it is not a notebook)
            kept = path.with_name(path.name + ".invalid")
            os.replace(path, kept)
            reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
            nb = nbformat.v4.new_notebook()
            nb.cells.append(nbformat.v4.new_markdown_cell(INVALID_NOTE.format(got=path.name, error=reason, kept=kept.name)))
            nbformat.write(nb, str(path))
    if len(notebooks) != 1:
        return
    got = Path(notebooks[0])
    course = got.parents[3] if len(got.parents) > 3 else None
    expected = sorted((course / "source" / str(assignment)).glob("*.ipynb")) if course else []
    if len(expected) != 1 or expected[0].name == got.name:
        return
    target = got.with_name(expected[0].name)
    nb = nbformat.read(str(got), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(RENAMED_NOTE.format(got=got.name, expected=target.name)))
    nbformat.write(nb, str(target))
    notebooks[:] = [str(target)]
