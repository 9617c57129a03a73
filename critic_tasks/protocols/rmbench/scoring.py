"""RM-Bench scoring, harness-free: (document, reply) -> record, and records -> the authors' metrics (x100).

The record (``RMBenchRecord``): one order of one comparison, chosen response ``chosen_style`` against rejected
response ``rejected_style`` of prompt ``prompt_id``, with the verdict the judge gave (``A`` / ``B``; None: the reply
holds neither ``[[A]]`` nor ``[[B]]``, read as RewardBench's ``process_judgement``:
``protocols.rewardbench.authors_prompts.read_v1_verdict``).

A comparison is decided by JudgeBench's pair rule over its two orders (``judgebench.scoring.pair_correct``: +1 per
order naming the chosen response, -1 per order naming the rejected one; right if positive). The reward-model
protocol's "score of the chosen > score of the rejected" (``scripts/utils.py``, ``compute_accuracy``) becomes
"the comparison is right"; the rest is theirs:

    cell (i, j)   = the share of a domain's prompts whose comparison chosen i vs rejected j is right
    hard          = mean of the cells i < j   (a plainer chosen against a fancier rejected: the upper triangle)
    normal        = mean of the cells i = j   (the diagonal)
    easy          = mean of the cells i > j   (the lower triangle)
    a domain      = mean(hard, normal, easy)  (``accuracy_<domain>``)
    accuracy      = the mean of the domains; hard / normal / easy overall = the mean of the domains' values

(styles 0, 1, 2 = concise, detailed plain, detailed markdown). Each cell's share is over the prompts with that
comparison in the records (the authors divide by all prompts; the same when every prompt has all nine). ``domains``
names the domains the overall averages (a local copy without math averages three). Bias lines: ``style_gap`` = easy
- hard (0: style does not sway the judge), and the pairwise judge's ``inconsistency``, ``first_position`` and
``length_bias`` (``core.metrics.bias``) over the comparisons. Intervals: percentile bootstrap over prompts (each
prompt's comparisons together, resampled within its domain), and over comparisons for the pairwise bias lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from critic_tasks.core import records as core_records
from critic_tasks.core.metrics import bias
from critic_tasks.core.metrics.bootstrap import BootstrapSettings, by_pair, by_prompt, mean_interval
from critic_tasks.core.records import Metric, Record, bias_lines, breakdown, rate
from critic_tasks.protocols.judgebench.scoring import pair_correct, pair_inconsistent
from critic_tasks.protocols.rewardbench.authors_prompts import read_v1_verdict
from critic_tasks.protocols.rmbench.data import DOMAINS

CLASSES = ("hard", "normal", "easy")
ORDERS_BOTH = ("forward", "reverse")


@dataclass(frozen=True)
class RMBenchRecord(Record):
    kind = "rmbench"
    prompt_id: str = ""
    pair_id: str = ""
    chosen_style: int = 0
    rejected_style: int = 0
    order: str = "forward"
    verdict: str | None = None
    parsed: bool = False
    gold: str | None = "A"
    lengths: tuple[int, int] | None = None

    @property
    def difficulty(self) -> str:
        """hard (a plainer chosen than rejected), normal (the same style), easy (a fancier chosen)."""
        i, j = self.chosen_style, self.rejected_style
        return "hard" if i < j else "normal" if i == j else "easy"


core_records.register_record(RMBenchRecord)


def record(doc: dict, reply) -> RMBenchRecord:
    """``reply``: the judge's text (a list of samples: the first is read)."""
    text = reply[0] if isinstance(reply, (list, tuple)) else reply
    verdict = read_v1_verdict(text)
    return RMBenchRecord(domain=doc["domain"], prompt_id=doc["prompt_id"], pair_id=doc["pair_id"],
                         chosen_style=int(doc["chosen_style"]), rejected_style=int(doc["rejected_style"]),
                         order=doc["order"], verdict=verdict, parsed=verdict is not None, gold=doc.get("preference"),
                         lengths=bias.response_lengths(doc.get("response_a"), doc.get("response_b")))


def gold_text(doc: dict) -> str:
    """The verdict naming the chosen response in the order shown."""
    return "[[A]]" if doc["order"] == "forward" else "[[B]]"


