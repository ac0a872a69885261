"""What a new student stumbled on, each checked where it could come back: the light install of
`make lab`, a rebuild that writes nothing when the workbook did not change, no Assignment List on
a student's own machine, every level's last cell its next step, the optional problems named alike
in the README and START.md, a rubric of one point in the singular."""

import json
import os
import re
import subprocess
from pathlib import Path

import nbformat

from autograders.editions import editions
from tests.conftest import NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]


def test_make_lab_installs_the_workbook_without_any_extra(tmp_path):
    """On a fresh machine `make lab` creates the venv and installs `-e .` alone: the tests, the hub,
    Dask and the demo come with the commands that need them."""
    dry = subprocess.run(["make", "-n", "lab", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    installs = [line for line in dry.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all(line.rstrip().endswith("pip install -e .") for line in installs), installs
    everything = subprocess.run(["make", "-n", "test", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout
    assert "pip install -e '.[test,dask,demo,hub]'" in everything
    demo = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    assert "pip install -e '.[demo]'" in demo and "[test" not in demo


def tiny_source(folder, note=""):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# Level 9\n\nA tiny level.{note}"),
        nbformat.v4.new_code_cell("x = None  # a number\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION",
                                  metadata={"nbgrader": {"solution": True, "grade": False, "locked": False,
                                                         "grade_id": "q9_1_x", "schema_version": 3}}),
    ]
    nbformat.write(nb, str(folder / "level9_tiny.ipynb"))
    return folder


def test_a_rebuild_writes_nothing_when_the_workbook_did_not_change(tmp_path, capsys):
    """The student answers, restarts `make lab` twice: no `.new` notebook, one line saying why."""
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    editions.build_practice(out, source)
    level = out / "level9_tiny.ipynb"
    nb = nbformat.read(str(level), as_version=4)
    nb.cells[1].source = "x = 2"
    nbformat.write(nb, str(level))
    work = level.read_bytes()
    capsys.readouterr()
    for _ in range(2):
        editions.build_practice(out, source)
        said = capsys.readouterr().out.splitlines()
        assert sorted(p.name for p in out.glob("*.new.*")) == []
        assert level.read_bytes() == work
        assert len(said) == 1 and "up to date, nothing written" in said[0], said
    # The workbook changes: now its new edition is written beside the student's, in one line saying why.
    tiny_source(tmp_path / "src", note=" Revised.")
    editions.build_practice(out, source)
    said = capsys.readouterr().out.splitlines()
    beside = out / "level9_tiny.new.ipynb"
    assert "Revised." in beside.read_text() and level.read_bytes() == work
    assert [line for line in said if str(beside) in line] == [
        f"kept {level} (you changed it); the workbook changed since it was built: its new edition is {beside}"]
    # And again, unchanged: still one .new, nothing said about it.
    editions.build_practice(out, source)
    assert sorted(p.name for p in out.glob("*.new.*")) == [beside.name]
    assert "up to date" in capsys.readouterr().out


def test_a_student_s_own_lab_hides_the_assignment_list_and_a_hosted_one_keeps_it(monkeypatch):
    """`make lab` reads lab/local/ too (JUPYTER_CONFIG_PATH): there nbgrader's Assignment List and its menu,
    which said "Error fetching courses!" without an exchange, are off; Validate stays. The hub's students'
    Lab (lab/ alone) keeps them."""
    from jupyterlab_server.config import get_page_config

    makefile = (ROOT / "Makefile").read_text()
    assert 'JUPYTER_CONFIG_PATH="$(CURDIR)/lab/local"' in makefile.split("LAB_ENV :=", 1)[1].split("\n\n", 1)[0]
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(ROOT / "lab"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(ROOT / "lab" / "local"))
    local = get_page_config([], str(ROOT / "lab" / "settings"))["disabledExtensions"]
    assert {"@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:menu", "@jupyter/nbgrader:formgrader"} <= set(local)
    assert "@jupyter/nbgrader:validate-assignment" not in local
    monkeypatch.delenv("JUPYTER_CONFIG_PATH")
    hosted = get_page_config([], str(ROOT / "lab" / "settings"))["disabledExtensions"]
    assert "@jupyter/nbgrader:assignment-list" not in hosted and "@jupyter/nbgrader:formgrader" in hosted


def test_every_level_ends_with_a_link_to_its_next_step():
    for path in editions.assignments(NOTEBOOKS):
        last = editions.read(path).cells[-1]
        assert last.cell_type == "markdown" and last.source.startswith("**Next:**"), f"{path.name} ends without a next step"
        targets = re.findall(r"\]\(([^)]+)\)", last.source)
        assert targets, f"{path.name}: its Next has no link"
        for target in targets:
            assert (NOTEBOOKS / target).exists() or target == editions.START_PAGE, f"{path.name} links to {target}"


def _problems(path):
    return {m[1] for cell in editions.read(path).cells for m in [re.match(r"### Problem (\d\.\d) ", cell.source)] if m}


def test_the_readme_start_page_and_the_optional_level_agree_on_what_is_beyond_the_sheet():
    beyond = _problems(NOTEBOOKS / "beyond_the_sheet.ipynb")
    in_levels = set().union(*(_problems(path) for path in NOTEBOOKS.glob("level*.ipynb")))
    assert beyond and "4.3" in in_levels and not beyond & in_levels, (beyond, in_levels)
    readme = (ROOT / "README.md").read_text()  # its table's rows, each against its notebook: tests/test_lists.py
    assert not re.search(r"beyond the sheet: \d", readme)  # no level's row names an optional problem any more
    start = editions.start_page(NOTEBOOKS)
    assert "*Beyond the sheet* are optional" in start
    listed = next(line for line in start.splitlines() if "(beyond_the_sheet.ipynb)" in line)
    assert set(re.findall(r"(\d\.\d) ", listed)) == beyond, listed
    level4 = editions.read(NOTEBOOKS / "level4_synthesis.ipynb")
    statement = next(c.source for c in level4.cells if c.source.startswith("### Problem 4.3"))
    assert "it is not optional" in statement and "Beyond the exercise sheet" not in statement


def test_a_rubric_of_one_point_says_is():
    summaries = []
    for path in editions.assignments(NOTEBOOKS):
        for cell in editions.practice_notebook(editions.read(path)).cells:
            summaries += re.findall(r"<summary>(Rubric [^<]*)</summary>", cell.source)
    assert summaries
    for summary in summaries:
        one = re.search(r"how 1 point ", summary) or re.search(r"how ½ point ", summary)
        assert summary.endswith("is graded" if one else "are graded"), summary
    assert any("how 1 point of the written answer is graded" in s for s in summaries)


def test_the_lab_config_folder_for_students_own_machines_holds_only_the_page_config():
    files = sorted(str(p.relative_to(ROOT / "lab" / "local")) for p in (ROOT / "lab" / "local").rglob("*") if p.is_file())
    assert files == ["labconfig/page_config.json"]
    json.loads((ROOT / "lab" / "local" / "labconfig" / "page_config.json").read_text())
    assert os.sep not in "x"


def test_the_practice_edition_carries_the_kernel_s_language_info():
    """What JupyterLab writes into a notebook on opening it is there already: opening changes nothing
    (tests/browser/test_lab.py opens each one in Chromium)."""
    from ipykernel.ipkernel import IPythonKernel

    for path in editions.source_notebooks(NOTEBOOKS):
        built = nbformat.reads(editions.practice_text(path), as_version=4)
        assert built.metadata["language_info"] == IPythonKernel.language_info, path.name
        assert editions.read(path).metadata["language_info"] == {"name": "python"}  # the source stays clean


def test_small_figures_read_at_11_px_in_jupyterlab_at_1280_by_720():
    """The causal step explorer (five panels, scaled down to the output's 845 px), the head-split diagram and
    the parameter plot's legend had text of 6 to 10 px as shown there."""
    import mha_core as mha
    from mha_core.figures.screen import LAB_TEXT_PX, shown_in_lab_px

    from autograders.problems.level4 import SHEET_4_2

    step = mha.widgets.causal_step_explorer((1.0, 0.0), SHEET_4_2["keys"], SHEET_4_2["values"],
                                            position=2)  # two keys masked: "masked" labels shown
    assert any(t.get_text() == "masked" for ts in step.texts for t in ts)
    figures = {"causal step": step.canvas.figure, "head split": mha.plots.head_split_diagram(n=4, h=2, d_k=3),
               "parameter explorer": mha.widgets.parameter_explorer(d_model=512).canvas.figure,
               "parameter plot": mha.plots.parameter_plot(512)}
    for name, figure in figures.items():
        assert shown_in_lab_px(figure) >= LAB_TEXT_PX - 1e-9, (name, shown_in_lab_px(figure))
