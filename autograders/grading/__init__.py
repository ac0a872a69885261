"""Grading the class: intake of submissions (``intake``), grading jobs and their backends
(``grading``), gradebooks (``gradebooks``), the class report (``report``), the feedback pages
(``feedback_html``), and the isolation of students' code: the sandboxed launcher
(``sandbox``), its warm forking process (``zygote``) and the re-check (``recheck``)."""

import sys

# jsonschema, which nbformat imports, checks the "iri" formats with rfc3987-syntax when it is
# installed (here it is, for jupyter-events), building 38 Lark grammars at import: about 1.5 s
# of CPU in every grading process (the workers, their zygotes). No schema these processes
# validate (nbformat's, nbgrader's) uses a format: they go without it.
sys.modules.setdefault("rfc3987_syntax", None)
