"""Grading the class: a submission's path, top to bottom, after the intake (:mod:`autograders.intake`) and
before the class report (:mod:`autograders.report`). A module imports only modules listed below it:

- the command and its summary (``grading``), the backends the jobs run on (``backends``), a job each
  (``jobs``: typed Job and JobResult);
- nbgrader's autograde as the course runs it (``autograde``; ``repairs``: what students did to the
  assignment's cells, put right; ``rubrics``);
- the isolated run: the kernel's provisioner (``provisioner``), the library the kernel sees
  (``library_copy``), what a cold kernel would redo, done once (``prepared``), its sandbox's folder and
  throwaway user (``sandbox_folder``) and the launcher that runs it in bubblewrap (``sandbox``); the cap on
  what a cell prints is the kernel's own, :mod:`autograders.student.output_cap`;
- which cells run, and the hand-over of the answers after the last one (``handover``; the student's side
  of it and the wire: :mod:`autograders.student.serve`, :mod:`autograders.student.protocol`);
- the checks, outside the student's process, and their verdicts as the test cells' outputs, which
  nbgrader scores (``checker``; no test cell runs in the student's kernel);
- the feedback pages (``feedback_html``; ``neutralise``: no active content reaches a browser), the
  gradebooks (``gradebooks``), the progress bar and a failed job's short reason (``progress``).

Beside the command, ``standalone`` grades one notebook on its own, as ``grade`` does (the tests use it).
The limits a submission is graded under are :mod:`autograders.student.settings`; the hidden-test regions
and the rubric format grading shares with the editions are in :mod:`autograders.common`."""

import sys

# jsonschema, which nbformat imports, checks the "iri" formats with rfc3987-syntax when it is
# installed (here it is, for jupyter-events), building 38 Lark grammars at import: about 1.5 s
# of CPU in every grading process (the workers, their kernels). No schema these processes
# validate (nbformat's, nbgrader's) uses a format: they go without it.
sys.modules.setdefault("rfc3987_syntax", None)
