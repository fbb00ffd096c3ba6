"""The no-slip wall-normal direction's numerics: a Chebyshev basis on the Gauss-Lobatto points and what steps a
field across it.

* :mod:`~simulator.walls.chebyshev`: the points, the transforms (a DCT-I by FFT), differentiation, integration
  weights and the 3/2 padding of products;
* :mod:`~simulator.walls.banded`: a batched banded solve (one sub-diagonal, partial pivoting), O(N) per mode;
* :mod:`~simulator.walls.helmholtz`: Helmholtz problems with Dirichlet or Neumann conditions, a Galerkin basis
  and the second-integral quasi-inverse (Shen 1994; Julien & Watson 2009), banded per horizontal mode;
* :mod:`~simulator.walls.wall_normal`: the wall-normal velocity of Kim, Moin & Moser (1987), its fourth-order
  problem as two Helmholtz solves and an influence matrix: divergence-free, no-slip to round-off;
* :mod:`~simulator.walls.flow`: the flow between no-slip plates per horizontal mode (wall-normal velocity and
  vorticity, mean flow, scalars), its mass operator and stage solves, stepped by the IMEX scheme it is handed
  (:mod:`simulator.time.imex`: RK111, RK222, RK443; :mod:`simulator.time.multistep`: SBDF2);
* :mod:`~simulator.walls.eigen`: independent dense eigenvalue solvers (numpy/scipy): Rayleigh-Benard onset and
  the Orr-Sommerfeld problem;
* :mod:`~simulator.walls.channel` and :mod:`~simulator.walls.channel_stats`: channel flows' laminar profiles,
  initial conditions, checks and wall units, and what a channel study reports (the channel is stepped by the
  equation :mod:`simulator.equations.channel2d` on the flow core).

Arrays hold the wall-normal direction on their last axis, whole on one device; leading axes are horizontal modes
(or anything else to batch over).
"""
