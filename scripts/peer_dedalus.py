"""Walls peer: Dedalus 3 between no-slip plates (convection's step, eigenvalues, Nusselt; Orr-Sommerfeld's wave;
a channel's step).

Standalone script, run only in a separate Dedalus environment; the package never imports it. Install that
environment (Dedalus 3.0.5 builds from PyPI against the system's MPI and FFTW, about ten minutes on 2 cores):

    apt-get install -y libopenmpi-dev openmpi-bin libfftw3-dev libfftw3-mpi-dev
    python3 -m venv dedalus-venv
    CC=mpicc dedalus-venv/bin/pip install dedalus==3.0.5

Run it with one thread, as Dedalus asks (the script sets OMP_NUM_THREADS=1 before importing it), in one process:

    dedalus-venv/bin/python scripts/peer_dedalus.py step --sizes 256x64 1024x256 --json step.json
    dedalus-venv/bin/python scripts/peer_dedalus.py evp --ra 1500 --pr 1 --k 3.117 --json evp.json
    dedalus-venv/bin/python scripts/peer_dedalus.py onset --json onset.json
    dedalus-venv/bin/python scripts/peer_dedalus.py nusselt --ra 2000 --size 32x16 --json nu.json
    dedalus-venv/bin/python scripts/peer_dedalus.py orr --re 1e4 --alpha 1 --json orr.json
    dedalus-venv/bin/python scripts/peer_dedalus.py channel --sizes 64x64x64 --json channel.json
    dedalus-venv/bin/python scripts/peer_dedalus.py poiseuille --size 16x16x17 --steps 20 --json poiseuille.json

Every case but ``orr``, ``channel`` and ``poiseuille`` is Dedalus' own 2D Rayleigh-Benard example
(examples/ivp_2d_rayleigh_benard in Dedalus 3): the Boussinesq equations in free-fall units (depth Lz = 1, buoyancy
difference 1, nu = (Ra/Pr)^(-1/2), kappa = (Ra Pr)^(-1/2)), b = 1 at z = 0 and 0 at z = 1, u = 0 at both plates
(no-slip), a RealFourier basis in x and a ChebyshevT basis in z (Nz modes on Nz Gauss points), dealias 3/2, the
first-order tau formulation of the example (tau terms lifted onto the first derivative basis), the pressure gauge
integ(p) = 0; float64, one process.

* ``step``: the example at Lx = 4, Ra = 1e6, Pr = 1, RK222, its start (the conductive profile plus noise of
  1e-3 damped at the plates, seed 42). Reports the solver's set-up (``problem.build_solver``: building the
  matrices), the first step (which factorises the implicit matrices for its dt), the median of --steps timed steps
  after --warmup (a fixed dt, --dt, so that no refactorisation enters a timed step: a step's cost does not depend
  on dt; the example's CFL would change dt and refactorise), and, in a fresh process (this script, ``launch``),
  the wall time from the process' start to the end of its 1st and its 11th step. ``--serve`` steps on request:
  it prints ``ready NAME`` once every size is set up and warmed up, then answers each stdin line ``NX NZ STEPS``
  with the wall and CPU seconds of that many steps (as scripts/peer_fluidsim.py --serve), so that a benchmark can
  time Dedalus interleaved with its own steps.
* ``evp``: the linearised problem about the conductive state (Dedalus' examples/evp_1d_rayleigh_benard: a
  ComplexFourier x of the one wavenumber k, an EVP for sigma with d/dt = sigma), solved densely; reports the growth
  rate max Re(sigma) of the finite eigenvalues at Nz and at 3 Nz / 2 (their difference: the resolution's error).
* ``onset``: the same linear problem at marginal stability with Ra as the eigenvalue (in thermal-diffusion units,
  where Pr drops out: lap u - grad p + Ra b ez = 0, lap b + w = 0), Ra(k) its smallest positive eigenvalue,
  minimised over k: Ra_c and k_c.
* ``nusselt``: a steady roll at Ra (slightly above onset) in a box of one wavelength Lx = 2 pi / k, started from
  the conductive profile plus a roll of amplitude 0.1, stepped by RK222 at a fixed dt until the Nusselt number
  changes by less than --tol over 100 steps; reports Nu through each plate (-d<b>/dz there) and through the
  volume (1 + <w b> / kappa), at the resolution asked.
* ``orr``: the Orr-Sommerfeld problem of plane Poiseuille flow U = 1 - y^2 between plates at y = -1, 1 (Orszag
  1971), (U - c)(D^2 - alpha^2) phi - U'' phi = (D^2 - alpha^2)^2 phi / (i alpha Re), phi = D phi = 0 at both
  plates, as a 1D EVP for c on a ChebyshevT basis of --nz modes (four tau terms lifted onto the fourth derivative
  basis), solved densely; reports the least stable c (largest Im c among the finite, non-spurious eigenvalues),
  the Tollmien-Schlichting wave at Re = 1e4, alpha = 1, at --nz and 3 --nz / 2.
* ``channel``: the step of a pressure-driven channel as the project's ``channel`` equation runs it: incompressible
  Navier-Stokes, d/dt u + u . grad u = -grad p + G e_x + nu lap u, div u = 0, in Moser, Kim & Mansour's box
  (configs/channel_retau180.yaml: x streamwise over 4 pi, y spanwise over 4 pi / 3, z across plates at 0 and 2),
  nu = 1 / Re, Re = 2800, G = 2 / Re (laminar Poiseuille flow of centre-line velocity 1), u = 0 at both plates;
  RealFourier bases in x and y and a ChebyshevT basis in z on NX x NY x NZ modes, dealias 3/2, the first-order tau
  formulation of Dedalus' Rayleigh-Benard examples (tau terms lifted onto the first derivative basis, the pressure
  gauge integ(p) = 0), RK222 at a fixed dt. Its start is laminar Poiseuille flow plus normal noise of 0.3 in each
  component, damped as (z (2 - z))^2 at the plates (seed 42), projected onto div u = 0 by the first step. Reports,
  per size, what ``step`` does (set-up, first step, timed steps) and serves steps (``--serve``, stdin lines
  ``NX NY NZ STEPS``).
* ``poiseuille``: the sanity check of ``channel``'s equations: started on laminar Poiseuille flow without noise,
  the largest departure of the velocity from it after --steps steps (a steady state: round-off).

Dedalus' version, the threads and the case are named beside every figure (``peer`` in the JSON).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy or Dedalus load their threads: Dedalus asks for 1


def quiet() -> None:
    """Dedalus logs its set-up at INFO on stdout, which carries the --serve protocol: warnings only."""
    logging.getLogger().setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)


def fields(dist: Any, coords: Any, xbasis: Any, zbasis: Any) -> tuple[list[Any], dict[str, Any]]:
    """The example's unknowns (p, b, u and the tau fields of its first-order formulation, lifted onto the first
    derivative basis) and the names its equations are written in: one definition for the IVP and the EVPs."""
    import dedalus.public as d3

    bases = (xbasis, zbasis)
    names = {"p": dist.Field(name="p", bases=bases), "b": dist.Field(name="b", bases=bases),
             "u": dist.VectorField(coords, name="u", bases=bases), "tau_p": dist.Field(name="tau_p"),
             "tau_b1": dist.Field(name="tau_b1", bases=xbasis), "tau_b2": dist.Field(name="tau_b2", bases=xbasis),
             "tau_u1": dist.VectorField(coords, name="tau_u1", bases=xbasis),
             "tau_u2": dist.VectorField(coords, name="tau_u2", bases=xbasis)}
    unknowns = list(names.values())
    ez = coords.unit_vector_fields(dist)[1]
    lift_basis = zbasis.derivative_basis(1)

    def lift(a: Any) -> Any:
        return d3.Lift(a, lift_basis, -1)

    names.update(ez=ez, lift=lift, Lz=1.0, grad_u=d3.grad(names["u"]) + ez * lift(names["tau_u1"]),
                 grad_b=d3.grad(names["b"]) + ez * lift(names["tau_b1"]),
                 **{n: getattr(d3, n) for n in ("grad", "div", "trace", "integ")})
    return unknowns, names


def plates(problem: Any, bottom: str) -> None:
    """The example's plates: b = ``bottom`` at z = 0 and 0 at z = 1, u = 0 at both; the pressure gauge."""
    problem.add_equation("trace(grad_u) + tau_p = 0")
    for equation in (f"b(z=0) = {bottom}", "u(z=0) = 0", "b(z=Lz) = 0", "u(z=Lz) = 0", "integ(p) = 0"):
        problem.add_equation(equation)


