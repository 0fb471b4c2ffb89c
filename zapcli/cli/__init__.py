"""The command line: argument parsing (typer, or the generated fast parser for
hot commands) and rendering (rich on a terminal, plain text or --json
otherwise). Only this room imports typer and rich; it calls `zapcli.ops`.
"""
