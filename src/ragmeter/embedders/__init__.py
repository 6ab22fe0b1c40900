"""Embedders (see the offline-metrics issue)."""