def convection(nx: int, nz: int, ra: float, pr: float, lx: float) -> tuple[Any, ...]:
    """Dedalus' 2D Rayleigh-Benard IVP on nx x nz modes under RK222 (the case above): the solver, its set-up
    seconds (wall, CPU), the equations' names (fields b and u among them), the x and z grids (shapes (nx, 1) and
    (1, nz)) and the coordinates."""
    import dedalus.public as d3
    import numpy as np

    coords = d3.CartesianCoordinates("x", "z")
    dist = d3.Distributor(coords, dtype=np.float64)
    xbasis = d3.RealFourier(coords["x"], size=nx, bounds=(0, lx), dealias=3 / 2)
    zbasis = d3.ChebyshevT(coords["z"], size=nz, bounds=(0, 1.0), dealias=3 / 2)
    unknowns, names = fields(dist, coords, xbasis, zbasis)
    names.update(kappa=(ra * pr) ** -0.5, nu=(ra / pr) ** -0.5)
    problem = d3.IVP(unknowns, namespace=names)
    problem.add_equation("dt(b) - kappa*div(grad_b) + lift(tau_b2) = - u@grad(b)")
    problem.add_equation("dt(u) - nu*div(grad_u) + grad(p) - b*ez + lift(tau_u2) = - u@grad(u)")
    plates(problem, "Lz")
    c0, t0 = time.process_time(), time.perf_counter()
    solver = problem.build_solver(d3.RK222)
    setup = (time.perf_counter() - t0, time.process_time() - c0)
    x, z = dist.local_grids(xbasis, zbasis)
    return solver, setup, names, x, z, coords


