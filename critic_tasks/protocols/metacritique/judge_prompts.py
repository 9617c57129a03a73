"""The judge's prompts for MetaCritique's three steps (our wording; the paper's inputs and verdict format).

1. ``extraction_prompt``: split a critique into atomic information units (AIUs), one numbered line each, or
   "None" when it states nothing checkable.
2. ``precision_prompt``: is each AIU of the critique factual, given the question, the answer under critique and
   the reference answer? One ``k. True`` / ``k. False`` line per numbered unit.
3. ``recall_prompt``: is each AIU of the reference critique entailed by the critique? Same verdict format.

Every quoted text (question, answer, critique, statements) sits between BEGIN/END lines whose code it cannot contain
(``core.quoting``), under a note that the blocks are data: a critique cannot pose as the verdict list or a new
instruction. A unit numbered twice with different verdicts counts as no verdict (``parsing.parse_numbered_verdicts``).
"""

from __future__ import annotations

from critic_tasks.core.quoting import noted, quote_fields

PROMPT_VERSION = "metacritique-judge-v2"  # v2: model-written texts fenced as data (issue 27)

_EXTRACT = """Break the critique below into atomic information units (AIUs). An AIU is one short, self-contained \
statement that can be checked on its own: a single claim, judgement or suggestion the critique makes about the \
answer. Rewrite each so it is understandable without the others (replace pronouns by what they refer to), keep \
its meaning, and do not add anything the critique does not say.

Reply with the units only, one per line, numbered "1.", "2.", ... If the critique contains no checkable \
statement at all, reply with the single word None.

[Critique]
{critique}
"""

_PRECISION = """You are checking the factuality of the statements a critique makes about an answer to a question. \
Use the question, the answer under critique and the reference answer (written by a strong model; it may itself be \
imperfect) to decide, for each numbered statement, whether it is true (correct about the question and the \
answer) or false (wrong, unsupported, or a bad suggestion).

[Question]
{question}

[Answer under critique]
{response}

[Reference answer]
{reference_answer}

[Statements]
{units}

Reply with exactly one line per statement, in order, as "1. True" or "1. False", "2. True" or "2. False", and so \
on, with no other text.
"""

_RECALL = """You are checking whether a critique covers the important points of a reference critique. For each \
numbered point of the reference critique, decide whether the critique below states or clearly implies it (True) \
or not (False).

[Question]
{question}

[Answer under critique]
{response}

[Critique]
{critique}

[Reference points]
{units}

Reply with exactly one line per reference point, in order, as "1. True" or "1. False", "2. True" or "2. False", \
and so on, with no other text.
"""


def numbered(units) -> str:
    return "\n".join(f"{k}. {u}" for k, u in enumerate(units, 1))


def _fenced(template: str, **fields: str) -> str:
    """``template`` with each field fenced as data, the note before the first block."""
    fenced, nonce = quote_fields(**fields)
    return noted(template.format(**fenced), nonce)


def extraction_prompt(critique: str) -> str:
    return _fenced(_EXTRACT, critique=critique)


def precision_prompt(doc: dict, aius) -> str:
    return _fenced(_PRECISION, question=doc["question"], response=doc["response"],
                   reference_answer=doc["reference_answer"], units=numbered(aius))


def recall_prompt(doc: dict, critique: str) -> str:
    return _fenced(_RECALL, question=doc["question"], response=doc["response"], critique=critique,
                   units=numbered(doc["reference_aius"]))
