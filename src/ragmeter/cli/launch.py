"""The ``ragmeter`` console script: ``ragmeter trec ...`` starts the trec command alone (click
and NumPy only, as trec_eval users expect a quick start), everything else the whole CLI."""

from __future__ import annotations

import sys


def run() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "trec":
        from ragmeter.cli.trec import standalone

        standalone(sys.argv[2:])
        return
    from ragmeter.cli.main import main

    main()
