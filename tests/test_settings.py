"""The limits of grading, in one place (autograders/common/settings.py): read once from the
course's nbgrader_config.py, and what they say is what nbgrader's kernel and the re-check enforce."""

import dataclasses
import time
import sys
from pathlib import Path

import nbformat
import pytest

from autograders.editions import editions
from autograders.grading import standalone
from autograders.student.settings import CONFIG_NAMES, DEFAULT, Settings

ROOT = Path(__file__).resolve().parent.parent
LEVEL1 = ROOT / "notebooks" / "level1_recognition.ipynb"
CHANGED = {"cell_timeout": 3, "notebook_timeout": 600, "memory": 1024**3, "file_size": 2 * 1024**2, "processes": 64,
           "open_files": 256, "output_limit": 3000, "unisolated": True, "disk": 99 * 1024**2, "max_restarts": 2}


def _course(tmp_path, **changes):
    """A course directory whose nbgrader_config.py (as ``editions`` writes it) sets ``changes``, by their config names."""
    editions.write_config(tmp_path)
    lines = [f"c.Execute.timeout = {changes.pop('cell_timeout')}"] if "cell_timeout" in changes else []
    lines += [f"c.SandboxExecute.{CONFIG_NAMES[k]} = {v!r}" for k, v in changes.items()]
    with open(tmp_path / "nbgrader_config.py", "a") as config:
        config.write("\n" + "\n".join(lines) + "\n")
    return tmp_path


def _config(course):
    from autograders.grading.gradebooks import course_config

    return course_config(course)


def test_defaults_are_defined_once_and_a_course_without_changes_keeps_them(tmp_path):
    course = _course(tmp_path)
    settings = Settings.from_config(_config(course), course=course)
    assert dataclasses.replace(settings, hide=()) == dataclasses.replace(DEFAULT, hide=())
    assert str(course.resolve()) in settings.hide  # the course itself is hidden from the kernel
    assert editions.CELL_TIMEOUT == DEFAULT.cell_timeout  # the course config's timeout is the same number


def test_every_setting_a_course_changes_is_read(tmp_path):
    course = _course(tmp_path, **CHANGED)
    for settings in (Settings.from_config(_config(course), course=course), Settings.of_course(course / "x" / "y.ipynb")):
        assert {k: getattr(settings, k) for k in CHANGED} == CHANGED


def test_the_executor_and_the_recheck_read_the_same_settings(tmp_path):
    from autograders.grading.autograde import SandboxExecute

    course = _course(tmp_path, **CHANGED)
    config = _config(course)
    assert SandboxExecute(config=config).settings == Settings.from_config(config, course=course)


def test_settings_cross_as_plain_data():
    settings = Settings(**CHANGED, hide=("/x", "/y"))
    assert Settings.from_dict(settings.as_dict()) == settings


def _notebook(*sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_a_course_limits_reach_nbgrader_s_kernel(tmp_path, kernels):
    """The course's output limit and cell timeout, changed in its nbgrader_config.py, are what the kernel enforces."""
    from autograders.grading.autograde import SandboxExecute

    limit = 3000
    course = _course(tmp_path, cell_timeout=2, output_limit=limit)
    executor = SandboxExecute(config=_config(course))
    nb = _notebook("x = 1", "print('y' * 2500)", f"print('z' * {limit + 500})\nx = 2", "import time\ntime.sleep(8)\nx = 3",
                   "print('x is', x)")
    nb, _ = executor.preprocess(nb, {"metadata": {"path": str(course)}})
    texts = [[o.get("text", "") + str(o.get("ename", "")) + str(o.get("evalue", "")) for o in cell.outputs] for cell in nb.cells]
    assert texts[1] == ["y" * 2500 + "\n"]  # under the limit: all of it
    printed = "".join(texts[2])
    assert f"more than {limit} characters" in printed and "OutputLimitExceeded" in printed
    assert printed.count("z") == limit  # exactly the limit, then the cell was stopped
    assert "timeout" in "".join(texts[3]) and "2 s" in "".join(texts[3])
    assert texts[4] == ["x is 1\n"]  # neither x = 2 (stopped) nor x = 3 (interrupted) ran


def test_a_course_limits_reach_the_recheck(tmp_path, kernels):
    """The same changes, read from the course's config for a notebook graded on its own: its kernel stops
    a cell at the course's output limit and another at its cell timeout, each costing only itself."""
    course = _course(tmp_path, cell_timeout=2, output_limit=3000)
    nb = nbformat.read(str(LEVEL1), as_version=4)
    answers = {"q1_1_d_k": "print('z' * 3500)\nd_k = 768 // 12",  # under the default limit, over the course's
               "q1_2_why": "import time\ntime.sleep(6)\nwhy = 'B'"}  # under the default timeout, over the course's
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    path = course / "autograded" / "student" / "level1_recognition" / "level1_recognition.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    start = time.monotonic()
    results = standalone.recheck(LEVEL1, path)
    assert time.monotonic() - start < 90
    assert {gid: r.score for gid, r in results.items()} == {
        "q1_1_head_dim_test": 2.0, "q1_1_d_k_test": 0.0, "q1_2_output_shape_test": 1.0, "q1_2_why_test": 0.0}
    assert "`q1_1_d_k` printed more than 3000 characters" in results["q1_1_d_k_test"].message
    assert "`q1_2_why` ran past the 2 s limit" in results["q1_2_why_test"].message


def test_the_settings_reach_the_launcher_as_one_json_argument(tmp_path):
    """The sandbox's launcher gets the settings as one JSON argument (read back whole), not as
    options parsed one by one: what the course set arrives as the same Settings."""
    from autograders.grading import sandbox, sandbox_folder

    settings = Settings(memory=5 * 1024**2, file_size=7, processes=9, open_files=11, hide=(str(tmp_path),),
                        unisolated=True, output_limit=123)
    box = sandbox_folder.Sandbox(settings)
    try:
        command = box.command(["true"], own=[str(box.work / "f")])
        assert command[:4] == [sys.executable, "-I", "-S", sandbox.__file__] and command[5:] == ["--", "true"]
        launch, inner = sandbox.parse(command[4:])
        assert inner == ["true"] and launch.settings == settings
        assert (launch.workdir, launch.keep, launch.uid, launch.own) == (str(box.work), str(box.root), box.uid,
                                                                         [str(box.work / "f")])
    finally:
        box.close()
    for bad in (["--memory=5", "--", "true"], ['{"workdir": "/w", "memory": 5}', "--", "true"],
                ['{"settings": {}}', "--", "true"], ['{"workdir": "/w"}', "true"], ['{"workdir": "/w"}', "--"]):
        with pytest.raises(SystemExit):
            sandbox.parse(bad)
