"""Plot style and the sliders' charts (``charts``: live in the browser, no kernel), shared by every
chapter, and one module per chapter, named for its notebook (``book/NN_<stem>.ipynb``'s figures and charts
are in ``viz/<stem>.py``). Nothing in the core imports this."""
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, apply_style, palette_png, show_compact, token_colors
from . import charts
