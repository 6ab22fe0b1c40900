"""The ``ragmeter`` console script's group: its commands are declared in ``cli.group`` and
imported when they run."""

from ragmeter.cli.group import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
