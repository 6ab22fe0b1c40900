"""Local web UI (see the web UI issue)."""
