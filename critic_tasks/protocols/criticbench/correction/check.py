"""Objective correction checks for the domains whose ``Domain.correction_check`` is set (CriticBench).

A model's revision is first *parsed* (a final answer, or a code block) and then *passed* if the answer matches the
gold answer or the code passes the item's unit tests in the sandbox (``critic_tasks.sandbox``).

Where we differ from the original toolkit, on purpose:

* a gold answer that cannot be parsed makes the item invalid (``ValueError`` naming ``ground_truth_answer``), never a
  free pass; likewise a code item without ``unit_test``;
* a gold answer of 0 can be matched; answers are compared with math-verify, then numerically with a relative
  tolerance of 1e-4 (no ``eval``, no int truncation);
* math_pot compares only the value of ``Solution().solution()`` (printed behind a marker), not any stdout line;
* HumanEval's entry point: see ``programs.find_entry_point``.

``detail`` (saved with ``--log_samples``) is an excerpt, never a program's whole output: the parsed answer or
math_pot value, or the last line of a failing program's error output, cut to ``DETAIL_CHARS`` characters with a
note of how many were left out (``excerpt``). A program can print what it likes; the samples keep that much.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import secrets
import textwrap
from typing import Sequence

from critic_tasks.core.answers import answers_match, extract_final_answer, parse_gold
from critic_tasks.core.errors import ConfigError
from critic_tasks.core.parsing import looks_cut_off
from critic_tasks.core.records import CheckOutcome, digest
from critic_tasks.protocols.criticbench.correction.programs import (
    NO_CALLS_MARKER,
    RESULT_MARKER,
    TESTS_DONE_MARKER,
    build_code_test_pair,
    build_math_pot_program,
    find_entry_point,
    item_functions,
    plan_tests,
)
from critic_tasks.protocols.criticbench.prompts import DOMAINS, OBJECTIVE_CORRECTION_DOMAINS
from critic_tasks.sandbox import Pair, Program, get_executor

DETAIL_CHARS = 200


# ----------------------------------------------------------------------------- a reply -> the program in it
# (its only caller is this check: the revision, a solution)

_FENCE_LANG = re.compile(r"[ \t]*([\w+.-]*)")


def fenced_blocks(text: str):
    """(language, body, closed) of each fenced block, in order: what
    ``re.finditer(r"```[ \\t]*([\\w+.-]*)[^\\n]*\\n(.*?)(```|\\Z)", text, re.S)`` gives, in one pass. A block opens at
    three backticks (its language: the word after them), its body starts on the next line and runs to the next three
    backticks (closed) or to the end (cut off). An opening with no line break after it ends the search (no later one has
    one); the regex retried the rest of the reply from each of those, quadratic in a reply of many."""
    start = 0
    while True:
        opened = text.find("```", start)
        if opened < 0:
            return
        line_end = text.find("\n", opened + 3)
        if line_end < 0:
            return
        lang = _FENCE_LANG.match(text, opened + 3, line_end).group(1)
        closing = text.find("```", line_end + 1)
        if closing < 0:
            yield lang, text[line_end + 1:], False
            return
        yield lang, text[line_end + 1:closing], True
        start = closing + 3


_PY_LANGS = {"python", "py", "python3", "py3"}


# How much of a reply is parsed as Python, all candidates together. A parse builds a tree of the whole program
# (8 s for a megabyte of one-line statements), so a reply that would need more is read as far as this goes: a
# candidate beyond what is left is no program. A revision is generated within CORRECTION_BUDGET (1,024 tokens, a
# few thousand characters; the released ones run to ~2,100), so no real reply comes near it: for any reply up to
# this size the reading is exactly what parsing everything gives.
PARSED_CHARS = 50_000


def _is_program(code: str, budget: list[int] | None = None) -> bool:
    """Parses as Python and does something besides bare expressions (so prose like ``1.71`` is not code).
    ``budget``: a one-item list of the characters still allowed to be parsed, spent here."""
    if budget is not None:
        if len(code) > budget[0]:
            return False
        budget[0] -= len(code)
    try:
        tree = ast.parse(code)
    except Exception:  # SyntaxError, ValueError (NUL bytes), RecursionError (absurd nesting)
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def extract_code(text: str | None) -> str | None:
    """The first ```python (or ```py) block; an unlabelled block only if it is Python; else the whole text if it is.
    Whether a block is Python is parsed, up to PARSED_CHARS characters in all."""
    if not text:
        return None
    budget = [PARSED_CHARS]
    text = text.replace("\r\n", "\n")
    for lang, body, closed in fenced_blocks(text):
        lang = lang.lower()
        if lang not in _PY_LANGS and lang != "":
            continue  # another language's block: nothing to read in it
        body = textwrap.dedent(body).strip("\n")
        if lang in _PY_LANGS and body.strip() and (closed or _is_program(body, budget)):  # cut off: only if it parses
            return body
        if lang == "" and _is_program(body, budget):
            return body
    if "```" not in text and len(text) <= budget[0] and _is_program(whole := textwrap.dedent(text), budget):
        return whole.strip("\n")
    return None


# ----------------------------------------------------------------------------- the check


def excerpt(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with how many were dropped: what ``detail`` keeps of program output."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more characters]"


# digits, operators, brackets, LaTeX commands and single-letter variables: no word (a unit, prose, a marker)
_ONE_EXPRESSION = re.compile(r"(?:[\d\s.,+\-*/^_()\[\]{}%!:=<>|'&]|\\(?:begin|end|operatorname)\{[A-Za-z*]+\}"
                             r"|\\[A-Za-z]+|\\.|(?<![A-Za-z])[A-Za-z](?![A-Za-z]))+")


def gold_answer(item: dict) -> str:
    """The item's gold final answer (``ground_truth_answer``: a string, a number, or a dict with Answer/Rationale)."""
    gold = item.get("ground_truth_answer")
    if isinstance(gold, dict):
        gold = next((gold[k] for k in ("Answer", "answer", "Rationale", "rationale") if gold.get(k)), None)
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        gold = repr(gold)
    answer = None
    if isinstance(gold, str):
        # a gold that is one expression (MATH's "\\frac{3}{4}", "-\\frac{1}{2}", "2\\sqrt{3}", "10^{5}", "(2, 5)") is
        # the answer whole, never one of its numbers; one with words ("72 cm^2", a rationale) is read like a reply
        whole = gold.strip().strip("$").strip()
        answer = whole if _ONE_EXPRESSION.fullmatch(whole) and re.search(r"\d|\\", whole) and "\\boxed" not in whole else \
            extract_final_answer(gold, item.get("question"))
    if answer is None:
        raise ValueError(
            f"field 'ground_truth_answer' has no parseable answer: {str(gold)[:200]!r}; the item is invalid")
    parse_gold(answer)  # raises if math-verify and the number parser both fail
    return answer



