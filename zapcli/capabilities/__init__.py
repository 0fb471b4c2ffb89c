"""capabilities."""
