"""Plain-text tables of lm-eval-shaped results (``{task: {"metric,none": value}}``), laid out by the registry."""

from __future__ import annotations

from critic_tasks import registry
from critic_tasks.reports.results import (  # noqa: F401  (has_critic_tasks: re-exported)
    group_interval,
    has_critic_tasks,
    invalid_items,
    invalid_note,
    missing_intervals,
    prompt_note,
)

SCALE_ONLY_NOTE = ("All values are x100 (percentages and correlations), judge scores 1-10; [low, high]: 95 % "
                   "bootstrap interval.")
LEADERBOARD_NOTE = ("For scale, the published CriticEval leaderboard (test split): GPT-4-turbo feedback 63.54, "
                    "comparison 57.33, correction 69.67, meta-feedback 62.90, overall 72.55.")
SCALE_NOTE = f"{SCALE_ONLY_NOTE} {LEADERBOARD_NOTE}"


def scale_note(*results: dict) -> str:
    """The scale line under a table of ``results`` (task -> metrics), with CriticEval's leaderboard only where a
    CriticEval task is among them: JudgeBench's or RealCritic's numbers are on no scale of that leaderboard."""
    criticeval = any(registry.TASKS[name].kind_spec.protocol == "criticbench"
                     for one in results for name in one if name in registry.TASKS)
    return SCALE_NOTE if criticeval else SCALE_ONLY_NOTE


INTERVAL_NOTE = ("Values without [low, high]: no interval in these results (an lm-eval run gets them from its "
                 "samples files: run it with --output_path and --log_samples; or CRITIC_CI=off).")


def interval_note(*results: dict) -> str:
    """The one line said under the tables when a headline value of ``results`` has no interval; else ""."""
    return INTERVAL_NOTE if any(missing_intervals(r) for r in results) else ""


def render_rows(rows: list[tuple[str, ...]]) -> str:
    """Plain aligned columns (first row = header), for every table critic-eval prints."""
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip() for r in rows)


def _value(metrics: dict, key: str) -> float | None:
    value = metrics.get(f"{key},none", metrics.get(key))
    return value if isinstance(value, (int, float)) else None


def format_value(value: float | None, interval: tuple[float, float] | None = None) -> str:
    """``45.20 [41.10, 49.30]`` (value and its 95 % interval), ``45.20`` without one, ``n/a`` without a value."""
    if value is None:
        return "n/a"
    return f"{value:.2f}" + ("" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]")


def _interval(metrics: dict, key: str) -> tuple[float, float] | None:
    low, high = _value(metrics, f"{key}_ci_low"), _value(metrics, f"{key}_ci_high")
    return None if low is None or high is None else (low, high)


def _note(metrics: dict, key: str, value: float | None) -> str:
    """Why a value is what it is, where the number alone would mislead."""
    if key == "spearman" and (_value(metrics, "spearman_warnings") or 0) > 0:
        n = _value(metrics, 'spearman_warnings')
        return f"{n:.0f} undefined correlation(s) reported as 0 (constant scores, or under 2 items)"
    if key == "judge_score" and value is None and (_value(metrics, "judge_deferred") or 0) > 0:
        return f"{_value(metrics, 'judge_deferred'):.0f} items not judged yet: run `critic-eval judge <output_path>`"
    if value is None and key not in metrics and _value(metrics, "labels_available") == 0:
        return "no human labels in this split"
    if key == "accuracy" and (_value(metrics, "second_turns_missing") or 0) > 0:
        return (f"{_value(metrics, 'second_turns_missing'):.0f} replies without a verdict were not asked the authors' "
                "second turn (plain lm_eval; critic-eval and OpenCompass ask it)")
    return ""


BIAS_NOTE = ("Judge-bias lines (docs/reports.md): consistency = pairs whose verdict is kept when the order swaps "
             "(JudgeBench: inconsistency = 100 minus it); first_position = share of A/B verdicts naming the response "
             "shown first (50: no slot preference); length_bias = share of A/B verdicts choosing the longer response "
             "minus the labels' share on the same verdicts (0: as often as the labels).")


