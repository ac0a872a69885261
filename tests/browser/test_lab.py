"""The practice edition in JupyterLab, in Chromium, as a student uses it.

For each level, two copies of the practice notebook (see ``lab_root``):

- **solved** (every answer filled in from ``notebooks/``): Run All finishes with
  every code cell run and *no error output at all* (no error, nothing on stderr);
  every figure and explorer renders; in each explorer a slider moved by keyboard
  and another dragged by mouse change the heatmap (the PNG behind the <img>) and
  the text the student reads (the shape table, or the readout); nbgrader's
  Validate button says the notebook passes.
- **blank** (as built, the workbook itself): Run All runs every code cell. No answer
  cell shows an error (a placeholder ``x = None``, or a function whose body is not
  written yet); each test cell says "no answer yet" in one plain line (``WrongAnswer``,
  no traceback), and as test cells carry the tag ``raises-exception`` the cells below
  still run: every figure and explorer renders. The first solution callout opens and
  shows the solution's code; Validate reports failing tests.

And the JupyterLab around them, as ``make lab`` configures it (``lab/``): it opens on
``START.md`` with no news pop-up; nbgrader's student tools are there (Validate, the
assignment list), the instructor's are not (Formgrader, Course List, the Create
Assignment sidebar); the self-test opens with no kernel dialog and no Validate button;
and building the workbook again after opening, running and saving a notebook writes
nothing new (no ``<name>.new.ipynb``).
"""

import json
import re
import subprocess
import sys

import nbformat
import pytest

from tests.conftest import level_notebooks, nbgrader_meta

from . import ui

LEVELS = [path.stem for path in level_notebooks()]
# An explorer, known by its sliders -> (slider pressed with the keyboard, slider dragged, pixels): the first
# entry whose two sliders the explorer has. Explorers without a slider (radio buttons, dropdowns) only render.
MOVES = [
    ("n", "d_model", -150),  # shape explorer: the table follows n and d_model (h is a dropdown); level 5's
                             # d_model slider has two stops (8, 16): a short drag would not leave the last
    ("s1 (token 1)", "temperature T", 60),  # softmax playground: the weights readout
    ("n_q (decoder)", "n_k (encoder)", 60),  # cross-attention: the shapes readout
    ("n (tokens)", "d_model", -25),  # Level 3's FLOPs against h
    ("q₁ (first entry of q)", "q₂ (second entry of q)", 40),  # Level 4.2's step by step
    ("d_model", "d_model", -25),  # Level 4.1's parameters against h
    ("d_k", "n (tokens)", -40),  # Level 3.4's rank explorer: the singular values follow d_k and n
]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def saved(lab_root, folder, stem):
    """The notebook ``stem`` as saved in ``folder`` ("" for the workbook itself)."""
    return nbformat.read(str(lab_root / folder / f"{stem}.ipynb"), as_version=4)


def errors_of(cell):
    return [o for o in cell.get("outputs", []) if o.output_type == "error"
            or (o.output_type == "stream" and o.name == "stderr")]


def describe(output):
    if output.output_type == "error":
        return f"{output.ename}: {output.evalue}"
    return f"stderr: {output.text[:300]}"


def validate(page):
    """Click nbgrader's Validate button; return the results dialog's message element."""
    page.locator(".validate-button").get_by_text("Validate").click()
    message = page.locator(".jp-Dialog #validation-message")
    message.wait_for(timeout=180_000)
    return message


def close_dialog(page):
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def move_and_check(explorer, label, move):
    """Move the slider ``label`` with ``move``; assert the heatmap and the text changed."""
    page = explorer.page
    slider = ui.slider(explorer, label)
    assert slider.count() == 1, f"no slider {label!r} in the explorer"
    before_value = ui.slider_value(slider)
    position = slider.locator(".noUi-handle").get_attribute("aria-valuenow")
    src, digest = ui.image_digest(explorer)
    text = ui.texts(explorer)
    move(slider)
    page.wait_for_function("([h, v]) => h.getAttribute('aria-valuenow') !== v",
                           arg=[slider.locator(".noUi-handle").element_handle(), position])
    _, new_digest = ui.wait_for_new_image(explorer, src)
    assert new_digest != digest, f"moving {label!r} sent a new image, but the same picture"
    new_text = ui.wait_for_text_change(explorer, text)
    return before_value, ui.slider_value(slider), text, new_text