def example(nx: int, nz: int, ra: float = 1e6, pr: float = 1.0) -> tuple[Any, tuple[float, float], dict[str, Any],
                                                                      Any]:
    """The step case: the example's solver at Lx = 4 and its start (noise 1e-3 damped at the plates, seed 42), its
    set-up seconds, the equations' names and the coordinates."""
    solver, setup, names, _, z, coords = convection(nx, nz, ra, pr, 4.0)
    b = names["b"]
    b.fill_random("g", seed=42, distribution="normal", scale=1e-3)
    b["g"] *= z * (1 - z)
    b["g"] += 1 - z
    return solver, setup, names, coords


def nusselt_tasks(names: dict[str, Any], coords: Any, lx: float, kappa: float) -> dict[str, Any]:
    """Nu through each plate (-d<b>/dz there, <.> the horizontal mean) and through the volume (1 + <w b> / kappa,
    <.> the volume mean of the depth-1 box): the operators to evaluate."""
    import dedalus.public as d3

    b, u, ez = names["b"], names["u"], names["ez"]
    mean_dz_b = d3.Integrate(d3.Differentiate(b, coords["z"]), coords["x"]) / lx
    return {"bottom": -mean_dz_b(z=0), "top": -mean_dz_b(z=1),
            "volume": 1 + d3.Integrate(d3.Integrate((u @ ez) * b, coords["x"]), coords["z"]) / (lx * kappa)}


def evaluate(tasks: dict[str, Any]) -> dict[str, float]:
    """The value of each of ``nusselt_tasks`` now."""
    import numpy as np

    return {name: float(np.real(task.evaluate()["g"]).ravel()[0]) for name, task in tasks.items()}


#: Moser, Kim & Mansour's (1999) box, as configs/channel_retau180.yaml: 4 pi h streamwise (x), 4 pi h / 3 spanwise
#: (y), 2 h across the plates (z, from 0 to 2)
CHANNEL_BOX = (4 * math.pi, 4 * math.pi / 3, 2.0)


