"""One module per command: `execute(**params) -> exit code`. No typer here, so
the fast path can call the same function the typer app calls."""
