"""The config file, its layers and errors, and the redaction of its secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.config import REDACTED, ConfigError, load_config, redact


def test_config_layers_defaults_yaml_env_cli(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("concurrency: 3\nseed: 5\ntarget: {type: http, url: 'http://127.0.0.1:1'}\n")
    config = load_config(
        path, {"seed": 9}, environ={"RAGMETER_CONCURRENCY": "4", "RAGMETER_SEED": "7"}
    )
    assert (config.concurrency, config.seed, config.target.type) == (4, 9, "http")
    assert load_config(None, environ={}).datasets == ["demo"]


def test_config_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("concurrency: zero\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid config: concurrency"):
        load_config(path, environ={})
    path.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(path, environ={})


def test_redaction_of_secrets_by_key_and_by_shape() -> None:
    snapshot = redact(
        {
            "target": {
                "headers": {
                    "Authorization": "Bearer abc123",
                    "X-Api-Key": "k",
                    "Accept": "json",
                    "X-Env": "${MY_TOKEN}",
                }
            },
            "api_key": "plain",
            "note": "sk-abcdefghijklmnop",
            "max_tokens": 256,
            "top_k": 5,
            "password": ["x"],
            "auth_header": "Bearer ${TOKEN}",
        }
    )
    assert snapshot["target"]["headers"] == {
        "Authorization": REDACTED,
        "X-Api-Key": REDACTED,
        "Accept": "json",
        "X-Env": "${MY_TOKEN}",
    }
    assert snapshot["api_key"] == REDACTED and snapshot["note"] == REDACTED
    assert snapshot["max_tokens"] == 256 and snapshot["password"] == [REDACTED]
    assert snapshot["auth_header"] == "Bearer ${TOKEN}"


def test_duplicate_yaml_keys_in_a_config_are_refused_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("concurrency: 4\nseed: 1\nconcurrency: 8\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"eval\.yaml:3: duplicate key 'concurrency'"):
        load_config(path, environ={})
