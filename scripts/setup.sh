#!/usr/bin/env bash
# Set up the project on a machine with only Python >= 3.11: a virtual environment in .venv with the
# package (editable) and its test extra. Does nothing when .venv is already up to date with
# pyproject.toml, so it is cheap to put in front of every command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: $PY is missing or older than Python 3.11; set PYTHON=/path/to/python3.11+" >&2
    exit 2
fi
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PY" --version)"
    "$PY" -m venv .venv
fi
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "setup: installing the simulator and its dependencies into .venv (about 1 GB, a minute or two)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e '.[test]'
    rm -f .venv/.installed-*
    touch "$stamp"
fi
