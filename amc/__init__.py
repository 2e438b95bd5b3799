"""Agentic Monte Carlo."""
