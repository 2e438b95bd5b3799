"""Sequential importance resampling: pure maths (weights, resampling, schedules) and the driver.

Only :mod:`amc.smc.sampler` touches environments, priors and value functions; the other
modules are functions over arrays with no I/O.
"""
