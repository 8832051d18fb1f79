"""How the library is installed and imported (Binder, Colab, a fresh venv)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_library_for_chapters_1_to_12_does_not_import_torch():
    """The package root loads its torch modules on first use: the numpy chapters never pay for torch."""
    chapters = [p.stem.split("_", 1)[1] for p in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))][:12]
    code = ("import sys, rl4llm, rl4llm.viz, " + "".join(f"rl4llm.viz.{stem}, " for stem in chapters) +
            "rl4llm.viz.source, rl4llm.math.statistics, rl4llm.llm.tasks, rl4llm.exercises, rl4llm.course.assignments; "
            "from rl4llm import softmax, gae, clipped_objective; from rl4llm.exercises import check; "
            "assert check('gae', gae).startswith('Correct') and check('ex-ch12-by-hand', 0.11425).startswith('Correct'); "
            "assert 'torch' not in sys.modules, 'torch was imported'; "
            "from rl4llm import grpo_loss, GPT; assert 'torch' in sys.modules; print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_the_repository_url_lives_in_config_and_everything_that_repeats_it_agrees():
    """README's links and each chapter's Colab install cell are written from _config.yml by
    scripts/sync_repository_url.py; after an edit of the URL, run it (this test says what is stale)."""
    result = subprocess.run([sys.executable, "scripts/sync_repository_url.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_chapter_keeps_saved_widget_state():
    """Saved ipywidgets state would show dead controls in the static site (scripts/strip_widget_state.py)."""
    import json
    kept = [p.name for p in sorted((ROOT / "book").glob("*.ipynb"))
            if "widgets" in json.loads(p.read_text(encoding="utf-8")).get("metadata", {})]
    assert not kept, f"run python scripts/strip_widget_state.py: {kept}"


def test_stored_progress_bars_show_where_they_ended_not_their_first_frame(tmp_path):
    """A tqdm bar's saved state becomes the text it ended on (the page would show nothing, the notebook
    ``0/15``); checked on a notebook executed here, and on every chapter as stored."""
    import json
    import re

    import nbformat
    from nbclient import NotebookClient

    source = "from rl4llm.llm.trainer import runs_bar\nwith runs_bar(3) as bar:\n    bar.update(2)\nprint('ok')"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3").execute()
    path = tmp_path / "bar.ipynb"
    nbformat.write(notebook, path)
    subprocess.run([sys.executable, "scripts/strip_widget_state.py", str(path)], cwd=ROOT, check=True,
                   capture_output=True)
    outputs = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["outputs"]
    assert {k: "".join(v) for k, v in outputs[0]["data"].items()} == {"text/plain": "runs:  66%|██████    | 2/3"}
    assert outputs[1]["text"] == ["ok\n"]

    first_frames = [(p.name, i) for p in sorted((ROOT / "book").glob("*.ipynb"))
                    for i, cell in enumerate(json.loads(p.read_text(encoding="utf-8"))["cells"])
                    for output in cell.get("outputs", [])
                    if re.search(r"\| 0/\d+ \[", json.dumps(output.get("data", {})))]
    assert not first_frames, f"re-execute and run python scripts/strip_widget_state.py: {first_frames}"


TORCH_MISSING = """import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not installed (pip install ./code has no torch)")
sys.meta_path.insert(0, _NoTorch())"""


def test_chapter_1_and_every_numpy_chapters_exercises_run_without_torch():
    """A fresh venv with only ``pip install ./code`` has no torch: chapter 1 runs top to bottom in a
    kernel where importing torch fails, and so does every check cell of chapters 1-12 (starter, then check)."""
    import json

    import nbformat
    from nbclient import NotebookClient

    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))[:12]
    cells = [nbformat.v4.new_code_cell(TORCH_MISSING)]
    cells += [nbformat.v4.new_code_cell(c.source) for c in nbformat.read(chapters[0], as_version=4).cells
              if c.cell_type == "code"]
    for path in chapters:
        cells += [nbformat.v4.new_code_cell("".join(c["source"])) for c in json.loads(path.read_text())["cells"]
                  if {"exercise-code", "exercise-check"} & set(c["metadata"].get("tags", []))]
    cells.append(nbformat.v4.new_code_cell("import sys; print('torch' in sys.modules)"))
    nb = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "book")}}).execute()       # raises on any error
    verdicts = [o["data"]["text/plain"] for c in nb.cells for o in c.outputs
                if o.get("output_type") == "execute_result" and str(o["data"].get("text/plain", "")).startswith(
                    ("'Correct", "Correct", "'Not yet", "Not yet"))]
    assert len(verdicts) >= 12 and all(v.startswith("Correct") for v in verdicts), verdicts
    assert nb.cells[-1].outputs[0]["text"].strip() == "False"
