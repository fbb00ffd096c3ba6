"""Time stepping: schemes as registered data (:mod:`.schemes`, no JAX), their implementations as
step factories over an equation (:mod:`.integrators`), and step-size control outside the schemes
(:mod:`.control`)."""
