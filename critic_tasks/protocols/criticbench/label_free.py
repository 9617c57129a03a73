"""What saved predictions tell without the dataset: ``critic-eval score --predictions_only``.

Any predictions folder ``critic-eval score`` reads (the toolkit's ``{split}_{domain}_{dimension}_{format}.json``
files, or an OpenCompass run's ``<task>.json``), parsed with the same parsers as a live run, per split, dimension and
domain (and pooled over the domains):

* feedback, meta-feedback: ``parse_rate`` and the distribution of the parsed Likert scores (``distribution``: value
  -> share of all replies; ``unparsed``: the rest), ``mean`` of the parsed scores;
* comparison: ``parse_rate``, the verdict distribution (A, B, C, unparsed), and over the pairs whose two orders are
  both present (forward item i and reverse item i: the same two responses, swapped):
  ``consistency`` (the reverse verdict is the swap of the forward one: the live metric), ``first_position`` (of the
  A/B verdicts, the share naming the response shown first; 50 = no preference for a slot) and ``same_position``
  (pairs whose two verdicts name the same slot, A then A or B then B: the choice followed the slot, not the
  response);
* objective correction: ``parse_rate`` (a final answer, or a code block) and ``truncated``; nothing runs (pass rates
  need the gold answers and unit tests). Without the dataset a multiple-choice letter is not mapped to its option.

The judge-scored (``_sub``) files need the dataset's references and a judge; they are listed as not scored. All
shares are on the x100 scale.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from critic_tasks.core.errors import DataError
from critic_tasks.core.metrics.pairwise import pair_consistent
from critic_tasks.core.records import rate
from critic_tasks.protocols.criticbench import scoring
from critic_tasks.protocols.criticbench.correction import parse_revisions
from critic_tasks.protocols.criticbench.offline import (
    DIMENSION_OF,
    Registered,
    _opencompass_files,
    _prompt_text,
    _read,
    prediction_files,
    toolkit_file,
)

POOLED = "all"  # the domain key of the rows pooled over domains
DIMENSION_ORDER = ("feedback", "comparison", "meta", "correction")


@dataclass
class LabelFree:
    stats: dict = field(default_factory=dict)  # "split/dimension/domain" -> {metric: value}
    items: dict = field(default_factory=dict)  # file name -> {index: parsed value}
    skipped: list = field(default_factory=list)  # (file names, why)


@dataclass
class _Reply:
    """One parsed reply: its group, and what was read from it."""

    split: str
    dimension: str
    domain: str | None  # None: unknown without the dataset (pooled rows only)
    record: object  # LikertRecord / VerdictRecord / CheckOutcome


def summarize_predictions(pred_dir: Path, protocol: str = "ours", *, registered: Registered) -> LabelFree:
    """``registered``: the registered tasks (``critic_tasks.cli.registered()``), for OpenCompass's files."""
    files = prediction_files(pred_dir)
    out = LabelFree()
    replies: list[_Reply] = []
    for task, paths in _opencompass_files(files, registered.tasks).items():
        files = [f for f in files if f not in paths]
        replies += _opencompass_task(registered.tasks[task], registered.judged, paths, protocol, out)
    replies += _toolkit_files(files, protocol, out)
    _aggregate(replies, out)
    return out


# ----------------------------------------------------------------------------- reading


def _doc(dimension: str, domain: str | None, protocol: str, pair_id: str = "", order: str = "forward") -> dict:
    """The few document fields the parsers read (no labels: the records' gold stays None)."""
    return {"dimension": dimension, "domain": domain, "protocol": protocol, "pair_id": pair_id, "order": order,
            "difficulty": None}


def _parsed_value(record):
    if hasattr(record, "verdict"):
        return record.verdict
    if hasattr(record, "status"):  # a revision: its answer or code, when one was found
        return record.detail if record.parsed else None
    return record.pred if record.parsed else None


