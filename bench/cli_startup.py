"""CPU time of starting the command line: ``ragmeter --help`` against Python importing click
(the floor: the group is a click group), with ``ragmeter trec --help`` and ``ragmeter eval
--help`` beside them.

Each round runs every command once, in turn (interleaved, so a change in the machine's load
reaches all of them alike); a command's figure is the median over the rounds of its process's
user + system CPU seconds (``getrusage`` of the finished child), which, unlike wall time, a busy
machine barely moves. The load average is printed beside the figures.

    python bench/cli_startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    "python -c 'import click'": [sys.executable, "-c", "import click"],
    "ragmeter --help": [str(BIN / "ragmeter"), "--help"],
    "ragmeter trec --help": [str(BIN / "ragmeter"), "trec", "--help"],
    "ragmeter eval --help": [str(BIN / "ragmeter"), "eval", "--help"],
}


def cpu_seconds(command: list[str]) -> float:
    """User + system CPU seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    for command in COMMANDS.values():  # warm the file cache and the .pyc files
        cpu_seconds(command)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    load_before = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            samples[name].append(cpu_seconds(command))
    load_after = os.getloadavg()[0]
    floor = statistics.median(samples["python -c 'import click'"])
    print(
        f"{args.rounds} interleaved rounds; load1 {load_before:.2f} before, {load_after:.2f} after"
    )
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:28s} median {median:.3f} CPU-s (min {min(values):.3f}, max {max(values):.3f})"
            f"  {median / floor:.2f}x the click import"
        )


if __name__ == "__main__":
    main()
