"""The package stays ruff- and mypy-clean (both run as part of the suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_modules_stay_small() -> None:
    """No module of the package over 500 lines; the CLI's command modules stay thin (250)."""
    package = ROOT / "src" / "ragmeter"
    too_long = []
    for path in sorted(package.rglob("*.py")):
        limit = 250 if path.parent.name == "cli" else 500
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            too_long.append(f"{path.relative_to(package)}: {lines} lines (limit {limit})")
    assert not too_long, "\n".join(too_long)


def test_no_module_level_judge_state() -> None:
    """The judge travels with its run (MetricSettings.judge); nothing sets it process-wide."""
    judges = (ROOT / "src" / "ragmeter" / "judges" / "__init__.py").read_text(encoding="utf-8")
    assert "global " not in judges and "_configured" not in judges
    for path in (ROOT / "src" / "ragmeter").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "judges.configure(" not in text and "current_settings(" not in text, path