def _in_order(results: dict) -> list:
    """The registered critic tasks of ``results`` in the paper's dimension order."""
    known = [registry.TASKS[t] for t in results if t in registry.TASKS]
    return sorted(known, key=lambda t: (registry.SECTIONS.index(t.section), t.name))


def format_bias_table(results: dict) -> str:
    """The judge-bias lines of each pairwise task in ``results`` (``registry.BIAS_LINES``), each with its interval,
    under their own heading and with the note saying how to read them; "" where ``results`` has no pairwise task."""
    rows = [("task", "bias line", "value")]
    for task in _in_order(results):
        for key in registry.BIAS_LINES.get(task.kind, ()):
            value = _value(results[task.name], key)
            rows.append((task.name, key, format_value(value, _interval(results[task.name], key))))
    return f"Judge-bias lines\n{render_rows(rows)}\n{BIAS_NOTE}" if len(rows) > 1 else ""


def format_table(results: dict, chance: dict[str, dict[str, float]] | None = None) -> str:
    """The dimension table: one row per (task, headline metric) in the paper's dimension order, overalls last;
    below it, where a pairwise task is present, its judge-bias lines (``format_bias_table``).

    Only registered critic tasks are shown; a value that is absent reads ``n/a``, with a note saying why; a value with
    a bootstrap interval is followed by it (``45.20 [41.10, 49.30]``); a rate that left unchecked items out says how
    many (``invalid_items``). ``chance`` (task -> metric -> floor, ``critic_tasks.chance``): a column beside each
    value with its chance line ("-": none for that metric)."""
    def floor(task: str, key: str) -> tuple[str, ...]:
        if chance is None:
            return ()
        value = (chance.get(task) or {}).get(key)
        return (f"{value:.2f}" if isinstance(value, (int, float)) else "-",)

    rows = [("task", "metric", "value", *(("chance",) if chance is not None else ()), "note")]
    for task in _in_order(results):
        for key in task.headline_keys():
            value = _value(results[task.name], key)
            notes = (_note(results[task.name], key, value), invalid_note(invalid_items(results, task.name, key)),
                     prompt_note(results[task.name]))
            rows.append((task.name, key, format_value(value, _interval(results[task.name], key)),
                         *floor(task.name, key), "; ".join(filter(None, notes))))
    for group in registry.GROUPS.values():
        overall = _value(results.get(group.name, {}), group.metric)
        if overall is not None:
            rows.append((group.name, group.label, format_value(overall, group_interval(results, group)),
                         *floor(group.name, group.metric),
                         invalid_note(invalid_items(results, group.name, group.metric))))
    bias = format_bias_table(results)
    return render_rows(rows) + (f"\n\n{bias}" if bias else "")


def format_judge_table(results: dict) -> str:
    # echoed: items whose judge only repeated a grade the critic wrote, scored the minimum (issue 27)
    rows = [("task", "judge_score", "judge_parse_rate", "failed", "echoed")]
    for task, m in results.items():
        score = m.get("judge_score")
        rows.append((task, format_value(score, _interval(m, "judge_score")),
                     f"{m['judge_parse_rate']:.2f}" if "judge_parse_rate" in m else "",
                     f"{m['judge_failed']:.0f}" if "judge_failed" in m else "",
                     f"{m['judge_echoed']:.0f}" if "judge_echoed" in m else ""))
    return render_rows(rows)


