"""Grading the class, in the order a submission goes through it: intake (``intake``), the
command and its summary (``grading``), a job each (``jobs``: typed Job and JobResult) run on a
backend (``backends``), nbgrader's autograde as the course runs it (``autograde``, ``rubrics``),
the isolation of students' code (the launcher ``sandbox``, which runs it in bubblewrap, the
kernel's output cap ``output_cap`` and its provisioner ``provisioner``), the hand-over of the
answers after the last cell (``handover``; ``student_side``; their wire ``protocol``) to the checks
(``recheck``; no test cell runs in the student's kernel) and the test cells' outputs their verdicts
write, which nbgrader scores (``verdicts``), the gradebooks (``gradebooks``), the feedback pages (``feedback_html``)
and the class report (``report``). The settings, the hidden-test regions and the rubric format
it shares with the editions are in :mod:`autograders.common`."""

import sys

# jsonschema, which nbformat imports, checks the "iri" formats with rfc3987-syntax when it is
# installed (here it is, for jupyter-events), building 38 Lark grammars at import: about 1.5 s
# of CPU in every grading process (the workers, their kernels). No schema these processes
# validate (nbformat's, nbgrader's) uses a format: they go without it.
sys.modules.setdefault("rfc3987_syntax", None)
