"""The book builds from the stored notebook outputs with zero warnings (-W -n), math included."""


def test_book_builds_without_warnings(built_book):
    for page in ["book/intro.html", "book/01_distribution.html", "book/14_tiny_transformer.html"]:
        assert (built_book / page).exists(), f"missing page {page}"
    assert (built_book / "_mathjax" / "tex-chtml.js").exists(), "MathJax was not copied into the site"
    assert (built_book / "_static" / "custom.css").exists()
