"""What a run measures on its devices at output cadence (JAX), mesh reductions with nothing gathered: shell-summed
spectra (:mod:`.spectra`, what the equations' ``spectra`` and the spectra kind sum with), the flow's small-scale
statistics (:mod:`.statistics`, the statistics kind's device program) and the user-defined tasks (:mod:`.tasks`,
the tasks kind's). Each is written by its output kind (``simulator/output/<name>.py``) and drawn by
``simulator/plots/<name>.py``."""
