"""Plot style, the sliders' charts (``charts``: live in the browser, no kernel) and the older ipywidgets
slider helpers (``live``/``twin``), shared by every chapter. Nothing in the core imports this."""
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, apply_style, token_colors
from . import charts
from .sliders import live, sweep, twin
