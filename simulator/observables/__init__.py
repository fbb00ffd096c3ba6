"""What a run measures on its devices at output cadence (JAX), mesh reductions with nothing gathered: shell-summed
spectra (:mod:`.spectra`, what the equations' ``spectra`` and the spectra kind sum with), the flow's small-scale
statistics (:mod:`.statistics`, the statistics kind's device program) and the user-defined tasks (:mod:`.tasks`,
the tasks kind's). Each is written by its output kind (``simulator/output/<name>.py``) and drawn by
``simulator/plots/<name>.py``. Beside them, on the host: the time averages of a run's series and their errors
(:mod:`.averages`, NumPy only), which ``simulator plot --window`` and scripts/compare_turbulent_nu.py state."""