def _unit_test(item: dict) -> str:
    data_source = item.get("data_source")
    unit_test = item.get("unit_test")
    if not isinstance(unit_test, str) or not unit_test.strip():
        raise ValueError("field 'unit_test' is missing or empty; the item is invalid (it would pass any code)")
    try:
        plan_tests(unit_test, data_source, None)  # ValueError: a test function nothing can call
    except SyntaxError as err:
        raise ValueError(f"field 'unit_test' is not Python ({err.msg}, line {err.lineno}); the item is invalid") from None
    return unit_test


def check_corrections(domain: str, revisions: Sequence[str | None], items: Sequence[dict], executor=None,
                      timeout_s: float = 4.0, invalid: str = "raise") -> list[CheckOutcome]:
    """Score each revision against its item; one ``CheckOutcome`` per item.

    ``status`` is ``passed``, ``wrong_answer``, ``no_result`` (math_pot printed no value), ``failed``, ``timeout``,
    ``tests_not_finished`` (exit 0, but the line after the last test never ran), ``no_calls`` (the tests ran but
    never called the revised code: a failure, never a pass),
    ``error`` (the sandbox could not run it), ``unparsed`` or ``invalid`` (bad gold / unit test, with
    ``invalid="mark"``; the default ``"raise"`` raises ``ValueError`` before anything runs). All programs of a call go
    to the executor in one batch, so they run in parallel.
    """
    spec = DOMAINS.get(domain)
    if spec is None or not spec.objective_correction:
        raise ConfigError(f"domain {domain!r} has no objective correction check; choose one of "
                          f"{list(OBJECTIVE_CORRECTION_DOMAINS)}")
    if len(revisions) != len(items):
        raise ValueError(f"{len(revisions)} revisions for {len(items)} items")
    if invalid not in ("raise", "mark"):
        raise ValueError("invalid must be 'raise' or 'mark'")
    golds: list = [None] * len(items)
    results: list = [None] * len(items)
    for i, item in enumerate(items):
        try:
            golds[i] = gold_answer(item) if spec.needs_gold_answer else _unit_test(item)
        except ValueError as err:
            if invalid == "raise":
                raise ValueError(f"item {i}: {err}") from None
            results[i] = CheckOutcome(False, False, "invalid", str(err))

    if spec.correction_check == "final_answer":
        for i, (text, item) in enumerate(zip(revisions, items)):
            if results[i] is None:
                answer = extract_final_answer(text, item.get("question"))
                ok = answer is not None and answers_match(answer, golds[i])
                status = "unparsed" if answer is None else "passed" if ok else "wrong_answer"
                results[i] = CheckOutcome(answer is not None, ok, status, answer or "")
        return _with_truncation(results, revisions)

    programs, slots, tokens = [], [], {}
    for i, (text, item) in enumerate(zip(revisions, items)):
        code = extract_code(text) if results[i] is None else None
        if results[i] is None and code is None:
            results[i] = CheckOutcome(False, False, "unparsed")
        elif code is not None:
            if spec.correction_check == "program_value":
                programs.append(Program(build_math_pot_program(code), timeout_s=timeout_s))
            else:  # the verdict comes from a trusted tester, never from the candidate's process (programs.py)
                entry = find_entry_point(code, item.get("question"), item.get("generation"), item.get("exec_rest"))
                tokens[i] = secrets.token_hex(16)
                try:
                    candidate, tester = build_code_test_pair(
                        code, golds[i], item.get("data_source"), entry,
                        item_functions(item.get("question"), item.get("generation")), tokens[i],
                        question=item.get("question"))
                except ValueError as err:  # tests no one can run (a test function taking two arguments)
                    if invalid == "raise":
                        raise ValueError(f"item {i}: {err}") from None
                    results[i] = CheckOutcome(False, False, "invalid", str(err))
                    continue
                programs.append(Pair(candidate, tester, timeout_s=timeout_s))
            slots.append(i)
    executor = executor or get_executor()
    if spec.correction_check == "program_value":
        runs = executor.run(programs) if programs else []
    elif not hasattr(executor, "run_pairs"):
        raise ConfigError(f"the code executor {type(executor).__name__} has no run_pairs(): code items are checked by "
                          "a trusted tester wired to the candidate program (critic_tasks.sandbox.Pair)")
    else:
        runs = executor.run_pairs(programs) if programs else []
    layer = getattr(executor, "isolation", "")  # recorded with every executed outcome (in logged samples)
    for i, run in zip(slots, runs):
        if spec.correction_check == "program_value":
            detail = excerpt(run.stderr.strip().splitlines()[-1]) if run.stderr.strip() else ""
            value = run.stdout.rsplit(RESULT_MARKER, 1)[1].strip() if RESULT_MARKER in run.stdout else None
            if run.status != "passed":
                results[i] = CheckOutcome(True, False, run.status, detail, layer)
                continue
            ok = value is not None and answers_match(value, golds[i])
            status = "passed" if ok else "no_result" if value is None else "wrong_answer"
            results[i] = CheckOutcome(True, ok, status, excerpt(value or ""), layer)
            continue
        verdict = run.trusted  # the candidate's own exit status and output are never read as a verdict
        lines = [line for line in verdict.stderr.splitlines() if line.strip() and TESTS_DONE_MARKER not in line]
        detail = excerpt(lines[-1]) if lines else ""
        if verdict.status == "failed" and NO_CALLS_MARKER in verdict.stderr:
            results[i] = CheckOutcome(True, False, "no_calls", "the tests made no call into the revised code", layer)
        elif verdict.status == "passed" and f"{TESTS_DONE_MARKER}{tokens[i]}" not in verdict.stderr:
            results[i] = CheckOutcome(True, False, "tests_not_finished", "the tests ended before the last one ran",
                                      layer)
        else:
            results[i] = CheckOutcome(True, verdict.status == "passed", verdict.status, detail, layer)
    return _with_truncation(results, revisions)


