"""The critique -> revision pipeline: revise (a pool of revisers, concurrently), then check or judge.

Pure functions over documents, critiques and ``LLMSettings``; every model call goes through
``critic_tasks.llm.complete`` (cached as each reply arrives, so a rerun asks nothing, a killed run resumes with
nothing lost, and changing only the judge re-asks only the judge):

1. revise: every reviser gets every (item, critique) at once, each reviser in its own thread (bounded by its
   CONCURRENCY setting), all revisers together;
2. check: every revision of an item with a gold answer or a test, in one parallel batch (one call per check
   domain, all at once; the sandbox bounds the programs together); an item whose gold / test is unusable is
   ``invalid`` (counted, excluded);
3. judge: one concurrent batch of every judgment. MultiCritique: the first reviser's revision of each judged
   (text) item gets a 1-10 grade (R_sub; paper variant: CriticEval's correction judge against the human reference
   revision, ``Score: x``; short variant: a reference-free ``Rating: [[x]]``). RCO: the first reviser (the actor)'s
   revision of every item is compared with the initial response in both orders (``[[A]]`` / ``[[B]]`` / ``[[C]]``)
   and rated 1-10 (RQS).

The prompts are those of the documents' variant (``prompts``, ``protocols.variants``); the records carry the
variant and the failure rule, so the metrics say which ran.

A failed reviser or judge call, or an unreadable verdict, is counted in the item's record (never dropped, never a
crash); failed calls are not cached, so the next run retries exactly those. A judgment that was asked and not read
(a failed call, a reply without its marker, or with conflicting ones: what a critique that writes the judge's
marker provokes) counts the minimum (``LOWEST``), whatever the failure rule: making the judge fail never beats
losing (issue 34). The failure rule covers the judgments never asked (the revision they needed failed).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.parsing import grade_or_echo, parse_bracket_rating, parse_bracket_verdict, parse_grade
from critic_tasks.core.quoting import blocks
from critic_tasks.llm import Completion, LLMSettings, complete
from critic_tasks.llm.cache import ReplyCache
from critic_tasks.llm.client import identity
from critic_tasks.llm.settings import pool_env, pool_from_env
from critic_tasks.protocols import variants
from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.protocols.criticbench.prompts import DOMAINS
from critic_tasks.protocols.revision import prompts
from critic_tasks.protocols.revision.data import resolve_failure_rule
from critic_tasks.protocols.revision.scoring import RevisionRecord, per_reviser_pass_rates
from critic_tasks.protocols.scorer import Context, Scorer, first_replies, judge_settings
from critic_tasks.sandbox import get_executor

__all__ = ["reviser_pool", "judge_settings", "missing", "models", "revise", "check", "run", "deferred_record",
           "per_reviser_pass_rates"]

log = logging.getLogger("critic_tasks")
PROTOCOLS = ("multicritique", "rco")
# preference for the revision: forward order = (A: initial, B: revised), reverse = (A: revised, B: initial)
PREFERENCE = {"forward": {"B": 1.0, "C": 0.5, "A": 0.0}, "reverse": {"A": 1.0, "C": 0.5, "B": 0.0}}
# what a judgment counts when the judge gave no verdict of its own and repeated one the critique or the revision made
# from it states (a forged verdict for the judge to quote), or gave none that could be read: the minimum, the
# revision's loss or the lowest grade
LOWEST = {"rqs": 1.0, "forward": 0.0, "reverse": 0.0}
_MARKER = {"forward": "verdict", "reverse": "verdict"}  # rqs: "score" (CriticEval's judge) or "rating" ([[x]])


def reviser_pool() -> list[LLMSettings]:
    """``CRITIC_REVISERS`` / ``CRITIC_REVISER_*`` (see ``llm.settings.pool_from_env``); empty: none configured."""
    return pool_from_env("reviser")


def needs_judge(protocol: str, docs: Sequence[dict]) -> bool:
    return protocol == "rco" or any(not d["check"] for d in docs)


def missing(protocol: str, docs: Sequence[dict], revisers: Sequence[LLMSettings], judge: LLMSettings | None) -> str:
    """Why this run cannot score now ('' when it can): the settings to set."""
    lacking = [] if revisers else [f"CRITIC_REVISER_MODEL (or {pool_env('reviser')})"]
    if needs_judge(protocol, docs) and (judge is None or not judge.model):
        lacking.append("CRITIC_JUDGE_MODEL")
    return " and ".join(lacking)


def run_variant(docs: Sequence[dict]) -> str:
    """The one prompt variant of a run's documents (a run asks every item with the same prompts)."""
    found = {variants.of(d) for d in docs}
    if len(found) > 1:
        raise ConfigError(f"documents of different prompt variants ({', '.join(sorted(found))}) in one run; "
                          "score each variant's samples on their own")
    return found.pop() if found else variants.DEFAULT


