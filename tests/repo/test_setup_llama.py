"""scripts/setup_llama.py's bounded build: a build that cannot finish in time is stopped, leaves
nothing half-built in the cache, and says why and where (exit 3), once."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup_llama.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("setup_llama", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_build_past_its_timeout_stops_and_names_cause_and_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    setup = load_script()
    monkeypatch.setenv(setup.BUILD_TIMEOUT_ENV, "0.5")
    wheels = tmp_path / "wheels"
    with pytest.raises(SystemExit) as info:
        setup.build_wheel(wheels)  # pip cannot fetch and compile llama.cpp in half a second
    assert info.value.code == 3
    message = capsys.readouterr().err
    assert "did not finish building in 0.5 s" in message
    assert str(wheels) in message and setup.BUILD_TIMEOUT_ENV in message
    assert not list(wheels.glob("*.whl"))
    assert [p.name for p in tmp_path.iterdir()] in ([], ["wheels"])  # no scratch folder kept


def test_a_timeout_that_is_not_a_number_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    setup = load_script()
    monkeypatch.setenv(setup.BUILD_TIMEOUT_ENV, "soon")
    with pytest.raises(SystemExit) as info:
        setup.build_timeout_s()
    assert setup.BUILD_TIMEOUT_ENV in str(info.value) and "'soon'" in str(info.value)