@pytest.mark.parametrize("stem", LEVELS)
def test_solved_notebook_runs_renders_and_responds(lab, lab_root, lab_page, screenshots, stem):
    page = lab_page
    ui.open_notebook(page, lab, f"solved/{stem}.ipynb", f"solved-{stem}")
    ui.run_all(page)
    ui.save(page)

    nb = saved(lab_root, "solved", stem)
    code = [c for c in nb.cells if c.cell_type == "code"]
    not_run = [c.get("id") for c in code if c.execution_count is None]
    assert not not_run, f"Run All left cells unrun: {not_run}"
    problems = [f"{c.get('id')}: {describe(o)}" for c in code for o in errors_of(c)]
    assert not problems, "Run All on the solved notebook showed errors:\n" + "\n".join(problems)
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0

    # Every figure and every explorer the notebook produced is on the page.
    figures = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    widgets = sum(WIDGET_VIEW in o.get("data", {}) for c in code for o in c.outputs)
    if not stem.startswith("level"):  # the optional notebook's problem (4.5) has no figure or explorer yet
        return
    assert figures + widgets > 0, "the level shows nothing to look at"
    # a figure shows as an <img> with alt text (its HTML output), or as JupyterLab's plain image
    images = page.locator(".jp-OutputArea-output img:not(.widget-image)")
    assert images.count() == figures
    for k in range(figures):
        images.nth(k).scroll_into_view_if_needed()
        assert images.nth(k).evaluate("img => img.complete && img.naturalWidth > 0"), f"figure {k + 1} is empty"
    explorers = ui.explorers(page)
    assert page.locator(".jp-OutputArea-output .jupyter-widgets.widget-container").count() >= widgets
    # every prediction is entered: no moment is locked; a moment's view may be a table (no image)
    assert ui.locked_predictions(page).count() == 0, "a prediction moment stayed locked"
    assert 0 < explorers.count() <= widgets, f"{widgets} widget outputs, {explorers.count()} explorers rendered"

    first = explorers.first
    first.scroll_into_view_if_needed()
    page.screenshot(path=screenshots(f"lab-{stem}-run-all"))

    for k in range(explorers.count()):
        explorer = explorers.nth(k)
        explorer.scroll_into_view_if_needed()
        labels = ui.slider_labels(explorer)
        if not labels:
            continue  # rendered (its image is counted above); nothing to slide
        moves = [m for m in MOVES if m[0] in labels and m[1] in labels]
        assert moves, f"an explorer with sliders {labels!r}: add it to MOVES"
        by_key, by_mouse, dx = moves[0]
        old, new, text, new_text = move_and_check(explorer, by_key, lambda s: ui.press(s, "ArrowRight"))
        assert old != new
        old, new, text, new_text = move_and_check(explorer, by_mouse, lambda s: ui.drag(s, dx))
        assert old != new
        if (by_key, by_mouse) == ("n", "d_model"):
            # the shape table follows d_model (dragged; h is a dropdown): d_k = d_model / h in the readout
            found = re.search(r"d_k = d_model / h = (\d+) / (\d+) = (\d+)", new_text.replace("\u2009", " "))
            assert found, f"no d_k = d_model / h in {new_text[:200]!r}"
            d_model, h, d_k = map(int, found.groups())
            assert d_model == int(float(new)) and d_k == d_model // h
        page.screenshot(path=screenshots(f"lab-{stem}-explorer-{k + 1}-moved"))

    # axe-core and a screen reader's view of the outputs, sliders moved (test_axe.py says what is checked)
    problems = ui.audit(page, screenshots(f"lab-{stem}-accessibility"))
    assert not problems, f"{stem}'s outputs, for a screen reader:\n" + "\n".join(problems)

    message = validate(page)
    assert "Success! Your notebook passes all the tests." in message.inner_text()
    close_dialog(page)
    assert not page.js_errors, page.js_errors


