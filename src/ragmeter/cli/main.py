"""The ``ragmeter`` console script: the group with every command module's commands added."""

from ragmeter.cli import compare, datasets, eval, plugins, runs, server, trec  # noqa: F401
from ragmeter.cli.app import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
