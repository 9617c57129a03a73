"""Harness adapters: the only places that import a harness (one folder each)."""