@pytest.mark.parametrize("stem", LEVELS)
def test_blank_notebook_runs_past_blank_answers_shows_solutions_and_fails_validation(lab, lab_root, lab_page, screenshots,
                                                                                    stem):
    page = lab_page
    ui.open_notebook(page, lab, f"{stem}.ipynb", f"blank-{stem}")
    ui.run_all(page)
    ui.save(page)

    nb = saved(lab_root, "", stem)
    code = [c for c in nb.cells if c.cell_type == "code"]
    not_run = [c.get("id") for c in code if c.execution_count is None]
    assert not not_run, f"Run All stopped before these cells: {not_run}"
    failing = [c for c in code if errors_of(c)]
    others = [c.get("id") for c in failing if not (nbgrader_meta(c).get("solution") or nbgrader_meta(c).get("grade"))]
    assert not others, f"cells that are neither answers nor tests failed: {others}"
    tests = [c for c in code if nbgrader_meta(c).get("grade")]
    for cell in tests:
        shown = "; ".join(describe(o) for o in errors_of(cell))
        assert "WrongAnswer" in shown and "no answer yet" in shown, f"{cell.get('id')}: {shown or 'passed blank'}"
    answers = [f"{c.get('id')}: {'; '.join(describe(o) for o in errors_of(c))}" for c in failing
               if nbgrader_meta(c).get("solution")]
    assert not answers, "a blank answer cell shows an error:\n" + "\n".join(answers)
    # One plain line per failing test on the page, not a traceback.
    shown = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_text_contents()
    assert len(shown) == len(tests) and all(text.strip().startswith("✘ Not yet.") for text in shown), shown[:3]
    assert not any("Traceback" in text or "File " in text or "\n" in text.strip() for text in shown), shown[:3]
    first = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").first
    page.locator(".jp-CodeCell").filter(has=first).first.locator(".jp-InputArea").click()  # JupyterLab scrolls to it
    page.keyboard.press("Escape")
    page.screenshot(path=screenshots(f"lab-{stem}-blank-run-all"))
    widgets = sum(WIDGET_VIEW in o.get("data", {}) for c in code for o in c.outputs)
    assert ui.explorers(page).count() + ui.locked_predictions(page).count() == widgets, \
        "an explorer below a blank answer did not render"
    # the "not yet" lines are read too (their colour on the error background, by axe-core's contrast rule)
    problems = ui.audit(page, screenshots(f"lab-{stem}-blank-accessibility"))
    assert not problems, f"blank {stem}'s outputs, for a screen reader:\n" + "\n".join(problems)

    # The first solution callout: closed, then open with the solution's code.
    callout_cell = next(c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("<details><summary>Solution"))
    expected = re.findall(r"```python\n(.*?)\n```", callout_cell.source, re.S)[-1].splitlines()[-1].strip()
    summary_text = re.match(r"<details><summary>(.*?)</summary>", callout_cell.source)[1]
    details = page.locator(".jp-MarkdownCell details").filter(
        has=page.locator("summary", has_text=re.compile(f"^{re.escape(summary_text)}$"))
    )
    details.scroll_into_view_if_needed()
    assert not details.locator("pre").last.is_visible(), "the solution is shown before the callout is opened"
    details.locator("summary").click()
    solution = details.locator("pre").last
    solution.wait_for(state="visible")
    assert expected in solution.inner_text()

    message = validate(page)
    text = message.inner_text()
    assert "Success" not in text and "failed" in text.lower(), text
    close_dialog(page)
    assert not page.js_errors, page.js_errors


def test_lab_has_the_widget_manager_and_the_validate_button(lab, lab_page):
    """What the tests above rely on: ipywidgets' manager and nbgrader's extension are enabled."""
    page = lab_page
    ui.open_notebook(page, lab, f"{LEVELS[0]}.ipynb", "extensions")
    extensions = page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    names = json.dumps(extensions.get("federated_extensions", []))
    for name in ("@jupyter-widgets/jupyterlab-manager", "@jupyter/nbgrader"):
        assert name in names, f"{name} is not enabled in JupyterLab"
    assert page.locator(".validate-button").count() == 1


# --- the JupyterLab around the notebooks, as `make lab` configures it (lab/) ----------

TOAST = ".Toastify__toast"  # JupyterLab's notifications (the "fetch news?" question is one)
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list")


def page_config(page):
    return page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data').textContent)")


