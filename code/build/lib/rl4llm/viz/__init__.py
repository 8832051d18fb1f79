"""Plot style and slider helpers shared by every chapter. Nothing in the core imports this."""
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, apply_style, token_colors
from .sliders import live, sweep, twin
