"""The run store's schema, as numbered migrations applied in order (``schema_migrations``
records which ran). A new table or column is a new entry at the end; entries never change."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        completed_at TEXT,
        schema_version TEXT NOT NULL,
        config_json TEXT NOT NULL,
        datasets_json TEXT NOT NULL,
        scorecard_json TEXT,
        question_count INTEGER NOT NULL DEFAULT 0,
        error_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE cases (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        PRIMARY KEY (run_id, case_id)
    );
    CREATE TABLE responses (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        status TEXT NOT NULL,
        error_type TEXT,
        error_message TEXT,
        latency_ms REAL,
        attempts INTEGER NOT NULL DEFAULT 1,
        response_json TEXT,
        PRIMARY KEY (run_id, case_id)
    );
    CREATE TABLE scores (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        status TEXT NOT NULL,
        reason TEXT,
        details_json TEXT,
        PRIMARY KEY (run_id, case_id, metric)
    );
    CREATE INDEX scores_by_metric ON scores (run_id, metric);
    """,
    # 2: the primary key serves the lookups; the extra index only slowed writes
    """
    DROP INDEX scores_by_metric;
    """,
    # 3: breakdowns, weighted score, targets and performance summary of a run (JSON)
    """
    ALTER TABLE runs ADD COLUMN extras_json TEXT;
    """,
    # 4: judge calls (every LLM judge request and reply; the judge cache reads it by key)
    """
    CREATE TABLE judge_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        cache_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        run_id TEXT,
        case_id TEXT,
        purpose TEXT NOT NULL,
        model TEXT NOT NULL,
        prompt_name TEXT NOT NULL,
        prompt_version TEXT NOT NULL,
        params_json TEXT NOT NULL,
        messages_json TEXT NOT NULL,
        output_text TEXT,
        finish_reason TEXT,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        cost_usd REAL,
        latency_ms REAL,
        cached INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        error TEXT
    );
    CREATE INDEX judge_calls_by_key ON judge_calls (cache_key);
    """,
]