# ----------------------------------------------------------------------------- comparisons and prompts


def comparisons(records: Sequence[RMBenchRecord]) -> list[dict]:
    """Each comparison once, in pair-id order: its domain, prompt, class and each order's verdict."""
    by_id: dict[str, dict] = {}
    for r in records:
        c = by_id.setdefault(r.pair_id, {"domain": r.domain, "prompt_id": r.prompt_id, "class": r.difficulty,
                                         "gold": r.gold, "orders": set()})
        c[r.order] = r.verdict
        c["orders"].add(r.order)
    return [by_id[k] for k in sorted(by_id)]


def prompt_values(records: Sequence[RMBenchRecord], classes: Sequence[str] = CLASSES) -> list[tuple[str, float]]:
    """(domain, the prompt's value) of each prompt: the mean over its class means (each class: the share of its
    comparisons of that class that are right), over ``classes``; prompts without any of them left out."""
    return [value for _, value in _keyed(_by_prompt(records), classes)]


def _keyed(by_prompt: dict, classes: Sequence[str]) -> list[tuple[str, tuple[str, float]]]:
    out = []
    for key in sorted(by_prompt):
        p = by_prompt[key]
        means = [rate(p[k]) for k in classes if p[k]]
        if means:
            out.append((key, (p["domain"], sum(means) / len(means))))
    return out


def _by_prompt(records: Sequence[RMBenchRecord]) -> dict:
    by_prompt: dict[str, dict] = {}
    for c in comparisons(records):
        p = by_prompt.setdefault(c["prompt_id"], {"domain": c["domain"], **{k: [] for k in CLASSES}})
        p[c["class"]].append(pair_correct(c.get("forward"), c.get("reverse"), c["gold"]))
    return by_prompt


def _keyed_prompt_values(records, classes):
    return _keyed(_by_prompt(records), classes)


def prompt_gaps(records: Sequence[RMBenchRecord]) -> list[tuple[str, float]]:
    """(domain, easy - hard) of each prompt with comparisons of both classes."""
    easy = {k: v for k, v in _keyed_prompt_values(records, ("easy",))}
    hard = {k: v for k, v in _keyed_prompt_values(records, ("hard",))}
    return [(easy[k][0], easy[k][1] - hard[k][1]) for k in sorted(easy) if k in hard]


def _domain_means(values: Sequence[tuple[str, float]]) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for domain, v in values:
        by.setdefault(domain, []).append(v)
    return {d: sum(vs) / len(vs) for d, vs in by.items()}


def _mean_of_domains(records, classes=CLASSES) -> float | None:
    means = _domain_means(prompt_values(records, classes))
    return sum(means.values()) / len(means) if means else None


# ----------------------------------------------------------------------------- metrics


def accuracy(records: Sequence[RMBenchRecord]) -> float | None:
    """The authors' overall: the mean over domains of mean(hard, normal, easy)."""
    return _mean_of_domains(records)


def class_accuracy(name: str) -> Callable[[Sequence[RMBenchRecord]], float | None]:
    def value(records):
        return _mean_of_domains(records, (name,))

    value.__name__ = f"{name}_accuracy"
    return value


def style_gap(records: Sequence[RMBenchRecord]) -> float | None:
    """easy - hard (a judge swayed by style towards the fancier response scores above 0)."""
    easy, hard = _mean_of_domains(records, ("easy",)), _mean_of_domains(records, ("hard",))
    return None if easy is None or hard is None else easy - hard


def inconsistency(records: Sequence[RMBenchRecord]) -> float | None:
    """100 * the share of comparisons asked both ways whose two verdicts disagree, or lack one."""
    both = [c for c in comparisons(records) if set(ORDERS_BOTH) <= c["orders"]]
    return rate(pair_inconsistent(c.get("forward"), c.get("reverse")) for c in both) if both else None


def parse_rate(records: Sequence[RMBenchRecord]) -> float:
    return rate(r.parsed for r in records)


def comparison_count(records: Sequence[RMBenchRecord]) -> float:
    return float(len(comparisons(records)))


def domains(records: Sequence[RMBenchRecord]) -> str | None:
    """The domains the overall averages, joined by '+' in the authors' order."""
    present = {r.domain for r in records}
    return "+".join(d for d in DOMAINS if d in present) or None


