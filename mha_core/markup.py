"""The HTML the library writes (explorers' readouts, tables, captions, a figure's ``<img>``), from
the Jinja2 templates in ``mha_core/templates/``, autoescaped: a value is always escaped, markup
comes only from the templates.

A template is written over several lines for reading; its lines are joined as they are loaded
(each line's indentation and line break dropped), so the HTML is one line and a space between two
of its words is written inside a line."""

import functools
from pathlib import Path

TEMPLATES = Path(__file__).with_name("templates")


def _joined(name):
    path = TEMPLATES / name
    if not path.is_file():
        return None
    source = "".join(line.lstrip() for line in path.read_text(encoding="utf-8").splitlines())
    mtime = path.stat().st_mtime
    return source, str(path), lambda: path.stat().st_mtime == mtime


@functools.cache
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FunctionLoader(_joined), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def render(template, /, **values):
    """The template ``template`` (in ``mha_core/templates/``) filled with ``values``, escaped."""
    return _environment().get_template(template).render(**values)
