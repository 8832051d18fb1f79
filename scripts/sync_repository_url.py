"""The repository's address lives in one place, ``repository.url`` (and ``branch``) in _config.yml.

    python scripts/sync_repository_url.py           # rewrite what repeats it
    python scripts/sync_repository_url.py --check   # exit 1 if something is out of date (a test runs this)

A fork changes those two lines of _config.yml and runs this script once. It rewrites:

- in README.md, the lines between ``<!-- repository:begin -->`` and ``<!-- repository:end -->``
  (the Binder and Colab links);
- in every chapter notebook, the first code cell: on Colab (and only there) it clones the repository
  at the branch, installs the library (with TRL at the book's pins in a chapter that imports it) and moves into
  ``book/``, where the chapters expect to run; anywhere else it does nothing. The cell is tagged
  ``remove-cell``, so the static site does not show it.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "colab-install"
BEGIN, END = "<!-- repository:begin -->", "<!-- repository:end -->"


def repository() -> tuple[str, str]:
    """(url, branch) from _config.yml."""
    config = (ROOT / "_config.yml").read_text()
    block = config[config.index("repository:"):]
    url = re.search(r"^\s+url:\s*(\S+)", block, re.M).group(1).rstrip("/")
    branch = re.search(r"^\s+branch:\s*(\S+)", block, re.M).group(1)
    return url, branch


def pins(*names: str) -> list[str]:
    """``name==version`` of each package, as requirements.lock pins it."""
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    return [next(line.strip() for line in lines if line.startswith(f"{name}==")) for name in names]


#: A code line that imports TRL: a chapter with one installs TRL and transformers at the book's pins.
IMPORTS_TRL = re.compile(r"^\s*(from trl\b|import trl\b)", re.M)


def install_cell(url: str, branch: str, uses_trl: bool) -> str:
    extra = ["trl", "transformers"] if uses_trl else []
    packages = ", ".join(repr(p) for p in ["/content/book-repo/code"] + pins(*extra))
    return f'''# Colab only (anywhere else this cell does nothing): fetch the book's repository, install its
# library, and run from book/ as the chapters expect. Written by scripts/sync_repository_url.py.
import os, subprocess, sys
if "google.colab" in sys.modules:
    if not os.path.isdir("/content/book-repo"):
        subprocess.run(["git", "clone", "--depth", "1", "--branch", "{branch}", "{url}",
                        "/content/book-repo"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", {packages}], check=True)
    os.chdir("/content/book-repo/book")'''


def readme_block(url: str, branch: str) -> str:
    owner_repo = "/".join(url.split("/")[-2:])
    return "\n".join([
        BEGIN,
        f"- **Binder:** <https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath=lab/tree/book> (JupyterLab, "
        "everything installed), or the rocket icon on any chapter of the built book.",
        f"- **Colab:** <https://colab.research.google.com/github/{owner_repo}/blob/{branch}/book/01_distribution.ipynb> "
        "(any chapter: change the file name), or the rocket icon. Each chapter's first cell installs the library "
        "when it runs on Colab.",
        END])


def synced(check: bool) -> list[str]:
    """Bring everything in line (or, with ``check``, only list what is out of date)."""
    url, branch = repository()
    stale = []
    readme = (ROOT / "README.md").read_text()
    new_readme = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: readme_block(url, branch), readme,
                        flags=re.S)
    if BEGIN not in readme:
        stale.append("README.md has no repository block")
    elif new_readme != readme:
        stale.append("README.md")
        if not check:
            (ROOT / "README.md").write_text(new_readme)
    for path in sorted((ROOT / "book").glob("*.ipynb")):          # the chapters and the instructor guide
        notebook = nbformat.read(path, as_version=4)
        uses_trl = any(IMPORTS_TRL.search(c.source) for c in notebook.cells if c.cell_type == "code")
        source = install_cell(url, branch, uses_trl)
        first = notebook.cells[0] if notebook.cells else None
        if first is not None and first.get("id") == CELL_ID:
            if first.source == source and first.metadata.get("tags") == ["remove-cell"]:
                continue
            first.source, first.metadata["tags"] = source, ["remove-cell"]
        else:
            cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["remove-cell"]})
            cell.id = CELL_ID
            notebook.cells.insert(0, cell)
        stale.append(str(path.relative_to(ROOT)))
        if not check:
            nbformat.write(notebook, path)
    return stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is out of date")
    args = parser.parse_args()
    stale = synced(args.check)
    for item in stale:
        print(f"{'out of date' if args.check else 'updated'}: {item}")
    if args.check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