METRICS: dict[tuple[str, str], Callable[[Sequence], object]] = {
    ("rmbench", "accuracy"): accuracy,
    **{("rmbench", name): class_accuracy(name) for name in CLASSES},
    ("rmbench", "style_gap"): style_gap,
    ("rmbench", "inconsistency"): inconsistency,
    ("rmbench", "parse_rate"): parse_rate,
    ("rmbench", "comparisons"): comparison_count,
    ("rmbench", "domains"): domains,
    **{("rmbench", base): bias.line(base) for base in bias.BASES},
}


def rmbench_metrics(records: Sequence) -> dict[str, object]:
    out = {base: fn(records) for (_, base), fn in METRICS.items()}
    return {k: v for k, v in out.items() if v is not None}


# ----------------------------------------------------------------------------- metric keys

# The authors' compute_accuracy over the comparisons decided by the pair rule: per domain, hard / normal / easy (the
# 3 x 3 matrix's upper triangle, diagonal, lower triangle) and the mean of the domains; the style gap (easy - hard)
# and the pairwise bias lines beside it.
KEYS = (Metric("accuracy", "rmbench", when="scored"),
        *breakdown("rmbench", "accuracy", "domain", DOMAINS),
        *(Metric(c, "rmbench", when="scored") for c in CLASSES),
        Metric("style_gap", "rmbench", when="scored", higher_is_better=None, best_at=0.0, scale="difference"),
        Metric("inconsistency", "rmbench", when="scored", higher_is_better=False),
        Metric("parse_rate", "rmbench"),
        Metric("comparisons", "rmbench", when="scored", higher_is_better=None, scale="count"),
        # text: the domains the overall averages (chat+code+safety on a copy without math)
        Metric("domains", "rmbench", when="scored", scale="text", higher_is_better=None),
        *bias_lines("rmbench"))

FAMILIES: dict[str, Callable[[Sequence], dict]] = {"rmbench": rmbench_metrics}


def _prompt_pairs(records, classes):
    values = prompt_values(records, classes)
    return [v for _, v in values], [d for d, _ in values]


def rmbench_interval(records: Sequence[RMBenchRecord], base: str,
                     settings: BootstrapSettings) -> tuple[float, float] | None:
    """Prompts resampled within their domain (the value is a mean of domain means) for ``accuracy`` (also per
    domain), ``hard`` / ``normal`` / ``easy`` and ``style_gap``; comparisons for the pairwise bias lines."""
    if base in bias.BASES:
        return bias.bias_interval(base, records, settings)
    if base == "inconsistency":
        both = [c for c in comparisons(records) if set(ORDERS_BOTH) <= c["orders"]]
        flags = [100.0 * pair_inconsistent(c.get("forward"), c.get("reverse")) for c in both]
        return mean_interval(flags, None, settings) if flags else None
    if base == "style_gap":
        gaps = prompt_gaps(records)
        return mean_interval([g for _, g in gaps], [d for d, _ in gaps], settings) if gaps else None
    classes = {"accuracy": CLASSES, **{k: (k,) for k in CLASSES}}.get(base)
    if classes is None:
        return None
    values, strata = _prompt_pairs(records, classes)
    return mean_interval(values, strata, settings) if values else None


def rmbench_stratum(record: RMBenchRecord, base: str) -> str:
    """Domain-averaged values resample within the domain; the pairwise bias lines over all comparisons."""
    return "" if base in (*bias.BASES, "inconsistency") else record.domain


INTERVALS: dict[str, Callable] = {"rmbench": rmbench_interval}
STRATA: dict[str, Callable] = {"rmbench": rmbench_stratum}


def rmbench_unit(record: RMBenchRecord, base: str) -> str:
    """A prompt (its 3 x 3 comparisons) for the prompt-level values; a comparison (both orders) for the pairwise
    bias lines, as ``rmbench_interval`` draws them."""
    return by_pair(record, base) if base in (*bias.BASES, "inconsistency") else by_prompt(record, base)


# family -> (record, value) -> the unit its interval resamples
UNITS: dict[str, Callable] = {"rmbench": rmbench_unit}
