"""``critic-eval revise``: score saved generations of the revision tasks (MultiCritique, RCO).

    critic-eval revise OUTPUT_PATH [--output results.json] [--model JUDGE ...]

Reads lm-eval's ``--log_samples`` files of ``critic_revision_pool*`` / ``critic_utility*`` (a run whose scoring
was deferred, a rescued run, or a finished one to re-score), runs the same pipeline as the in-run filter (revisers:
``CRITIC_REVISER_*`` or the ``CRITIC_REVISERS`` pool; judge: ``CRITIC_JUDGE_*``, overridden by the flags), through
the same caches, and prints / writes the same metrics, with every model involved and the prompt versions. Exit 1
when a call failed or a verdict was unreadable (counted per item; rerun to retry, or ``--allow_failures``). The prompts
are the variant the samples were generated with (recorded in each document); ``--failure_rule`` re-scores them under
another rule for missing verdicts and revisions (default: the run's).
"""

from __future__ import annotations

import json
import sys

from critic_tasks import registry
from critic_tasks.cli.judge import find_sample_files, judge_overrides, read_samples, saved_samples_parser
from critic_tasks.core.errors import ConfigError
from critic_tasks.engine import kind_metrics, score
from critic_tasks.protocols.scorer import Context


def revise_command(argv: list[str]) -> int:
    from critic_tasks.protocols.revision import pipeline
    from critic_tasks.protocols.revision.scoring import per_reviser_pass_rates
    from critic_tasks.sandbox import get_executor

    parser = saved_samples_parser("critic-eval revise", "Revise and judge saved critiques (MultiCritique, RCO).",
                                  "some reviser / judge calls failed or verdicts were unreadable")
    parser.add_argument("--executor", default=None, help="code executor (default: CRITIC_EXECUTOR or sandbox)")
    parser.add_argument("--failure_rule", default=None,
                        help="what a missing verdict or revision counts as: exclude, tie or zero (default: the rule "
                             "the samples were generated with)")
    args = parser.parse_args(argv)
    from critic_tasks.protocols.revision.data import resolve_failure_rule

    rule = resolve_failure_rule(args.failure_rule) if args.failure_rule is not None else None
    judge = pipeline.judge_settings(**judge_overrides(args))
    revisers = pipeline.reviser_pool()
    executor = get_executor(args.executor)  # None: CRITIC_EXECUTOR's

    results, failed, pass_rates, involved, n_items = {}, {}, {}, {}, 0
    for task, path in find_sample_files(args.path).items():
        scorer = registry.SCORERS[registry.TASKS[task].scorer] if task in registry.TASKS else None
        if scorer is None or scorer.command != "revise":
            continue
        kind = registry.TASKS[task].kind_spec
        docs, critiques = read_samples(path)
        if not docs:
            continue
        if rule is not None:
            docs = [{**d, "failure_rule": rule} for d in docs]
        why = pipeline.missing(kind.protocol, docs, revisers, judge)
        if why:
            raise ConfigError(f"{task}: set {why}")
        n_items += len(docs)
        print(f"revising {task}: {len(docs)} critiques from {path}", file=sys.stderr)
        records = score(kind, docs, [[c] for c in critiques], Context(executor=executor, judge=judge, revisers=revisers,
                                                                     progress=not args.no_progress))
        results[task] = {k: v for k, v in kind_metrics(kind, records).items() if k != "models"}  # models: once
        pass_rates[task] = per_reviser_pass_rates(records)
        involved[task] = pipeline.models(revisers, judge, kind.protocol, pipeline.run_variant(docs),
                                         pipeline.run_toolkit(docs))
        failed[task] = [{"item": r.item, "error": r.error} for r in records if scorer.failed(r)]
    if not results:
        raise ValueError(f"{args.path}: no samples of the revision tasks (critic_revision_pool*, critic_utility*)")
    first = next(iter(involved.values()))
    report = {"results": results, "per_reviser_pass_rate": pass_rates, "failed": failed, "models": first}
    if any(m != first for m in involved.values()):  # tasks of other protocols or variants: each task's own
        report["models_by_task"] = involved
    if args.output:
        args.output.write_text(json.dumps(report, indent=2))
    for task, values in results.items():
        print(f"{task}: " + "  ".join(f"{k} {v:.2f}" if isinstance(v, (int, float)) else f"{k} {v}"
                                      for k, v in values.items()))
    n_failed = sum(map(len, failed.values()))
    if n_failed and not args.allow_failures:
        print(f"critic-eval revise: {n_failed} of {n_items} items had a failed call or an unreadable verdict (listed in "
              "the log" + (", and under 'failed' in --output" if args.output else "") + "); rerunning retries the "
              "failed calls (an unreadable reply is cached and stays so), or pass --allow_failures", file=sys.stderr)
        return 1
    return 0