def _toolkit_files(files: list[Path], protocol: str, out: LabelFree) -> list[_Reply]:
    replies: list[_Reply] = []
    comparisons: dict[tuple[str, str], dict[str, Path]] = defaultdict(dict)  # (split, domain) -> order -> file
    for path in files:
        m = toolkit_file(path, out.skipped, "judge-scored: needs the dataset's references and a judge "
                                            "(`critic-eval judge`)")
        if m is None:
            continue
        dimension, domain, split = DIMENSION_OF[m["mode"]], m["domain"], m["split"]
        if dimension == "comparison":
            comparisons[(split, domain)]["reverse" if m["reverse"] else "forward"] = path
            continue
        texts = [row["prediction"] for row in _read(path)]
        if dimension == "correction":
            records = parse_revisions(domain, texts)
        else:
            records = [scoring.record(_doc(dimension, domain, protocol), t) for t in texts]
        out.items[path.name] = {str(i): _parsed_value(r) for i, r in enumerate(records)}
        replies += [_Reply(split, dimension, domain, r) for r in records]
    for (split, domain), paths in sorted(comparisons.items()):
        rows = {order: _read(path) for order, path in paths.items()}
        if len(rows) == 2:
            _check_pairs(paths["forward"], paths["reverse"], rows["forward"], rows["reverse"])
        for order, path in sorted(paths.items()):
            records = [scoring.record(_doc("comparison", domain, protocol, f"{split}/{domain}/{i}", order),
                                      row["prediction"]) for i, row in enumerate(rows[order])]
            out.items[path.name] = {str(i): r.verdict for i, r in enumerate(records)}
            replies += [_Reply(split, "comparison", domain, r) for r in records]
    return replies


def _check_pairs(forward: Path, reverse: Path, fwd_rows: list[dict], rev_rows: list[dict]) -> None:
    """Item i of the reverse file must be item i of the forward file with the two responses swapped: the same
    prompt text, characters rearranged (checked when both prompts were saved)."""
    if len(fwd_rows) != len(rev_rows):
        raise DataError(f"{reverse}: {len(rev_rows)} predictions but {forward.name} has {len(fwd_rows)}: "
                        "the two orders of a comparison must hold the same pairs")
    for i, (f, r) in enumerate(zip(fwd_rows, rev_rows)):
        a, b = _prompt_text(f.get("origin_prompt")), _prompt_text(r.get("origin_prompt"))
        if a and b and Counter(a) != Counter(b):
            raise DataError(f"{reverse}[{i}]: origin_prompt is not that of {forward.name}[{i}] with the responses "
                            "swapped: the two files do not hold the same pairs in the same order")


def _opencompass_task(spec, judged, paths: list[Path], protocol: str, out: LabelFree) -> list[_Reply]:
    """An OpenCompass run's rows (``spec``: the task's ``registry.Task``; ``judged``: whether a judge grades a task):
    each row's ``gold`` is its document (our datasets' reference column), which gives its domain and, for
    comparisons, its pair and order; rows without it fall back on the task's single domain, and on the dataset's
    layout for comparisons (each pair's forward row, then its reverse row)."""
    task = spec.name
    names = ", ".join(p.name for p in paths)
    if judged(spec):
        out.skipped.append((names, "judge-scored: needs a judge (OpenCompass's evaluator grades it)"))
        return []
    kind = spec.kind_spec
    if kind.protocol != "criticbench" or kind.data_dimension not in DIMENSION_ORDER:
        out.skipped.append((names, f"{kind.protocol} {kind.data_dimension}: no label-free statistics here"))
        return []
    rows = [row for path in paths for row in _read(path)]  # chunks in order: one task's documents
    dimension = kind.data_dimension
    single = spec.domains[0] if len(spec.domains) == 1 else None
    infos = []
    for n, row in enumerate(rows):
        doc = _gold_doc(row.get("gold"))
        domain = doc.get("domain", single)
        if dimension == "comparison":
            pair_id = f"{spec.split}/{doc['pair_id']}" if "pair_id" in doc else f"{spec.split}/{task}/{n // 2}"
            order = doc.get("order", "forward" if n % 2 == 0 else "reverse")
            infos.append((domain, _doc(dimension, domain, protocol, pair_id, order)))
        else:
            infos.append((domain, _doc(dimension, domain, protocol)))
    texts = [row["prediction"] for row in rows]
    if dimension == "correction":
        if any(domain is None for domain, _ in infos):
            out.skipped.append((names, "rows without a `gold` document: each row's domain, and so its parse rule, is "
                                       "unknown without the dataset (pass --data_dir)"))
            return []
        records: list = [None] * len(rows)
        by_domain: dict[str, list[int]] = defaultdict(list)
        for n, (domain, _) in enumerate(infos):
            by_domain[domain].append(n)
        for domain, idx in by_domain.items():
            for n, outcome in zip(idx, parse_revisions(domain, [texts[n] for n in idx])):
                records[n] = outcome
    else:
        records = [scoring.record(doc, text) for (_, doc), text in zip(infos, texts)]
    out.items[task] = {str(n): _parsed_value(r) for n, r in enumerate(records)}
    return [_Reply(spec.split, dimension, domain, r) for (domain, _), r in zip(infos, records)]


