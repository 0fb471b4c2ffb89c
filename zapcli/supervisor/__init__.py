"""Processes (SPEC §5, §6.2, kill in §3): launching detached children, liveness
by pid + create time, killing whole trees, capped output pumps.
Imports psutil, `zapcli.redact`; never the trail.
"""