def run_toolkit(docs: Sequence[dict]) -> str:
    """The one CriticEval checkout whose released prompts a run's documents are asked with ('' for our text)."""
    found = {prompts.toolkit_of(d) for d in docs}
    if len(found) > 1:
        raise ConfigError(f"documents asked with different prompt texts ({', '.join(sorted(f or 'ours' for f in found))}"
                          ") in one run; score each run's samples on their own")
    return found.pop() if found else ""


def models(revisers: Sequence[LLMSettings], judge: LLMSettings | None, protocol: str, variant: str,
           toolkit_dir: str = "") -> dict:
    """Every model the pipeline calls, with its prompt version (recorded with the results; where each prompt's text
    comes from is the records' own ``prompt_source``, a results entry of its own)."""
    versions = prompts.versions(protocol, variant, released=bool(toolkit_dir))
    return {"revisers": [{**identity(s, versions["reviser"]), **({"name": s.member} if s.member else {})}
                         for s in revisers],
            "judge": identity(judge, versions["judge"]) if judge is not None and judge.model else None,
            "prompt_versions": versions, "variant": variant}


def reviser_name(s: LLMSettings) -> str:
    return s.member or s.model or "?"


def revise(docs: Sequence[dict], critiques: Sequence[str | None], revisers: Sequence[LLMSettings],
           progress: bool = True) -> list[list[Completion]]:
    """[reviser][item]: every reviser's revision of every item, all revisers at once."""
    asks = [prompts.reviser_prompt(d, c) for d, c in zip(docs, critiques)]
    version = prompts.versions(prompts.protocol_of(docs[0]), run_variant(docs),
                               released=bool(run_toolkit(docs)))["reviser"] if docs else ""
    # a fresh sqlite cache file opened by several threads at once can fail to switch to WAL ("database is
    # locked"): create each one here first, then the revisers' threads share it
    for path in dict.fromkeys(s.cache for s in revisers if s.cache):
        ReplyCache(path).close()
    with ThreadPoolExecutor(max_workers=max(1, len(revisers))) as pool:
        futures = [pool.submit(complete, asks, s, version, progress) for s in revisers]
        return [f.result() for f in futures]


def check(docs: Sequence[dict], revisions: Sequence[Sequence[str | None]], executor=None) -> list[list]:
    """[reviser][item]: the check outcome of each revision of a checked item (None: judged item, or no revision)."""
    out: list[list] = [[None] * len(docs) for _ in revisions]
    by_domain: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r, texts in enumerate(revisions):
        for i, (doc, text) in enumerate(zip(docs, texts)):
            if doc["check"] and text is not None:
                by_domain[doc["check_domain"]].append((r, i))
    executor = executor or get_executor()

    def one_domain(domain: str, slots: list[tuple[int, int]]):
        return check_corrections(domain, [revisions[r][i] for r, i in slots], [docs[i] for _, i in slots],
                                 executor=executor, invalid="mark")

    # Every program domain's batch at once (the sandbox's run() is thread-safe and bounds all programs together, its
    # slots); answer checks stay in the calling thread, where math-verify's SIGALRM timeout works.
    in_thread = {d for d in by_domain if DOMAINS[d].correction_check == "final_answer"}
    results: dict[str, list] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(by_domain))) as pool:
        futures = {d: pool.submit(one_domain, d, slots) for d, slots in by_domain.items() if d not in in_thread}
        for d in in_thread:
            results[d] = one_domain(d, by_domain[d])
    results.update({d: f.result() for d, f in futures.items()})
    for domain, slots in by_domain.items():
        for (r, i), outcome in zip(slots, results[domain]):
            out[r][i] = outcome
    return out


