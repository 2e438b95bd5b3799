"""Prefect 3 flows over the pipeline's library stages (see docs/pipeline.md)."""
