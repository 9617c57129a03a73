"""Protocols: one package per paper's way of measuring critics (data, prompts, parsing rules, scoring)."""
