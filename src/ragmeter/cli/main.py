"""The ``ragmeter`` console script: the group with every command module's commands added."""

from ragmeter.cli import (  # noqa: F401
    compare,
    configure,
    datasets,
    eval,
    generate,
    index,
    plan,
    plugins,
    report,
    runs,
    serve,
    server,
    trec,
    validity,
)
from ragmeter.cli.app import main

main.add_command(trec.trec_command)  # trec.py imports no other CLI module (cli/launch.py)

__all__ = ["main"]

if __name__ == "__main__":
    main()
