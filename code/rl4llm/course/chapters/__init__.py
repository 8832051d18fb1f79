"""One module per chapter, named for its notebook (``book/NN_<stem>.ipynb`` -> ``<stem>.py``): the chapter's
place and plan in the syllabus, declared once, where a new chapter adds its own."""
