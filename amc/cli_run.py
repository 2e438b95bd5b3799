"""``amc run``: run methods on an environment/prior/value and print a per-method table."""

from __future__ import annotations