def check_by_domain(revisions: Sequence[str | None], items: Sequence[dict], executor=None,
                invalid: str = "raise") -> list[CheckOutcome]:
    """``check_corrections`` for items of any objective domains: one outcome per (revision, item), in order, each
    domain's programs checked in one batch (so they run in parallel)."""
    if len(revisions) != len(items):
        raise ValueError(f"{len(revisions)} revisions for {len(items)} items")
    by_domain: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        by_domain.setdefault(item["domain"], []).append(i)
    outcomes: list = [None] * len(items)
    for domain, positions in by_domain.items():
        checked = check_corrections(domain, [revisions[i] for i in positions], [items[i] for i in positions],
                                    executor=executor, invalid=invalid)
        for i, outcome in zip(positions, checked):
            outcomes[i] = outcome
    return outcomes


def check_samples(samples: Sequence[Sequence[str | None]], items: Sequence[dict], executor=None,
                  invalid: str = "raise") -> list[list[CheckOutcome]]:
    """``check_by_domain`` for every sample of every item (``samples[i]``: item i's revisions): the outcomes of
    item i's samples, in order, all programs of a domain in one batch."""
    flat = [(i, text) for i, texts in enumerate(samples) for text in texts]
    checked = check_by_domain([text for _, text in flat], [items[i] for i, _ in flat], executor=executor,
                              invalid=invalid)
    per_item: list[list[CheckOutcome]] = [[] for _ in samples]
    for (i, text), outcome in zip(flat, checked):
        # the reply's digest: whether an item's k samples were one text is known after the texts are gone
        per_item[i].append(dataclasses.replace(outcome, digest=digest(text)))
    return per_item