def channel(nx: int, ny: int, nz: int, re: float = 2800.0, amplitude: float = 0.3, seed: int = 42
            ) -> tuple[Any, tuple[float, float], dict[str, Any]]:
    """The ``channel`` case: a pressure-driven channel in Moser, Kim & Mansour's box on nx x ny x nz modes under
    RK222, started from laminar Poiseuille flow plus ``amplitude`` of noise damped at the plates (seed ``seed``;
    0: the laminar profile alone). Returns the solver, its set-up seconds (wall, CPU) and the velocity field ``u``
    with the laminar profile ``U`` on the grid of z, shape (1, 1, nz)."""
    import dedalus.public as d3
    import numpy as np

    coords = d3.CartesianCoordinates("x", "y", "z")
    dist = d3.Distributor(coords, dtype=np.float64)
    xbasis = d3.RealFourier(coords["x"], size=nx, bounds=(0, CHANNEL_BOX[0]), dealias=3 / 2)
    ybasis = d3.RealFourier(coords["y"], size=ny, bounds=(0, CHANNEL_BOX[1]), dealias=3 / 2)
    zbasis = d3.ChebyshevT(coords["z"], size=nz, bounds=(0, CHANNEL_BOX[2]), dealias=3 / 2)
    bases, plates_ = (xbasis, ybasis, zbasis), (xbasis, ybasis)
    p, u = dist.Field(name="p", bases=bases), dist.VectorField(coords, name="u", bases=bases)
    tau_p = dist.Field(name="tau_p")
    tau_u1 = dist.VectorField(coords, name="tau_u1", bases=plates_)
    tau_u2 = dist.VectorField(coords, name="tau_u2", bases=plates_)
    ex, _, ez = coords.unit_vector_fields(dist)
    lift_basis = zbasis.derivative_basis(1)

    def lift(a: Any) -> Any:
        return d3.Lift(a, lift_basis, -1)

    names = {"p": p, "u": u, "tau_p": tau_p, "tau_u1": tau_u1, "tau_u2": tau_u2, "ex": ex, "lift": lift,
             "nu": 1 / re, "G": 2 / re, "Lz": CHANNEL_BOX[2], "grad_u": d3.grad(u) + ez * lift(tau_u1),
             **{n: getattr(d3, n) for n in ("grad", "div", "trace", "integ")}}
    problem = d3.IVP([p, u, tau_p, tau_u1, tau_u2], namespace=names)
    problem.add_equation("trace(grad_u) + tau_p = 0")
    problem.add_equation("dt(u) - nu*div(grad_u) + grad(p) + lift(tau_u2) = G*ex - u@grad(u)")
    for equation in ("u(z=0) = 0", "u(z=Lz) = 0", "integ(p) = 0"):
        problem.add_equation(equation)
    c0, t0 = time.process_time(), time.perf_counter()
    solver = problem.build_solver(d3.RK222)
    setup = (time.perf_counter() - t0, time.process_time() - c0)
    *_, z = dist.local_grids(*bases)
    laminar = z * (2 - z)  # 1 - (z - 1)^2: U_c = 1, its gradient G = 2 nu balancing the viscous stress
    if amplitude:
        u.fill_random("g", seed=seed, distribution="normal", scale=amplitude)
        u["g"] *= (z * (2 - z)) ** 2
    u["g"][0] += laminar
    return solver, setup, {"u": u, "U": laminar}


def laminar_drift(nx: int, ny: int, nz: int, dt: float, steps: int) -> float:
    """The largest departure of the velocity from laminar Poiseuille flow after ``steps`` steps of the ``channel``
    case started on it without noise (a steady state: round-off)."""
    import numpy as np

    solver, _, start = channel(nx, ny, nz, amplitude=0.0)
    for _ in range(steps):
        solver.step(dt)
    u = start["u"]
    u.change_scales(1)
    return float(max(np.abs(u["g"][0] - start["U"]).max(), np.abs(u["g"][1:]).max()))


def size(text: str) -> tuple[int, ...]:
    """``NXxNZ`` as (nx, nz), or a box's ``NXxNYxNZ`` as (nx, ny, nz)."""
    return tuple(int(n) for n in text.lower().split("x"))


def peer_name(case: str) -> str:
    import dedalus

    return f"dedalus {dedalus.__version__} {case}, float64, 1 process, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"