def format_task_list() -> str:
    """``critic-eval tasks``: groups, tasks and tags with one line each, then each benchmark's ``--metadata`` keys
    (kind ``options``: what ``registry.check_metadata`` accepts for its tasks)."""
    rows = [("name", "kind", "what it measures")]
    for g in registry.GROUPS.values():
        rows.append((g.name, "group", f"{g.about} ({', '.join(g.members)})"))
    for t in registry.TASKS.values():
        rows.append((t.name, "task", t.description()))
    for tag, members in registry.tags().items():
        rows.append((tag, "tag", f"{len(members)} tasks: {', '.join(members[:3])}{', ...' if len(members) > 3 else ''}"))
    for protocol in registry.PROTOCOLS:
        members = [t.name for t in registry.TASKS.values() if t.kind_spec.protocol == protocol]
        if members:
            named = f"{', '.join(members[:2])}{f' and {len(members) - 2} more' if len(members) > 2 else ''}"
            keys = ", ".join(registry.protocol_metadata_keys(protocol))
            rows.append((protocol, "options", f"--metadata keys of its tasks ({named}): {keys}"))
    return render_rows(rows)


def format_label_free(stats: dict) -> str:
    """``critic-eval score --predictions_only``: one row per split, dimension and domain (pooled over the domains
    first), from ``protocols.criticbench.label_free``; shares x100."""
    rows = [("split", "dimension", "domain", "replies", "parsed", "distribution", "consistent", "first_pos",
             "same_pos")]
    for key, s in stats.items():
        split, dimension, domain = key.split("/")
        dist = " ".join(f"{k}:{v:.1f}" for k, v in {**s.get("distribution", {}), "none": s.get("unparsed")}.items()
                        if v is not None)
        if "truncated" in s:
            dist = f"truncated:{s['truncated']:.1f}"
        elif "mean" in s:
            dist += f" (mean {s['mean']:.2f})"
        pair = [f"{s[k]:.2f}" if k in s else "" for k in ("consistency", "first_position", "same_position")]
        rows.append((split, dimension, domain, str(s["replies"]), f"{s['parse_rate']:.2f}", dist, *pair))
    return render_rows(rows)


LABEL_FREE_NOTE = ("predictions only (no dataset): parse rates and distributions of the parsed values, x100 shares "
                   "of the replies; comparison pairs: consistent = reverse verdict is the swap of the forward one, "
                   "first_pos = share of A/B verdicts naming the first-shown response (50 = no slot preference), "
                   "same_pos = pairs answered with the same slot in both orders. Labelled metrics: --data_dir.")


def _tally_text(counts) -> str:
    if not isinstance(counts, dict) or not counts:
        return ""
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items(), key=lambda kv: (-_count(kv[1]), kv[0])))


def _count(n) -> int:
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


def judge_lines(fingerprints: dict) -> list[str]:
    """One line per judged task of a run's judge fingerprints (``results.judge_fingerprints``): the judge's model
    and backend, its temperature, the prompt version and the first 12 characters of the template hash, then what
    the server said answered (its models and system fingerprints, each with its count of replies)."""
    lines = []
    for task, found in sorted(fingerprints.items()):
        judge = found.get("judge") if isinstance(found, dict) else None
        if not isinstance(judge, dict):
            continue
        served = found.get("served") if isinstance(found.get("served"), dict) else {}
        template = str(judge.get("template_sha256") or "")[:12] or "none recorded"
        said = [f"model {_tally_text(served.get('model'))}" if _tally_text(served.get("model")) else "",
                f"system fingerprint {_tally_text(served.get('system_fingerprint'))}"
                if _tally_text(served.get("system_fingerprint")) else "",
                f"{_count(served.get('unreported'))} repl(ies) naming neither" if _count(served.get("unreported")) else ""]
        said = [s for s in said if s]
        others = _count(found.get("other_judges"))
        lines.append(f"judge of {task}: {judge.get('model') or '?'} ({judge.get('backend') or '?'}, temperature "
                     f"{judge.get('temperature', '?')}), prompt {judge.get('prompt_version') or '?'}, template "
                     f"{template}; served by: {'; '.join(said) or 'not reported'}"
                     + (f"; {others} row(s) judged by another judge" if others else ""))
    return lines
