"""``rescore``: score a stored run again without asking the system under test."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from ragmeter.config import ConfigError, config_from_snapshot
from ragmeter.errors import InputError
from ragmeter.runfile import RunFileWriter
from ragmeter.runner import preflight
from ragmeter.runner.engine import RunOutcome, new_run_record, run_file_path, score_run
from ragmeter.runner.run import write_reports
from ragmeter.store.sqlite import RunStore


def rescore(
    store_path: str,
    run_id: str,
    changes: dict[str, Any],
    output_dir: str | None = None,
) -> RunOutcome:
    """Score a stored run again, without asking the system: a new run holds the same cases and
    responses, scored with the old config changed by ``changes`` (e.g. another judge or metric
    set). The old run and its scores stay as they were, so the two can be compared."""
    store = RunStore(store_path)
    try:
        source = store.get_run(run_id)
        if source.status != "completed":
            raise InputError(
                f"run {source.id} is {source.status}: some cases may have no answer yet; "
                f"finish it first with: ragmeter eval --resume {source.id}"
            )
        # the new run names its files only by its own --output: the old run's name would
        # overwrite the old run's files
        update = {"output": None, **changes, "store": store_path}
        if output_dir is not None:
            update["output_dir"] = output_dir
        try:
            config = config_from_snapshot({**source.config, **update})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(f"invalid option: {problems}") from exc
        preflight.check_names(config)
        preflight.check_options(config)
        preflight.check_goals(config)
        judge_info = asyncio.run(preflight.check_judges(config)) if config.judge else {}
        extras: dict[str, Any] = {
            "target_info": source.config.get("target_info"),
            "rescored_from": source.id,
        }
        if judge_info:
            extras["judge_info"] = judge_info
        record = new_run_record(
            config,
            source.datasets,
            source.question_count,
            name=config.name or f"rescore-{source.id[:8]}",
            **extras,
        )
        store.copy_answers(source.id, record)
        if source.index_stats is not None:  # the index the answers came from
            store.save_index_stats(record.id, source.index_stats)
        writer = RunFileWriter(run_file_path(record, config))
        try:
            final = score_run(store, record.id, config, sink=writer.add)
        except BaseException:
            writer.close()
            raise
        outcome = RunOutcome(final, run_file=writer.finish(final), store=store_path)
        write_reports(outcome, None)
        return outcome
    finally:
        store.close()
