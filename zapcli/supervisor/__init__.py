"""Processes (docs/explanation/rules.md#output-capture, docs/explanation/rules.md#status, kill in docs/explanation/rules.md#commands): launching detached children, liveness
by pid + create time, killing whole trees, capped output pumps.
Imports psutil, `zapcli.redact`; never the trail.
"""
