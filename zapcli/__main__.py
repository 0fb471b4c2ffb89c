"""`python -m zapcli`: the same entry point as the console script."""

from zapcli.cli.entry import main

raise SystemExit(main())
