"""Monitors: checks over a deployed model and its prior, outside the DVC stages.

- :mod:`.drift` -- the scheduled drift check of the champion value (``flows/drift.py``).
- :mod:`.calibrate` -- pass@k calibration of a prior's skill over results (``amc calibrate``).

Above the pipeline: a monitor may use the stages' shared helpers; no stage imports a monitor.
"""