def menu_labels(page, top):
    """The labels of the visible items of the menu bar's ``top`` menu (opened, read, closed)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{top}$")).click()
    items = page.locator(".lm-Menu-content > li.lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
    items.first.wait_for()
    labels = [label.strip() for label in items.all_inner_texts()]
    page.keyboard.press("Escape")
    return labels


def test_lab_opens_on_the_start_page_without_news(lab, lab_root, lab_page, screenshots):
    page = lab_page
    page.goto(lab.url(""))  # what `make lab` opens: the server's default URL
    rendered = page.locator(".jp-RenderedMarkdown").filter(has_text="How to get feedback")
    rendered.wait_for()
    assert page.url.split("?")[0].endswith("/lab/tree/START.md"), page.url
    assert rendered.locator("h1").first.inner_text().strip() == "Multi-head attention: the workbook"
    for path in sorted(lab_root.glob("*.ipynb")):
        assert rendered.locator(f"a[href*='{path.name}']").count() == 1, f"the start page does not link {path.name}"
    page.locator(".jp-StatusBar-TextItem").first.wait_for()
    page.wait_for_timeout(3000)  # JupyterLab asks about news a moment after it starts
    assert page.locator(TOAST).count() == 0, page.locator(TOAST).all_inner_texts()
    assert page_config(page)["news"] == {"disabled": True}
    page.screenshot(path=screenshots("lab-start-page"))

    # Its first link opens the first level.
    rendered.locator(f"a[href*='{LEVELS[0]}.ipynb']").click()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.wait_for()
    assert not page.js_errors, page.js_errors


def test_lab_has_the_students_nbgrader_tools_not_the_instructors(lab, lab_page, screenshots):
    page = lab_page
    ui.open_notebook(page, lab, f"{LEVELS[0]}.ipynb", "tools")
    disabled = page_config(page).get("disabledExtensions", [])
    for plugin in INSTRUCTOR_PLUGINS:
        assert plugin in disabled, f"{plugin} is enabled"
    assert page.locator(".validate-button").count() == 1, "no Validate button on a level"
    assert page.locator(".jp-SideBar .lm-TabBar-tab", has_text="Create Assignment").count() == 0
    assert page.locator("#nbgrader-create_assignemnt").count() == 0, "the Create Assignment sidebar is there"
    labels = menu_labels(page, "Nbgrader")
    assert "Assignment List" in labels, labels
    for instructor in ("Formgrader", "Formgrader (local)", "Course List", "Create assignment"):
        assert instructor not in labels, f"{instructor!r} in the Nbgrader menu: {labels}"
    # The server side agrees: no formgrader to reach by its URL.
    status = page.request.get(lab.url("formgrader")).status
    assert status == 404, f"/formgrader answered {status}"
    # The assignment list opens.
    page.locator(".lm-MenuBar-item", has_text=re.compile("^Nbgrader$")).click()
    page.locator("li.lm-Menu-item[data-command='nbgrader:open-assignment-list']").click()
    page.locator(".lm-TabBar-tab", has_text="Assignments").wait_for()
    page.screenshot(path=screenshots("lab-student-tools"))
    assert not page.js_errors, page.js_errors


def test_self_test_opens_without_a_kernel_dialog_or_validate_button(lab, lab_page, screenshots):
    page = lab_page
    ui.open_notebook(page, lab, "self_test.ipynb", "self-test")  # waits for the kernel: no dialog asked for one
    page.locator(".jp-MarkdownCell details summary").first.wait_for()
    page.wait_for_timeout(1000)
    assert page.locator(".jp-Dialog").count() == 0, page.locator(".jp-Dialog").all_inner_texts()
    buttons = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button")
    assert buttons.count() == 0 or not buttons.first.is_visible(), "a Validate button with nothing to validate"
    page.screenshot(path=screenshots("lab-self-test"))
    assert not page.js_errors, page.js_errors


def test_building_again_after_opening_and_saving_writes_nothing_new(lab, lab_root, lab_page):
    """The README's first command, again, after the student opened, ran and saved a
    notebook without answering: no ``<name>.new.ipynb``, the saved notebook kept as saved."""
    page = lab_page
    stem = LEVELS[0]
    path = lab_root / f"{stem}.ipynb"
    built = path.read_bytes()
    ui.open_notebook(page, lab, f"{stem}.ipynb", "rebuild")
    ui.run_all(page)
    ui.save(page)
    saved_bytes = path.read_bytes()
    assert saved_bytes != built, "saving should have written outputs and metadata (else this test shows nothing)"
    result = subprocess.run([sys.executable, "-m", "autograders", "practice", "--out", str(lab_root),
                             "--source", str(lab_root.parent / "notebooks")],
                            capture_output=True, text=True, check=True)
    assert sorted(p.name for p in lab_root.glob("*.new.*")) == [], result.stdout
    said = result.stdout.splitlines()
    assert not any(line.startswith(("kept", f"built {path}")) for line in said), result.stdout
    assert said[-1].startswith("practice edition:") and "up to date, nothing written" in said[-1], result.stdout
    assert path.read_bytes() == saved_bytes, "the student's saved notebook was rewritten"


def test_opening_a_notebook_leaves_it_unchanged(lab, lab_root, lab_page):
    """Right after opening, once its kernel is idle, no notebook of the practice edition shows unsaved
    changes: JupyterLab writes the kernel's language_info into the notebook, and the practice edition
    carries that very value (it held only {"name": "python"}, and every level's tab showed the dot)."""
    page = lab_page
    for path in sorted(lab_root.glob("*.ipynb")):
        ui.open_notebook(page, lab, path.name, f"open-{path.stem}")
        page.wait_for_timeout(2000)  # the kernel_info reply has been handled: the status bar said Idle
        assert page.locator(".lm-TabBar-tab.lm-mod-current.jp-mod-dirty").count() == 0, \
            f"{path.name} shows unsaved changes right after opening"