def step_times(make: Any, sizes: tuple[int, ...], dt: float, warmup: int, steps: int) -> dict[str, Any]:
    """Set-up, first step and the median of ``steps`` timed steps after ``warmup`` of the solver ``make(*sizes)``
    returns first, with its set-up seconds (wall, CPU) second; the process' peak resident memory so far."""
    solver, setup = make(*sizes)[:2]
    c0, t0 = time.process_time(), time.perf_counter()
    solver.step(dt)
    first = (time.perf_counter() - t0, time.process_time() - c0)
    for _ in range(warmup):
        solver.step(dt)
    samples = []
    c0 = time.process_time()
    for _ in range(steps):
        t0 = time.perf_counter()
        solver.step(dt)
        samples.append(time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / steps
    return {"dt": dt, "setup_s": round(setup[0], 4), "setup_cpu_s": round(setup[1], 4),
            "first_step_s": round(first[0], 4), "first_step_cpu_s": round(first[1], 4),
            "ms_per_step": round(1e3 * statistics.median(samples), 3),
            "ms_per_step_min": round(1e3 * min(samples), 3), "cpu_ms_per_step": round(1e3 * cpu, 3),
            "steps_timed": steps, "max_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)}


def launch(nx: int, nz: int, dt: float) -> dict[str, float]:
    """A fresh process of this script (``launch`` below) from its start to the end of its 1st and 11th steps (wall
    seconds), and the CPU seconds of that whole process, its exit included."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "launch", "--size", f"{nx}x{nz}", "--dt", str(dt)],
                            stdout=subprocess.PIPE, text=True)
    seen = {}
    for line in proc.stdout:
        if line.startswith("step "):
            seen[int(line.split()[1])] = time.perf_counter() - t0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.wait() != 0:
        raise RuntimeError(f"the launch at {nx}x{nz} failed (exit {proc.returncode})")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"to_step_1_s": round(seen[1], 3), "to_step_11_s": round(seen[11], 3), "launch_cpu_s": round(cpu, 3)}


def serve(make: Any, sizes: list[tuple[int, ...]], dt: float, warmup: int, name: str) -> None:
    """Steps on request: ``ready NAME`` once the solver ``make(*size)`` returns first is set up and warmed up at
    every size, then for each stdin line ``NX [NY] NZ STEPS`` that many steps of that size and their wall and CPU
    seconds (``time.process_time``)."""
    solvers = {s: make(*s)[0] for s in sizes}
    for solver in solvers.values():
        for _ in range(1 + warmup):
            solver.step(dt)
    print(f"ready {name}", flush=True)
    for line in sys.stdin:
        *shape, steps = (int(v) for v in line.split())
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            solvers[tuple(shape)].step(dt)
        print(f"{time.perf_counter() - t0:.6f} {time.process_time() - c0:.6f}", flush=True)


def linear(ra: float, pr: float, k: float, nz: int, marginal: bool = False) -> Any:
    """The finite eigenvalues of the linearised no-slip problem at wavenumber k on nz modes (Dedalus'
    examples/evp_1d_rayleigh_benard): growth rates sigma in free-fall units, or (``marginal``) the Rayleigh numbers
    of marginal stability, in thermal-diffusion units where Pr drops out."""
    import dedalus.public as d3
    import numpy as np
    from mpi4py import MPI

    coords = d3.CartesianCoordinates("x", "z")
    dist = d3.Distributor(coords, dtype=np.complex128, comm=MPI.COMM_SELF)
    xbasis = d3.ComplexFourier(coords["x"], size=2, bounds=(0, 2 * np.pi / k))
    zbasis = d3.ChebyshevT(coords["z"], size=nz, bounds=(0, 1.0))
    unknowns, names = fields(dist, coords, xbasis, zbasis)
    lam = dist.Field(name="lam")
    names["lam"] = lam
    if not marginal:
        names.update(kappa=(ra * pr) ** -0.5, nu=(ra / pr) ** -0.5)
    problem = d3.EVP(unknowns, eigenvalue=lam, namespace=names)
    if marginal:
        problem.add_equation("- div(grad_b) + lift(tau_b2) - ez@u = 0")
        problem.add_equation("- div(grad_u) + grad(p) - lam*b*ez + lift(tau_u2) = 0")
    else:
        problem.add_equation("lam*b - kappa*div(grad_b) + lift(tau_b2) - ez@u = 0")
        problem.add_equation("lam*u - nu*div(grad_u) + grad(p) - b*ez + lift(tau_u2) = 0")
    plates(problem, "0")
    solver = problem.build_solver(entry_cutoff=0)
    [sub] = [s for s in solver.subproblems if s.group[0] != 0]  # the wavenumber k, not the mean
    solver.solve_dense(sub)
    values = solver.eigenvalues
    return values[np.isfinite(values)]


#: eigenvalues beyond this size are the tau method's spurious ones (physical growth rates are O(1) in free-fall units)
SPURIOUS = 1e4


def growth_rate(ra: float, pr: float, k: float, nz: int) -> float:
    """The largest real part of the finite, non-spurious eigenvalues sigma at (Ra, Pr, k) on nz modes."""
    import numpy as np

    sigma = linear(ra, pr, k, nz)
    return float(np.max(sigma[np.abs(sigma) < SPURIOUS].real))


def marginal_rayleigh(k: float, nz: int) -> float:
    """The smallest positive real Rayleigh number of marginal stability at wavenumber k."""
    import numpy as np

    ra = linear(float("nan"), float("nan"), k, nz, marginal=True)  # Ra and Pr are not the problem's numbers
    real = ra[(np.abs(ra.imag) < 1e-9 * np.abs(ra)) & (ra.real > 0)].real
    return float(real.min())


def onset(nz: int) -> tuple[float, float]:
    """(Ra_c, k_c): the marginal Rayleigh number minimised over k (scipy's bounded Brent, as the project's)."""
    import scipy.optimize

    found = scipy.optimize.minimize_scalar(lambda k: marginal_rayleigh(k, nz), bounds=(2.5, 3.7),
                                           method="bounded", options={"xatol": 1e-7})
    return float(found.fun), float(found.x)


def orr_sommerfeld(re: float, alpha: float, nz: int) -> complex:
    """The least stable Orr-Sommerfeld eigenvalue c of plane Poiseuille flow (the ``orr`` case) on nz modes."""
    import dedalus.public as d3
    import numpy as np

    coord = d3.Coordinate("y")
    dist = d3.Distributor(coord, dtype=np.complex128)
    ybasis = d3.ChebyshevT(coord, size=nz, bounds=(-1, 1))
    phi = dist.Field(name="phi", bases=ybasis)
    taus = [dist.Field(name=f"tau{i}") for i in range(1, 5)]
    c = dist.Field(name="c")
    u = dist.Field(name="U", bases=ybasis)
    u["g"] = 1 - dist.local_grid(ybasis) ** 2
    lift_basis = ybasis.derivative_basis(4)

    def dy(a: Any) -> Any:
        return d3.Differentiate(a, coord)

    def lap(a: Any) -> Any:
        return dy(dy(a)) - alpha**2 * a

    def lift(a: Any, k: int) -> Any:
        return d3.Lift(a, lift_basis, k)

    names = {"phi": phi, "c": c, "U": u, "dy": dy, "lap": lap, "lift": lift, "alpha": alpha, "Re": re,
             **{f"tau{i}": tau for i, tau in enumerate(taus, 1)}}
    problem = d3.EVP([phi, *taus], eigenvalue=c, namespace=names)
    # U'' = -2
    problem.add_equation("(U - c)*lap(phi) + 2*phi - lap(lap(phi))/(1j*alpha*Re) + lift(tau1,-1) + lift(tau2,-2)"
                         " + lift(tau3,-3) + lift(tau4,-4) = 0")
    for equation in ("phi(y=-1) = 0", "phi(y=1) = 0", "dy(phi)(y=-1) = 0", "dy(phi)(y=1) = 0"):
        problem.add_equation(equation)
    solver = problem.build_solver()
    solver.solve_dense(solver.subproblems[0])
    values = solver.eigenvalues
    # a wave's phase speed lies within the flow's velocities, 0 to 1: the tau method's spurious values do not
    values = values[np.isfinite(values) & (np.abs(values) < 10)]
    return complex(values[np.argmax(values.imag)])


def nusselt(nx: int, nz: int, ra: float, pr: float, k: float, dt: float, tol: float, max_steps: int
            ) -> dict[str, Any]:
    """A steady roll (the case above): Nu through each plate and through the volume once it is steady."""
    import numpy as np

    lx = 2 * np.pi / k
    solver, _, names, x, z, coords = convection(nx, nz, ra, pr, lx)
    names["b"]["g"] = 1 - z + 0.1 * np.sin(np.pi * z) * np.cos(k * x)
    tasks = nusselt_tasks(names, coords, lx, (ra * pr) ** -0.5)
    last, change = evaluate(tasks), np.inf
    while solver.iteration < max_steps:
        for _ in range(100):
            solver.step(dt)
        now = evaluate(tasks)
        change = max(abs(now[n] - last[n]) for n in now)
        last = now
        if change < tol:
            break
    return {"nx": nx, "nz": nz, "ra": ra, "pr": pr, "k": k, "lx": lx, "dt": dt, "steps": solver.iteration,
            "time": solver.sim_time, "change_over_100_steps": change, "steady": bool(change < tol),
            "nu_bottom": last["bottom"], "nu_top": last["top"], "nu_volume": last["volume"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["step", "launch", "evp", "onset", "nusselt", "orr", "channel", "poiseuille"])
    parser.add_argument("--sizes", type=size, nargs="+", default=None,
                        help="step: NXxNZ ... (256x64 1024x256); channel: NXxNYxNZ ... (64x64x64)")
    parser.add_argument("--size", type=size, default=None, help="nusselt, launch: NXxNZ (32x16); poiseuille: "
                                                                "NXxNYxNZ (16x16x17)")
    parser.add_argument("--dt", type=float, default=None,
                        help="fixed time step (step, launch, channel, poiseuille: 0.005, far inside the CFL limit of "
                             "the flow's first thousand steps at every size; nusselt: 0.1)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20, help="step, channel: timed steps per size; poiseuille: "
                                                              "the steps taken")
    parser.add_argument("--no-launch", action="store_true", help="step: skip the fresh-process launch timing")
    parser.add_argument("--ra", type=float, nargs="+", default=None,
                        help="evp: Rayleigh numbers (default 1500 2000); nusselt: one (default 2000)")
    parser.add_argument("--pr", type=float, default=1.0)
    parser.add_argument("--k", type=float, default=3.117, help="evp, nusselt: the horizontal wavenumber")
    parser.add_argument("--nz", type=int, default=None, help="evp, onset: Chebyshev modes (48); orr: (128)")
    parser.add_argument("--re", type=float, default=1e4, help="orr: the Reynolds number (centreline, half gap)")
    parser.add_argument("--alpha", type=float, default=1.0, help="orr: the streamwise wavenumber")
    parser.add_argument("--tol", type=float, default=1e-11, help="nusselt: steady once Nu moves less in 100 steps")
    parser.add_argument("--max-steps", type=int, default=20000)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--serve", action="store_true",
                        help="step, channel: step on request (stdin 'NX [NY] NZ STEPS' -> stdout seconds) for a "
                             "benchmark")
    args = parser.parse_args()
    box = args.case in ("channel", "poiseuille")
    sizes = args.sizes or ([(64, 64, 64)] if box else [(256, 64), (1024, 256)])
    one = args.size or ((16, 16, 17) if box else (32, 16))
    if any(len(s) != (3 if box else 2) for s in [*sizes, one]):
        parser.error(f"--sizes/--size: {args.case} takes {'NXxNYxNZ' if box else 'NXxNZ'}")

    import dedalus.public  # noqa: F401 - configures Dedalus' logging, quietened next

    quiet()
    nz = args.nz or (128 if args.case == "orr" else 48)
    report: dict[str, Any]
    if args.case == "launch":  # a fresh process's first 11 steps, for ``step``'s launch timing
        solver, *_ = example(*one)
        for i in range(1, 12):
            solver.step(args.dt)
            print(f"step {i}", flush=True)
        return
    if args.case == "step":
        dt = args.dt or 0.005
        name = peer_name("2D Rayleigh-Benard example (no-slip, Lx = 4, Ra = 1e6, Pr = 1, RK222, RealFourier x "
                         "ChebyshevT, dealias 3/2)")
        if args.serve:
            serve(example, sizes, dt, args.warmup, name)
            return
        rows = []
        for nx, nz in sizes:
            row = {"nx": nx, "nz": nz, **step_times(example, (nx, nz), dt, args.warmup, args.steps)}
            if not args.no_launch:
                row.update(launch(nx, nz, dt))
            rows.append(row)
            print(json.dumps(row), flush=True)
        report = {"peer": name, "case": "step", "rows": rows}
    elif args.case == "channel":
        dt = args.dt or 0.005
        name = peer_name("channel (no-slip plates, Moser-Kim-Mansour box 4 pi x 4 pi/3 x 2, Re = 2800, fixed pressure "
                         "gradient, laminar Poiseuille plus noise 0.3, RK222, RealFourier^2 x ChebyshevT, dealias 3/2)")
        if args.serve:
            serve(channel, sizes, dt, args.warmup, name)
            return
        rows = []
        for shape in sizes:
            rows.append({"size": "x".join(map(str, shape)), **step_times(channel, shape, dt, args.warmup, args.steps)})
            print(json.dumps(rows[-1]), flush=True)
        report = {"peer": name, "case": "channel", "rows": rows}
    elif args.case == "poiseuille":
        dt = args.dt or 0.005
        name = peer_name("laminar plane Poiseuille flow, the channel case without noise (RK222)")
        report = {"peer": name, "case": "poiseuille", "size": "x".join(map(str, one)), "dt": dt, "steps": args.steps,
                  "max_departure": laminar_drift(*one, dt, args.steps)}
        print(json.dumps(report), flush=True)
    elif args.case == "evp":
        name = peer_name("linear no-slip Rayleigh-Benard EVP (dense, ChebyshevT), free-fall units")
        rows = []
        for ra in args.ra or [1500.0, 2000.0]:
            fine = growth_rate(ra, args.pr, args.k, 3 * nz // 2)
            coarse = growth_rate(ra, args.pr, args.k, nz)
            rows.append({"ra": ra, "pr": args.pr, "k": args.k, "nz": nz, "growth_rate": coarse,
                         "growth_rate_fine": fine, "nz_fine": 3 * nz // 2})
            print(json.dumps(rows[-1]), flush=True)
        report = {"peer": name, "case": "evp", "rows": rows}
    elif args.case == "onset":
        name = peer_name("no-slip Rayleigh-Benard marginal stability EVP (dense, ChebyshevT), Ra the eigenvalue")
        ra_c, k_c = onset(nz)
        report = {"peer": name, "case": "onset", "nz": nz, "ra_c": ra_c, "k_c": k_c,
                  "ra_at_k": {"k": args.k, "ra": marginal_rayleigh(args.k, nz)}}
        print(json.dumps(report), flush=True)
    elif args.case == "orr":
        name = peer_name("Orr-Sommerfeld EVP of plane Poiseuille flow (dense, ChebyshevT)")
        c, fine = orr_sommerfeld(args.re, args.alpha, nz), orr_sommerfeld(args.re, args.alpha, 3 * nz // 2)
        report = {"peer": name, "case": "orr", "re": args.re, "alpha": args.alpha, "nz": nz, "c": [c.real, c.imag],
                  "nz_fine": 3 * nz // 2, "c_fine": [fine.real, fine.imag]}
        print(json.dumps(report), flush=True)
    else:
        if args.ra and len(args.ra) != 1:
            parser.error(f"--ra {' '.join(map(str, args.ra))}: nusselt takes one Rayleigh number")
        [ra] = args.ra or [2000.0]
        name = peer_name("steady no-slip Rayleigh-Benard roll (RK222, RealFourier x ChebyshevT, dealias 3/2)")
        row = nusselt(*one, ra, args.pr, args.k, args.dt or 0.1, args.tol, args.max_steps)
        report = {"peer": name, "case": "nusselt", **row}
        print(json.dumps(report), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