def _gold_doc(gold) -> dict:
    if isinstance(gold, dict):
        return gold
    if isinstance(gold, str):
        try:
            doc = json.loads(gold)
        except json.JSONDecodeError:
            return {}
        return doc if isinstance(doc, dict) else {}
    return {}


# ----------------------------------------------------------------------------- statistics


def _aggregate(replies: list[_Reply], out: LabelFree) -> None:
    groups: dict[tuple[str, str, str], list] = defaultdict(list)
    for reply in replies:
        groups[(reply.split, reply.dimension, POOLED)].append(reply.record)
        if reply.domain is not None:
            groups[(reply.split, reply.dimension, reply.domain)].append(reply.record)
    order = {d: i for i, d in enumerate(DIMENSION_ORDER)}
    for split, dimension, domain in sorted(groups, key=lambda k: (k[0], order[k[1]], k[2] != POOLED, k[2])):
        recs = groups[(split, dimension, domain)]
        family = {"comparison": verdict_stats, "correction": correction_stats}.get(dimension, likert_stats)
        out.stats[f"{split}/{dimension}/{domain}"] = family(recs)


def _share(count: int, total: int) -> float:
    return 100.0 * count / total if total else 0.0


def likert_stats(records) -> dict:
    values = [r.pred for r in records if r.parsed]
    counts = Counter(values)
    return {"replies": len(records), "parse_rate": rate(r.parsed for r in records),
            "distribution": {f"{v:g}": _share(counts[v], len(records)) for v in sorted(counts)},
            "unparsed": _share(len(records) - len(values), len(records)),
            **({"mean": sum(values) / len(values)} if values else {})}


def verdict_stats(records) -> dict:
    counts = Counter(r.verdict for r in records)
    out = {"replies": len(records), "parse_rate": rate(r.parsed for r in records),
           "distribution": {v: _share(counts[v], len(records)) for v in "ABC"},
           "unparsed": _share(counts[None], len(records))}
    pairs: dict[str, dict] = defaultdict(dict)
    for r in records:
        pairs[r.pair_id][r.order] = r.verdict
    both = [(p["forward"], p["reverse"]) for p in pairs.values() if "forward" in p and "reverse" in p]
    out["pairs"] = len(both)
    if both:
        slots = [v for pair in both for v in pair if v in ("A", "B")]
        out["consistency"] = rate(pair_consistent(f, r) for f, r in both)
        out["same_position"] = rate(f == r and f in ("A", "B") for f, r in both)
        if slots:
            out["first_position"] = _share(slots.count("A"), len(slots))
    return out


def correction_stats(outcomes) -> dict:
    return {"replies": len(outcomes), "parse_rate": rate(o.parsed for o in outcomes),
            "truncated": rate(o.truncated for o in outcomes)}
