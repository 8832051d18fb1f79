"""answer_boxes.js's verdicts under node, with no browser (shared by the answer-box tests of the book
and of the student edition)."""
import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "_ext" / "answer_boxes_static" / "answer_boxes.js"
NODE = shutil.which("node")


def node_verdicts(cases: list, script: Path = SCRIPT) -> list:
    """The script's verdict, [kind, message], on each [key, text] of ``cases``, in one node process."""
    program = ("const a = require(process.argv[1]); const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
               "console.log(JSON.stringify(cases.map(([key, text]) => a.verdict(key, text))));")
    result = subprocess.run([NODE, "-e", program, str(script)], input=json.dumps(cases), capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout)