def run(protocol: str, docs: Sequence[dict], critiques: Sequence[str | None], revisers: Sequence[LLMSettings],
        judge: LLMSettings | None, executor=None, progress: bool = True) -> list[RevisionRecord]:
    """One ``RevisionRecord`` per item: revise, check, judge (see the module docstring)."""
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown revision protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    if len(docs) != len(critiques):
        raise ValueError(f"{len(docs)} documents but {len(critiques)} critiques")
    why = missing(protocol, docs, revisers, judge)
    if why:
        raise ConfigError(f"{protocol}: set {why}")
    variant, released = run_variant(docs), run_toolkit(docs)
    by_reference = protocol == "multicritique" and variant == variants.PAPER  # R_sub against the reference revision
    revised = revise(docs, critiques, revisers, progress)
    texts = [[c.text for c in per] for per in revised]

    # judge jobs: (item, kind, prompt); kind = "rqs" | "forward" | "reverse" (a 1-10 grade is kept as "rqs")
    jobs: list[tuple[int, str, str]] = []
    for i, doc in enumerate(docs):
        first = texts[0][i]
        if first is None:
            continue
        if protocol == "multicritique" and not doc["check"]:
            jobs.append((i, "rqs", prompts.reference_judge_prompt(doc, critiques[i], first) if by_reference
                         else prompts.rating_prompt(doc, first)))
        elif protocol == "rco":
            jobs += [(i, "forward", prompts.pairwise_prompt(doc, doc["generation"], first)),
                     (i, "reverse", prompts.pairwise_prompt(doc, first, doc["generation"])),
                     (i, "rqs", prompts.rating_prompt(doc, first))]
    # The judgments do not wait for the checks: they are asked (in a thread) while the checks run here.
    judge_version = prompts.versions(protocol, variant, released=bool(released))["judge"]
    with ThreadPoolExecutor(max_workers=1) as pool:
        asking = pool.submit(complete, [p for _, _, p in jobs], judge, judge_version, progress) if jobs else None
        outcomes = check(docs, texts, executor)
        judged = asking.result() if asking is not None else []
    verdicts: dict[int, dict[str, tuple[Completion, object]]] = defaultdict(dict)
    echoes: dict[int, int] = defaultdict(int)
    unread: dict[int, int] = defaultdict(int)  # judgments asked and not read: counted LOWEST, and in judge_failed
    for (i, kind, prompt), c in zip(jobs, judged):
        # the critic's text the judge saw (its critique, the revision made from it): a grade it states and the judge
        # only repeated is its doing; with the initial response, what the judge quotes, never its verdict. A released
        # prompt has no blocks (its slots are filled as written): these texts are passed as they are.
        theirs = [critiques[i], texts[0][i]]
        quoted = [*blocks(prompt), *(t for t in theirs if t), docs[i]["generation"]]
        value = _judgment(kind, c.text, by_reference, quoted)
        marker = _MARKER.get(kind) or ("score" if by_reference else "rating")
        value, echoed = grade_or_echo(value, c.text, theirs, LOWEST[kind], marker)
        echoes[i] += echoed
        verdicts[i][kind] = (c, value)
        if value is None:
            unread[i] += 1
    unreadable = "no 'Score: x' (1-10) in the reply" if by_reference else "no [[...]] marker in the reply"

    names = tuple(reviser_name(s) for s in revisers)
    # recorded with every record, and in the results
    involved = json.dumps(models(revisers, judge, protocol, variant, released), sort_keys=True)
    source = prompts.source_text(protocol, variant, released)
    records = []
    for i, doc in enumerate(docs):
        errors = [f"reviser {names[r]}: {revised[r][i].error}" for r in range(len(revisers)) if texts[r][i] is None]
        got = verdicts.get(i, {})
        for kind, (c, value) in got.items():
            if value is None:
                errors.append(f"judge ({kind}): {c.error or unreadable}")
        invalid = any(per[i] is not None and per[i].status == "invalid" for per in outcomes)
        passed = tuple(None if o is None or o.status == "invalid" else o.passed for o in (per[i] for per in outcomes))
        # an unread judgment counts the minimum (it is in judge_failed, and named in the error)
        value_of = {k: LOWEST[k] if v is None else v for k, (_, v) in got.items()}
        prefs = tuple(value_of[k] for k in ("forward", "reverse") if k in got)
        rec = RevisionRecord(domain=doc["domain"], item=item_label(doc), group=doc.get("quality") or "",
                             checked=bool(doc["check"]), revisers=names, revisions=tuple(t[i] for t in texts),
                             passed=passed, invalid=invalid,
                             rqs=value_of.get("rqs"), prefs=prefs, judge_asked=len(got),
                             judge_parsed=len(got) - unread.get(i, 0),
                             reviser_failed=sum(t[i] is None for t in texts), error="; ".join(errors) or None,
                             judge_echoed=echoes.get(i, 0),
                             models=involved, variant=variant, failure_rule=doc.get("failure_rule", ""),
                             prompt_source=source)
        if rec.error:
            log.warning("critic_tasks: %s on %s: %s", protocol, rec.item, rec.error)
        if rec.judge_echoed:
            log.warning("critic_tasks: %s on %s: %d judgment(s) repeated a verdict the critique or its revision "
                        "states and gave none of the judge's own: counted the minimum", protocol, rec.item,
                        rec.judge_echoed)
        records.append(rec)
    return records


