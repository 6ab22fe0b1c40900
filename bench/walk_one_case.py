"""Which of ragmeter's modules one case passes through: ``ragmeter eval --samples 1`` on the
demo, scored in this process (``RAGMETER_SCORE_WHILE_ASKING=false``), every thread profiled.
Prints how many modules ran a function (import-time code aside) and were imported, of all
modules, and the modules by subpackage.

    python bench/walk_one_case.py [--list]
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import ragmeter

ROOT = str(Path(ragmeter.__file__).parent) + os.sep


def main() -> None:
    ran: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_name != "<module>" and code.co_filename.startswith(ROOT):
            ran.add(code.co_filename[len(ROOT) :])

    os.environ["RAGMETER_SCORE_WHILE_ASKING"] = "false"
    from ragmeter.cli.main import main as cli

    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        sys.setprofile(profile)
        threading.setprofile(profile)
        try:
            cli(["eval", "--no-progress", "--samples", "1"], standalone_mode=False)
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    imported = {m for m in sys.modules if m.startswith("ragmeter.")}
    every = sorted(str(p.relative_to(ROOT)) for p in Path(ROOT).rglob("*.py"))
    print(f"modules that ran a function: {len(ran)} of {len(every)}; imported: {len(imported)}")
    by_package = Counter(name.split(os.sep)[0] if os.sep in name else "(top)" for name in ran)
    print(", ".join(f"{package} {count}" for package, count in sorted(by_package.items())))
    if "--list" in sys.argv:
        print("\n".join(sorted(ran)))


if __name__ == "__main__":
    main()
