"""The registry: lazy look-ups, did-you-mean, built-in names and entry-point plugins."""

from __future__ import annotations

import pytest

from ragmeter.registry import Registry, UnknownNameError


def test_registry_is_lazy_and_says_did_you_mean() -> None:
    registry = Registry()
    registry.register("targets", "mine", "json:dumps")
    assert registry.get("targets", "mine")({"a": 1}) == '{"a": 1}'
    with pytest.raises(UnknownNameError) as error:
        registry.get("targets", "refrence")
    assert "did you mean 'reference'" in str(error.value)
    assert "http" in registry.names("targets")
    assert registry.names("targets", built_in=True) == ["http", "python", "reference", "replay"]
    assert registry.names("targets", built_in=False) == ["mine"]
    assert "squad_v2" in registry.names("loaders", built_in=True)


def test_registry_loads_entry_point_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import ragmeter.registry as registry_module

    def fake_entry_points(group: str) -> list[EntryPoint]:
        if group == "ragmeter.metrics":
            return [EntryPoint("mine", "ragmeter.metrics.lexical:lexical_metrics", group)]
        return []

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    registry = Registry()
    assert "mine" in registry.names("metrics")
    from ragmeter.metrics.base import MetricSettings

    names = [m.name for m in registry.get("metrics", "mine")(MetricSettings())]
    assert names[:2] == ["exact_match", "token_f1"]
