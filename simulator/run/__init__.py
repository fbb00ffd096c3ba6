"""Running a simulation: the run directory (:mod:`.rundir`), stop signals (:mod:`.signals`), progress
lines (:mod:`.progress`), the simulation object (:mod:`.simulation`) and the loop (:mod:`.loop`)."""
