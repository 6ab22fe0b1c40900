"""Writing the generated cases: one JSON object a line, atomically (a temporary file in the
same folder, then a rename), so a reader never sees a half-written file and an existing file
is replaced only by a complete one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ragmeter.models import Case


def write_cases(path: Path, cases: list[Case]) -> None:
    """Write ``cases`` to ``path`` (refuses an empty list: an empty dataset is never
    written)."""
    if not cases:
        raise ValueError("no cases to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for case in cases:
                record = case.model_dump(mode="json", exclude_defaults=True)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
