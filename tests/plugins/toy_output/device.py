"""What the extrema output runs on the devices: one jitted program (reductions over the sharded field,
replicated results) and its writer (process 0 appends the row)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.output.base import Moment, Schedule, Writer
from simulator.output.rows import RowFile

from toy_output import FILE


@functools.cache
def compiled(field: str, options: tuple[tuple[str, str], ...] = ()) -> Any:
    """``(equation, state, params, t) -> {min, max, mean}``, each (components,), replicated."""

    def extrema(eq: Any, state: Any, params: Any, t: Any) -> dict[str, jax.Array]:
        f = eq.at(t).fields(state, params)[field]
        f = f if f.ndim == 4 else f[None]  # a scalar field has one component
        out = {"min": jnp.min(f, axis=(1, 2, 3)), "max": jnp.max(f, axis=(1, 2, 3)), "mean": jnp.mean(f, axis=(1, 2, 3))}
        return {k: jax.lax.with_sharding_constraint(v, eq.fft.replicated_sharding()) for k, v in out.items()}

    return jax.jit(extrema, compiler_options=dict(options))


def lower(sim: Any, state: Any, t: Any, dt: Any) -> Any:
    """The program lowered for the planner (abstract ``state`` and ``t``)."""
    return compiled(sim.cfg.output.section("extrema").field, sim.options_key()).lower(sim.equation, state, sim.params, t)


class ExtremaWriter(Writer):
    name = "extrema"

    def __init__(self, schedule: Schedule, compute: Any, components: int, rank0: bool, field: str):
        super().__init__()
        self.schedule, self.compute, self.components, self.rank0, self.field = schedule, compute, components, rank0, field
        self.file: RowFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = RowFile(run_dir / FILE, {"component": np.arange(self.components)}, resumed_step,
                                {"field": self.field}, what="output.extrema",
                                description="min, max and mean of each component of a field, one row per output")

    def write(self, moment: Moment) -> None:
        values = self.compute(moment)  # collective: every process computes
        if self.file is not None:
            self.file.append(moment.step, moment.time, values)


def writers(cfg: Any, sim: Any, ctx: Any) -> list[Writer]:
    section = cfg.output.section("extrema")
    program = compiled(section.field, sim.options_key())
    params = sim.equation.params(cfg.physics)

    def compute(m: Moment) -> dict[str, np.ndarray]:
        values = program(sim.equation, m.state, params, sim.time_array(m.time))
        return {k: np.asarray(jax.device_get(v), np.float64) for k, v in values.items()}

    components = sim.equation.field_info[section.field].components or 1
    return [ExtremaWriter(Schedule.of(section), compute, components, ctx.rank0, section.field)]