def _judgment(kind: str, text: str | None, by_reference: bool, quoted) -> float | None:
    """The value of one judge reply: a 1-10 grade (``rqs``: CriticEval's ``Score: x`` on the paper variant, else
    ``Rating: [[x]]``) or the revision's preference (1 / 0.5 / 0); None when unreadable, or when the reply gives two
    different grades. A line that repeats a line of a ``quoted`` text is never the verdict."""
    if text is None:
        return None
    if kind == "rqs":
        return parse_grade(text, quoted=quoted) if by_reference else parse_bracket_rating(text, quoted=quoted,
                                                                                          unique=True)
    # the last verdict counts: the paper's judges explain first and may name another marker on the way ("a tie
    # would be [[C]]"), so two different verdicts are not read as none here (unlike two ratings)
    return PREFERENCE[kind].get(parse_bracket_verdict(text, quoted=quoted) or "")


def deferred_record(doc: dict) -> RevisionRecord:
    return RevisionRecord(domain=doc["domain"], item=item_label(doc), group=doc.get("quality") or "",
                          checked=bool(doc["check"]), is_deferred=True, variant=variants.of(doc),
                          failure_rule=doc.get("failure_rule", ""))


class Revision(Scorer):
    """The revision protocols (utility, the reviser pool): revisers revise with the critique, checks and a judge
    score the revisions (``run``)."""

    name, label, command = "revision", "revision", "revise"
    about = "revisers revise with the critique; checks and a judge score the revisions"
    roles, uses_executor, live_failures = ("reviser", "judge"), True, True
    lm_eval_only = "its reviser and judge run inside lm-eval, between generation and scoring"

    def check_settings(self):
        executor = super().check_settings()
        resolve_failure_rule()
        return executor

    @staticmethod
    def _models(ctx: Context) -> tuple[list[LLMSettings], LLMSettings]:
        """The reviser pool and the judge: the context's, else the CRITIC_* settings."""
        revisers = reviser_pool() if ctx.revisers is None else ctx.revisers
        return revisers, ctx.judge or judge_settings()

    def batch(self, kind, docs, samples, ctx):
        revisers, judge = self._models(ctx)
        return run(kind.protocol, docs, first_replies(samples), revisers, judge, ctx.executor, progress=ctx.progress)

    def defers(self, kind, docs, ctx):
        why = missing(kind.protocol, docs, *self._models(ctx))
        if not why:
            return ""
        return (f"critic_tasks: {kind.protocol} scoring deferred (set {why}); keep generations with --log_samples "
                "and run `critic-eval revise <output_path>`")

    def deferred_record(self, doc):
        return deferred_record(doc)

    def failed(self, record):
        return record.failed

    def summary(self, kind, records):
        rates = per_reviser_pass_rates(records)
        if not rates:  # per reviser: not a registry key (the pool is set at run time); also in `critic-eval revise`
            return ""
        return (f"critic_tasks: {kind.protocol} pass rate per reviser: "
                + ", ".join(f"{name} {rate:.2f}" for name, rate in rates.items()))
