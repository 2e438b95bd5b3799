"""The flows' own messages, logged through Prefect's run logger.

Flows run with ``log_prints=False``: with it on, Prefect copies every ``print`` made in a flow
or task into the run's logs, libraries' output included (a retraining run's logs were a quarter
Python bytecode dumped by a dependency). The flows' own messages go through :func:`say`.
"""

from __future__ import annotations


def say(message: str) -> None:
    """Log ``message`` (INFO) to the current flow or task run; print it outside a run."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        get_run_logger().info(message)
    except MissingContextError:
        print(message)
