"""Sequential importance resampling: pure maths (weights, resampling, schedules, the population
state and its kernel functions) and the driver.

Only :mod:`amc.smc.kernel` (the step kernel's I/O half) and :mod:`amc.smc.sampler` (the loop
of :func:`~amc.smc.sampler.run_task`) touch environments, priors and value functions; the
other modules are functions over arrays and frozen records with no I/O.
"""
