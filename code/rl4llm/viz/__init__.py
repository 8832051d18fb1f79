"""Plot style and the sliders' charts (``charts``: live in the browser, no kernel), shared by every
chapter. Nothing in the core imports this."""
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, apply_style, token_colors
from . import charts
