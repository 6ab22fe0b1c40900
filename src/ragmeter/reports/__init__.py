"""Run reports: the JSON run file and the console scorecard."""
