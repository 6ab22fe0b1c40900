"""LLM judges (see the judges issue)."""
