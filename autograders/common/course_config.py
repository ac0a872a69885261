"""The nbgrader configuration ``nbgrader autograde`` would use in a course (:func:`course_config`): what
the intake, the grading and the answer key read of a course's ``nbgrader_config.py``."""

import traceback
from pathlib import Path

from .inputs import InputError, read_text

CONFIG_TODO = "correct it (`mha-workbook course` wrote it; nbgrader's documentation lists its settings)"


def course_config(course):
    """The nbgrader configuration ``nbgrader autograde`` would use in ``course``: the
    Jupyter config paths' ``nbgrader_config.py`` files, then the course's own."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    for directory in reversed(jupyter_config_path()):  # lowest priority first
        if (Path(directory) / "nbgrader_config.py").is_file():
            config.merge(PyFileConfigLoader("nbgrader_config.py", path=directory).load_config())
    own = Path(course) / "nbgrader_config.py"
    if own.exists():
        config.merge(_course_config(own, PyFileConfigLoader))
    return config


def _course_config(path, loader):
    """The course's own ``nbgrader_config.py``, or an InputError naming its line."""
    text = read_text(path, CONFIG_TODO)
    try:
        compile(text, str(path), "exec")
    except SyntaxError as error:
        raise InputError(path, f"not valid Python ({error.msg})", CONFIG_TODO, error.lineno) from None
    try:
        return loader(path.name, path=str(path.parent)).load_config()
    except Exception as error:  # noqa: BLE001 (whatever the file's code raises, named by its line)
        lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == str(path)]
        raise InputError(path, f"fails when run ({type(error).__name__}: {error})", CONFIG_TODO,
                         lines[-1] if lines else None) from None
