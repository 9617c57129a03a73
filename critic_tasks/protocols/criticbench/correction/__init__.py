"""CriticBench's objective correction check: parse a revision, then match its answer or run it in the sandbox."""

from critic_tasks.protocols.criticbench.correction.check import check_corrections, gold_answer, parse_revisions

__all__ = ["check_corrections", "gold_answer", "parse_revisions"]
