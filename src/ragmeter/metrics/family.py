"""Metric families as declarations: what a family is built from and what it declares.

A family registered under ``metrics`` is a :class:`MetricFamily`: its ``build`` function and the
parameters it reads, each either a run setting it narrows for this family (``ks`` of
``retrieval``) or an option of its own with a default (``max_contexts`` of ``judged``). A plain
``build(settings)`` function registered by a plugin is a family without parameters.

``-P FAMILY.PARAM=VALUE`` (config ``metric_params: {FAMILY: {PARAM: VALUE}}``) sets one
parameter of one family; the run-wide settings stay every other family's. :func:`declarations`
reads a family's metric declarations (name, group, kind, direction, inputs, ...) without a
case, a judge or an embedder, once per process for the same settings.
"""

from __future__ import annotations

import dataclasses
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.metrics.base import Metric, MetricSettings
    from ragmeter.registry import Registry
    from ragmeter.run_record import MetricDeclaration


class MetricParamError(InputError):
    """A ``-P FAMILY.PARAM=VALUE`` that names no declared parameter or has a wrong value."""


@dataclass(frozen=True)
class MetricParam:
    name: str
    help: str
    # the run setting (a MetricSettings field) this parameter sets for its family only; None:
    # an option of the family's own, read with ``settings.option(name)``
    setting: str | None = None
    default: Any = None  # an own option's default (a setting's default is EvalConfig's)

    def value_of(self, value: Any) -> Any:
        """``value`` checked and converted as the parameter's type (a list as a tuple); a
        comma-separated string gives a list setting its items."""
        from pydantic import TypeAdapter, ValidationError

        from ragmeter.config import EvalConfig

        given = value
        try:
            if self.setting is not None:
                field = EvalConfig.model_fields[self.setting]
                if isinstance(value, bool) and field.annotation not in (bool, "bool"):
                    raise MetricParamError(f"{given!r} is not a valid {self.name}: not a flag")
                if isinstance(value, str) and _is_list(field.annotation):
                    value = [item.strip() for item in value.split(",") if item.strip()]
                elif _is_list(field.annotation) and not isinstance(value, list | tuple):
                    value = [value]
                checked = EvalConfig.__pydantic_validator__.validate_assignment(
                    EvalConfig.model_construct(), self.setting, value
                )
                result = getattr(checked, self.setting)
            else:
                value_type: Any = type(self.default) if self.default is not None else Any
                result = TypeAdapter(value_type).validate_python(value, strict=value_type is bool)
        except ValidationError as exc:
            problem = "; ".join(error["msg"] for error in exc.errors())
            raise MetricParamError(f"{given!r} is not a valid {self.name}: {problem}") from None
        return tuple(result) if isinstance(result, list) else result


def _is_list(annotation: Any) -> bool:
    return "list[" in str(annotation) or "tuple[" in str(annotation)


def setting(name: str, help: str) -> MetricParam:
    """A family parameter that is the run setting ``name``, narrowed to the family."""
    return MetricParam(name, help, setting=name)


@dataclass(frozen=True)
class MetricFamily:
    build: Callable[[MetricSettings], list[Metric]]
    params: tuple[MetricParam, ...] = ()
    description: str = ""

    def __call__(self, settings: MetricSettings) -> list[Metric]:
        return self.build(settings)

    def param(self, family: str, name: str) -> MetricParam:
        """The declared parameter ``name`` (MetricParamError naming the declared ones)."""
        for param in self.params:
            if param.name == name:
                return param
        declared = ", ".join(param.name for param in self.params) or "none"
        raise MetricParamError(
            f"-P {family}.{name}: metric family {family!r} has no parameter {name!r} "
            f"(its parameters: {declared}; `ragmeter metrics --params` lists them)"
        )

    def settings_for(
        self, family: str, settings: MetricSettings, values: Mapping[str, Any]
    ) -> MetricSettings:
        """``settings`` with this family's parameters set: the run's ``values`` over the
        declared defaults of its own options."""
        changes: dict[str, Any] = {}
        options = {p.name: p.default for p in self.params if p.setting is None}
        for name, value in values.items():
            param = self.param(family, name)
            try:
                checked = param.value_of(value)
            except MetricParamError as exc:
                raise MetricParamError(f"-P {family}.{name}: {exc}") from None
            if param.setting is None:
                options[name] = checked
            else:
                changes[param.setting] = checked
        return dataclasses.replace(settings, **changes, options=types.MappingProxyType(options))


def or_own(registry: Registry | None) -> Registry:
    """``registry``, or ragmeter's own when None."""
    if registry is None:
        from ragmeter.registry import registry as ragmeters_own

        return ragmeters_own
    return registry


def metric_family(name: str, registry: Registry | None = None) -> MetricFamily:
    """The family registered as ``name`` (a plugin's plain function: no parameters) in
    ``registry`` (ragmeter's own when None)."""
    entry = or_own(registry).get("metrics", name)
    return entry if isinstance(entry, MetricFamily) else MetricFamily(entry)


def build_family(
    name: str, settings: MetricSettings, registry: Registry | None = None
) -> list[Metric]:
    """The metrics of family ``name`` under ``settings`` with the family's own parameters."""
    family = metric_family(name, registry)
    values = settings.metric_params.get(name, {})
    built = family(family.settings_for(name, settings, values))
    return [
        metric if metric.family else dataclasses.replace(metric, family=name) for metric in built
    ]


def declarations(
    name: str, settings: MetricSettings | None = None, registry: Registry | None = None
) -> list[MetricDeclaration]:
    """What family ``name`` declares under ``settings`` (the defaults when None), built
    without a judge; the same settings are built once a process."""
    from ragmeter.metrics.base import MetricSettings

    base = MetricSettings() if settings is None else dataclasses.replace(settings, judge=None)
    if registry is not None:
        return [metric.declaration() for metric in build_family(name, base, registry)]
    key = (name, repr(base))
    with _LOCK:
        found = _DECLARED.get(key)
    if found is None:
        found = tuple(metric.declaration() for metric in build_family(name, base))
        with _LOCK:
            _DECLARED[key] = found
    return list(found)


_DECLARED: dict[tuple[str, str], tuple[MetricDeclaration, ...]] = {}
_LOCK = threading.Lock()


def check_params(params: Mapping[str, Mapping[str, Any]], families: list[str]) -> None:
    """Every ``-P`` names a family of the run and a declared parameter with a valid value
    (before the first question: a misspelt one would otherwise be ignored)."""
    from ragmeter.metrics.base import MetricSettings

    for family, values in params.items():
        if family not in families:
            raise MetricParamError(
                f"-P {family}.{next(iter(values), '?')}: metric family {family!r} is not "
                f"among this run's metrics ({', '.join(families)})"
            )
        metric_family(family).settings_for(family, MetricSettings(), values)


def parse_param(text: str) -> tuple[str, str, Any]:
    """``FAMILY.PARAM=VALUE`` as (family, param, value), the value read as YAML (``0.7``,
    ``[1, 3]``, ``true``; anything else a string)."""
    import yaml

    name, equals, raw = text.partition("=")
    family, dot, param = name.strip().partition(".")
    if not (equals and dot and family and param):
        raise MetricParamError(f"-P {text!r}: write FAMILY.PARAM=VALUE, e.g. retrieval.ks=1,5")
    try:
        value = yaml.safe_load(raw) if raw.strip() else raw
    except yaml.YAMLError:
        value = raw
    # a number, a flag or a list as YAML reads it; any other text as written
    plain = isinstance(value, int | float | list) and not isinstance(value, str)
    return family, param.strip(), value if plain else raw
