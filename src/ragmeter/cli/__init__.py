"""The ``ragmeter`` command line: one module per command group over the public API
(``ragmeter.cli.main:main`` is the console script)."""
