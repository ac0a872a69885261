"""The explorers under the name the notebooks and the demo call them by (``mha.widgets.shape_explorer``):
each is a module of :mod:`mha_core.explore`, with its pure state function and its view."""

from .explore import *  # noqa: F401,F403
from .explore import __all__  # noqa: F401
from .explore.base import CROSS_PATTERNS, PATTERNS, Explorer  # noqa: F401
from .explore.canvas import FigureImage, one_blas_thread  # noqa: F401
from .explore.causal_step import STEP_CELL  # noqa: F401
from .explore.shapes import MAX_PANELS  # noqa: F401
