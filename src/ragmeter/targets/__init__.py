"""Targets: the systems under test (HTTP, Python callable, replay, built-in reference)."""

from __future__ import annotations

from typing import Any

from ragmeter.config import TargetConfig
from ragmeter.registry import registry
from ragmeter.targets.base import Target, TargetError, parse_target_spec

__all__ = ["Target", "TargetError", "build_target", "parse_target_spec"]


def build_target(config: TargetConfig, **extra: Any) -> Target:
    if config.type == "reference" and (
        config.response_mapping or config.response_format not in ("auto", "native")
    ):
        from ragmeter.errors import InputError

        raise InputError(
            "the reference target answers in ragmeter's own format: response_mapping and "
            "response_format apply to http, python and replay targets"
        )
    target_class = registry.get("targets", config.type)
    target: Target = target_class(config, **extra)
    return target
