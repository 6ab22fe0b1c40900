"""The bundled demo: a fictional handbook and product corpus with labelled cases.

The folder is a seed-003 label folder: ``cases.jsonl`` and per-perspective label files
(``pipeline_labels.jsonl``) joined by case_id, loaded by ``datasets/labels.py``.
"""

from pathlib import Path

DEMO_DIR = Path(__file__).parent
DEMO_CASES = DEMO_DIR / "cases.jsonl"
DEMO_PIPELINE_LABELS = DEMO_DIR / "pipeline_labels.jsonl"
# what the dataset ``demo`` names: the folder, so its label files are joined to the cases
DEMO_DATASET = DEMO_DIR
DEMO_CORPUS = DEMO_DIR / "corpus"
