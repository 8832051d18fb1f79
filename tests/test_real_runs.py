"""``rl4llm.viz.real_runs``' copy of the H200 record's header (chapter 19 prints it), against the record itself."""
import json
from pathlib import Path

from rl4llm.viz import real_runs as rr


def test_the_h200_record_header_is_the_benchmarks_record():
    record = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" / "recipe_gpu_h200.json").read_text())
    assert rr.H200_RECORD == {key: value for key, value in record.items() if key != "runs"}
