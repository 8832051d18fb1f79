"""How the library is installed and imported (Binder, Colab, a fresh venv)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_library_for_chapters_1_to_12_does_not_import_torch():
    """The package root loads its torch modules on first use: the numpy chapters never pay for torch."""
    code = ("import sys, rl4llm, rl4llm.viz, rl4llm.viz.part1, rl4llm.viz.part2, rl4llm.viz.part3, "
            "rl4llm.viz.source, rl4llm.statistics, rl4llm.tasks; from rl4llm import softmax, gae, clipped_objective; "
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
