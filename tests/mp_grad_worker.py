"""Two processes x 2 devices: the gradient of tests/grad_objective.py for each equation named on the command
line on the slab backend (its all-to-alls then cross the processes), in the spectral layout its config picks
(compact for the equations whose spectra are all on the 2/3 rule's modes), written to OUT/gradients.json
by process 0 with whether the run was compact.

Run by tests/test_gradients.py through simulator.launch as ``mp_grad_worker.py OUT EQUATION...``; the
test compares the numbers with its own single-device gradients (a compact run's with the full layout's
too). The objective is jitted with the equation as an argument, as a multi-process program must be (no
closed-over process-spanning array).
"""

import json
import sys
from pathlib import Path

from simulator import runtime

runtime.configure_devices(2, "float64")
from simulator.config import load  # noqa: E402

runtime.initialize_processes(load(None))

import jax  # noqa: E402

from simulator.api import load_config  # noqa: E402
from simulator.run.simulation import Simulation  # noqa: E402

import grad_objective as obj  # noqa: E402

assert jax.process_count() == 2 and jax.device_count() == 4
found = {}
for equation in sys.argv[2:]:
    sim = Simulation(load_config(None, {**obj.overrides(equation), "fft.backend": "slab"}))
    found[equation] = (*obj.gradient(sim), sim.fft.compact is not None)
    print(f"process {jax.process_index()}: {equation} on slab: {found[equation]}", flush=True)
if jax.process_index() == 0:
    (Path(sys.argv[1]) / "gradients.json").write_text(json.dumps(found))
