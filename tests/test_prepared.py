"""What a sandboxed kernel no longer redoes at each start (autograders.grading.prepared, mha_core.explore's
lazy names): matplotlib's font list, built once and copied into each sandbox, and the explorers a
prediction moment does not need."""

import os
import subprocess
import sys
import textwrap

from autograders.student.settings import DEFAULT
from autograders.grading import prepared, sandbox_folder


def test_a_prediction_moment_imports_no_explorer_and_no_figure(kernels):
    """predict_first (every notebook calls it while graded) imports the moment's widget alone; the explorers
    and matplotlib's figures come when a view is opened, and mha_core.widgets still names them all."""
    code = textwrap.dedent("""
        import sys
        from autograders.student.moments import predict_first
        predict_first("predict_1_1_d_k_h24", None)
        print(sorted(m for m in ("matplotlib.figure", "mha_core.explore.canvas", "mha_core.explore.shapes") if m in sys.modules))
        import mha_core.widgets as w
        print(all(getattr(w, name) is not None for name in w.__all__), "matplotlib.figure" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MHA_CORE_DRAW": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["[]", "True True"]


def test_each_sandbox_gets_its_own_copy_of_the_font_list_and_matplotlib_keeps_it(kernels):
    fonts = prepared.font_list(DEFAULT)
    assert fonts is not None and list(fonts.glob(prepared.FONT_LIST))
    boxes = [sandbox_folder.Sandbox(DEFAULT, fonts=fonts) for _ in range(2)]
    try:
        copies = [next((box.work / ".matplotlib").glob(prepared.FONT_LIST)) for box in boxes]
        before = copies[0].read_bytes()
        code = ("import os; d = os.environ['MPLCONFIGDIR']; p = os.path.join(d, next(q for q in os.listdir(d) "
                "if q.startswith('fontlist'))); t = os.stat(p).st_mtime_ns; import matplotlib.font_manager as f; "
                "print(len(f.fontManager.ttflist) > 0, os.stat(p).st_mtime_ns == t); open(p, 'w').write('spoiled')")
        done = subprocess.run(boxes[0].command([sys.executable, "-c", code]), env=boxes[0].env(), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "True True", done.stderr[-2000:]  # read, not rebuilt
        assert copies[1].read_bytes() == before  # the other sandbox's copy, and the original, untouched
        assert next(fonts.glob(prepared.FONT_LIST)).read_bytes() == before
        if boxes[0].uid is not None:
            assert copies[0].stat().st_uid == boxes[0].uid  # the sandbox's user may use (and spoil) its own copy
    finally:
        for box in boxes:
            box.close()
