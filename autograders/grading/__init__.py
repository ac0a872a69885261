"""Grading the class: intake of submissions (``intake``), grading jobs and their backends
(``grading``), gradebooks (``gradebooks``), the class report (``report``), the feedback pages
(``feedback_html``), and the isolation of students' code: the sandboxed launcher
(``sandbox``), its warm forking process (``zygote``) and the re-check (``recheck``)."""
