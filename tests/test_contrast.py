"""Colours of the checks' feedback against WCAG 2's contrast formula (AA: 4.5:1 for text).

A failed check shows "✘ Not yet." in colour on the error output's background: JupyterLab's
(``--jp-rendermime-error-background`` of its light theme) and the feedback HTML's (nbconvert's
lab template). Both backgrounds and ANSI red's colour are read from the installed CSS, so a
change on either side is measured again.
"""

import re
import sys
from pathlib import Path

import pytest

from autograders.checks import feedback

SHARE = Path(sys.prefix) / "share" / "jupyter"
LAB_THEME = SHARE / "lab" / "themes" / "@jupyterlab" / "theme-light-extension" / "index.css"
NBCONVERT = SHARE / "nbconvert" / "templates" / "lab" / "static"
AA = 4.5


def rgb(css):
    """(r, g, b) of a CSS hex colour (#fdd or #ffdddd)."""
    hexa = css.strip().lstrip("#")
    if len(hexa) == 3:
        hexa = "".join(c * 2 for c in hexa)
    return tuple(int(hexa[i:i + 2], 16) for i in (0, 2, 4))


def luminance(colour):
    """WCAG 2 relative luminance of an sRGB colour (0..255 channels)."""
    def linear(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def css_variable(path, name):
    found = re.search(rf"{re.escape(name)}\s*:\s*(#[0-9a-fA-F]{{3,6}})\b", path.read_text())
    assert found, f"{name} not found in {path}"
    return rgb(found[1])


def ansi_colours(line):
    """The foreground colour of each coloured run of ``line``: 24-bit escapes as given,
    ANSI red (31) as JupyterLab and nbconvert draw it (their .ansi-red-fg)."""
    colours = []
    for code in re.findall(r"\x1b\[([\d;]*)m", line):
        parts = [int(p) for p in code.split(";") if p]
        if parts[:2] == [38, 2]:
            colours.append(tuple(parts[2:5]))
        elif 31 in parts:
            css = (NBCONVERT / "index.css").read_text()
            colours.append(rgb(re.search(r"\.ansi-red-fg\s*\{\s*color:\s*(#[0-9a-fA-F]+)", css)[1]))
    return colours


def test_the_formula():
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((119, 119, 119), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)  # #777 on white: just fails AA
    assert contrast((231, 92, 88), rgb("#fdd")) == pytest.approx(2.74, abs=0.01)  # the measure of ANSI red


@pytest.mark.skipif(not LAB_THEME.exists() or not NBCONVERT.exists(), reason="JupyterLab's or nbconvert's CSS not installed")
@pytest.mark.parametrize("background", ["lab", "feedback"])
def test_not_yet_reaches_aa_on_the_error_background(background):
    css = LAB_THEME if background == "lab" else NBCONVERT / "theme-light.css"
    behind = css_variable(css, "--jp-rendermime-error-background")
    line = feedback.coloured(feedback.shown("Your weights do not sum to 1."))
    assert line.count("\n") == 0 and "✘ Not yet." in line, "one plain line"
    colours = ansi_colours(line)
    assert colours, "the line is coloured: this test measures that colour"
    for colour in colours:
        assert contrast(colour, behind) >= AA, f"{colour} on {behind}: {contrast(colour, behind):.2f}:1"
    assert contrast((0, 0, 0), behind) >= AA  # the rest of the line: the theme's text colour
