"""CriticBench's objective correction check: parse a revision, then match its answer or run it in the sandbox."""

from critic_tasks.protocols.criticbench.correction.check import (
    check_by_domain,
    check_corrections,
    check_samples,
    gold_answer,
    parse_revisions,
)

__all__ = ["check_corrections", "check_samples", "check_by_domain", "gold_answer", "parse_revisions"]
