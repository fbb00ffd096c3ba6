#!/usr/bin/env bash
# Measure a GPU machine in one command: the GPU-meaningful checks, the benchmarks, the largest grid that
# fits against the planner, and Taylor-Green at 256^3 against the published DNS; one report (JSON and
# markdown) under outputs/bench/gpu/ (scripts/gpu_campaign.py says what each stage does).
#
#   bash scripts/gpu_campaign.sh              # on a machine with NVIDIA GPUs
#   bash scripts/gpu_campaign.sh --dry-run    # anywhere: the same stages on CPU at toy sizes (CI runs it)
#
# Python: $PYTHON if set, else .venv/bin/python (made by scripts/setup.sh), else python3 with the project
# on PYTHONPATH (a machine with JAX already installed and no network). If JAX sees no GPU there, it tries
# `pip install "jax[cuda12]==<the installed jax version>"` once; if JAX still sees none, it says so and
# exits 1 without a report.
set -uo pipefail
cd "$(dirname "$0")/.."
dry=0
for arg in "$@"; do [ "$arg" = "--dry-run" ] && dry=1; done
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
elif [ -x .venv/bin/python ]; then PY=.venv/bin/python
else PY=python3; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
sees_gpu() { "$PY" -c 'import jax, sys; sys.exit(0 if jax.default_backend() == "gpu" else 1)' 2>/dev/null; }
if [ "$dry" = 0 ] && ! sees_gpu; then
    version=$("$PY" -c 'import jax; print(jax.__version__)' 2>/dev/null || echo "")
    echo "gpu_campaign: JAX sees no GPU with $PY; installing jax[cuda12]${version:+==$version}"
    "$PY" -m pip install --quiet "jax[cuda12]${version:+==$version}" || true
    if ! sees_gpu; then
        echo "gpu_campaign: still no GPU visible to JAX (nvidia-smi: $(nvidia-smi -L 2>&1 | head -1)); nothing measured" >&2
        exit 1
    fi
fi
exec "$PY" scripts/gpu_campaign.py "$@"
