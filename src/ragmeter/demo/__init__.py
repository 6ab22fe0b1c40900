"""The bundled demo: a fictional handbook and product corpus with labelled cases."""

from pathlib import Path

DEMO_DIR = Path(__file__).parent
DEMO_CASES = DEMO_DIR / "cases.jsonl"
DEMO_CORPUS = DEMO_DIR / "corpus"