def parse_revisions(domain: str, revisions: Sequence[str | None], questions: Sequence[str | None] | None = None
                    ) -> list[CheckOutcome]:
    """What needs no gold answer or unit test: each revision's parse (a final answer, or a code block), as
    ``check_corrections`` reads it, and whether it was cut off; nothing runs. ``questions``, when known, let a
    multiple-choice letter count as an answer (``extract_final_answer``); status is ``parsed`` or ``unparsed``."""
    spec = DOMAINS.get(domain)
    if spec is None or not spec.objective_correction:
        raise ConfigError(f"domain {domain!r} has no objective correction check; choose one of "
                          f"{list(OBJECTIVE_CORRECTION_DOMAINS)}")
    questions = list(questions) if questions is not None else [None] * len(revisions)
    results = []
    for text, question in zip(revisions, questions):
        found = extract_final_answer(text, question) if spec.correction_check == "final_answer" else extract_code(text)
        results.append(CheckOutcome(found is not None, False, "parsed" if found is not None else "unparsed", found or ""))
    return _with_truncation(results, revisions)


def _with_truncation(results: list[CheckOutcome], revisions: Sequence[str | None]) -> list[CheckOutcome]:
    """Mark replies cut off by the token budget: a code block opened and never closed, or a reply with no answer in
    it that stops mid-sentence (lm-eval does not pass on why generation stopped, so the text is the evidence)."""
    def cut_off(outcome: CheckOutcome, text: str) -> bool:
        fences = text.count("```")
        return fences % 2 == 1 or (fences == 0 and outcome.status == "unparsed"
                                       and looks_cut_off(text, quantity=True))
    return [dataclasses.replace(r, truncated=cut_off(r, text or "")) for r, text in zip(results, revisions)]
