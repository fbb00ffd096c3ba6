"""A run's results after the fact, without JAX: its directory read back (:mod:`.load`: ``simulator.load_run``,
``simulator.load_sweep``), exported into one netCDF file or its snapshots merged (:mod:`.export`, its groups
:mod:`.export_groups`: ``simulator export``), and the Lagrangian statistics of its particle trajectories
(:mod:`.lagrangian`). Its figures are :mod:`simulator.plots`."""
