"""The book builds from the stored notebook outputs with zero warnings (-W -n), math included."""


def test_book_builds_without_warnings(built_book):
    for page in ["book/intro.html", "book/01_distribution.html", "book/15_tiny_transformer.html"]:
        assert (built_book / page).exists(), f"missing page {page}"
    assert (built_book / "_mathjax" / "tex-chtml.js").exists(), "MathJax was not copied into the site"
    assert (built_book / "_static" / "custom.css").exists()


def test_exercises_are_numbered_per_chapter_with_their_solutions(built_book):
    """Every chapter's exercises are "Exercise N.1", "N.2"... in order, each solution refers to its own
    exercise's number, and the coding exercises' reference bodies sit in collapsed cells."""
    import re
    from pathlib import Path

    from rl4llm.course.assignments import exercises

    for path in sorted((Path(__file__).resolve().parents[1] / "book").glob("[0-9][0-9]_*.ipynb")):
        html = (built_book / "book" / f"{path.stem}.html").read_text()
        chapter, expected = int(path.name[:2]), exercises(path)
        titles = re.findall(r'<span class="caption-number">Exercise ([\d.]+) </span>', html)
        assert titles == [e.number for e in expected], (path.name, titles)
        for number in re.findall(r"Solution to<a[^>]*> Exercise ([\d.]+)", html):
            assert number.startswith(f"{chapter}."), (path.name, number)
        coding = sum(e.kind == "coding" for e in expected)
        assert html.count("BEGIN SOLUTION") == coding and html.count("tag_hide-input") >= coding
