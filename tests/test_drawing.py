"""mha_core's drawing switch (``mha_core.drawing``, ``MHA_CORE_DRAW``), and the grading side
that turns it off wherever a notebook is executed headless. mha_core reads no nbgrader variable."""

from pathlib import Path

import numpy as np
import pytest

from autograders.student.sentences import HEAD_VIEW_SENTENCES
import mha_core

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def unset(monkeypatch):
    """No switch in this process, no MHA_CORE_DRAW: the defaults."""
    monkeypatch.setattr(mha_core, "_drawing", None)
    monkeypatch.delenv("MHA_CORE_DRAW", raising=False)
    return monkeypatch


def test_drawing_by_default_and_off_with_the_environment_variable(unset):
    assert mha_core.drawing() is True
    unset.setenv("MHA_CORE_DRAW", "0")
    assert mha_core.drawing() is False
    unset.setenv("MHA_CORE_DRAW", "1")
    assert mha_core.drawing() is True


def test_the_switch_wins_over_the_environment(unset):
    unset.setenv("MHA_CORE_DRAW", "0")
    assert mha_core.drawing(True) is True and mha_core.drawing() is True
    unset.delenv("MHA_CORE_DRAW")
    assert mha_core.drawing(False) is False and mha_core.plots.headless()
    with pytest.raises(ValueError, match="on must be"):
        mha_core.drawing("no")


def test_nbgrader_execution_alone_no_longer_matters(unset):
    unset.setenv("NBGRADER_EXECUTION", "autograde")
    figure = mha_core.plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, 1)
    assert figure.axes, "drawn: only the switch turns drawing off"
    explorer = mha_core.widgets.head_view_explorer(HEAD_VIEW_SENTENCES)
    assert explorer.image.value and explorer.canvas.builds == 1
    unset.setenv("MHA_CORE_DRAW", "0")
    assert not mha_core.plots.head_view(list("ab"), np.ones((1, 2, 2)) / 2, 1).axes


def test_mha_core_reads_no_nbgrader_variable():
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "mha_core").glob("*.py"))
    assert "NBGRADER" not in sources


# --- the grading side: headless kernels -------------------------------------------------------------


def test_the_headless_kernel_arguments_switch_drawing_off_and_bind_no_name(unset):
    from ipykernel.kernelapp import IPKernelApp

    from autograders.editions.editions import HEADLESS_KERNEL_ARGUMENTS

    app = IPKernelApp()
    app.parse_command_line(HEADLESS_KERNEL_ARGUMENTS)
    namespace = {}
    for line in app.exec_lines:  # as the kernel runs them before the first cell
        exec(line, namespace)  # noqa: S102 (the project's own line)
    assert mha_core.drawing() is False
    assert [name for name in namespace if name != "__builtins__"] == []


@pytest.mark.parametrize("where", ["course", "lab"])
def test_autograde_and_validate_start_headless_kernels(where, tmp_path, monkeypatch):
    """The course's config (autograde, the instructor's validate) and the students' lab's
    (its Validate button) give nbgrader's Execute the headless kernel arguments."""
    from nbgrader.validator import Validator
    from traitlets.config.loader import PyFileConfigLoader

    trait = Validator.class_traits()["preprocessors"]  # the lab's config changes Validate's steps: restored after
    monkeypatch.setattr(trait, "default_args", trait.default_args)

    from autograders.editions.editions import HEADLESS_KERNEL_ARGUMENTS, write_config

    path = write_config(tmp_path) if where == "course" else ROOT / "lab" / "nbgrader_config.py"
    config = PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
    assert list(config.Execute.extra_arguments) == HEADLESS_KERNEL_ARGUMENTS


def test_a_grading_job_runs_with_drawing_off_and_leaves_the_environment_as_it_was(monkeypatch):
    import os

    from autograders.grading import jobs

    monkeypatch.delenv("MHA_CORE_DRAW", raising=False)
    seen = []
    monkeypatch.setattr(jobs, "_run_job", lambda job, root, result: seen.append(os.environ.get("MHA_CORE_DRAW")))
    jobs.run_job(jobs.Job("s", "a"))
    assert seen == ["0"] and "MHA_CORE_DRAW" not in os.environ
