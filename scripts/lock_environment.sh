#!/usr/bin/env bash
# Write requirements.lock: every distribution that `pip install -r requirements.txt` brings, pinned,
# for CPython 3.11 on Linux x86_64, with torch's CPU build (2.13.0+cpu). Run it after changing
# requirements.txt or requirements-book.txt (uv is pinned in requirements.txt, so it is in the venv).
set -euo pipefail
cd "$(dirname "$0")/.."
# The CPU build of torch: the course machines keep it in /opt/wheels; elsewhere it comes from PyTorch's
# CPU index. unsafe-best-match lets the resolver take 2.13.0+cpu over PyPI's CUDA build of 2.13.0.
if [ -d /opt/wheels ]; then torch_cpu=(--find-links /opt/wheels)
else torch_cpu=(--extra-index-url https://download.pytorch.org/whl/cpu); fi
python3 -m uv pip compile requirements.txt --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
  "${torch_cpu[@]}" --index-strategy unsafe-best-match \
  --custom-compile-command "bash scripts/lock_environment.sh" -o requirements.lock "$@"
