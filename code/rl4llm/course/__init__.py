"""Course machinery outside the formulas' namespace: the syllabus, the assignments and the grading sandbox."""
