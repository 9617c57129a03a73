"""The revision protocols' prompts (our wording), one version per protocol, variant and role: a changed template is
never answered from the old cache, and the results name the versions in use.

Two variants (``protocols.variants``, recorded with the results):

``paper`` (default), per protocol:

* MultiCritique (Lan et al. 2024b, sec. 4.2 and Appendix C.2: the revisions are evaluated with CriticEval's codebase):
  the critic writes CriticEval's free-text feedback (``criticbench.prompts.feedback_sub_prompt``), each reviser
  revises with CriticEval's correction prompt carrying that feedback (``criticbench.prompts.correction_prompt``:
  ``#### RESULT: x`` for math_cot, one ````python`` block for programs), and R_sub is CriticEval's subjective
  correction judge (``criticbench.judge_prompts.correction_judge_prompt``): the revision graded 1-10 against the human
  reference revision (``correction``, worth 8), ``Score: x``. An item outside CriticBench's nine domains takes the
  domain its check belongs to (math_cot, code_not_exec), else ``summary`` (with an article) or ``qa``.
* RCO (Yu et al. 2025, Appendix B, Tables 11-15, 18-22 and 28-32, 38-42), by task kind (dialog: chat, harmlessness;
  summary; question answering: qa, translate and other text; math: math_cot, math_pot and items checked by a final
  answer; code): the critic comments on the response and ends with ``Suggestions for improvement:``; the actor
  revises following those suggestions, starting with ``My revised answer:`` (our check's answer form added); the
  judge explains first and gives its verdict last, ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie) or ``Rating: [[x]]``
  (1-10); the math judge sees the reference answer (the item's ``ground_truth_answer``).

``short``: one generic prompt per role for every item, the judge's marker asked first (the last marker in a reply
counts); MultiCritique's R_sub is a reference-free 1-10 rating on this variant.

The papers' own text, where the user has it: with a checkout of open-compass/CriticEval (``CRITICBENCH_TOOLKIT_DIR``
or the task option ``toolkit_dir``, as the leaderboard protocol finds it), MultiCritique's paper variant asks
CriticEval's released prompts, read from that checkout at run time and sent byte for byte: the critic its subjective
feedback prompt and the revisers its correction prompt (``inference/utils/prompts.py`` + ``formats.py``), the R_sub
judge its subjective correction judge (``critic_bench/evaluators/prompts/correction_prompts.py``), each filled in
one pass (a critique that contains ``{q}`` stays text). Without one, the prompts above are our paraphrases of the
papers' structure. RCO released no prompt files: its prompts are always paraphrases of its tables. Which text each
role was asked with is recorded with the results (``prompt_source``: ``released: <file>``, ``paraphrase``, or
``ours`` for the short variant's generic prompts).

Model-written texts are data (issue 27): in our prompts (paraphrases and the short variant) the initial response,
the critique and the revision each go between BEGIN/END lines whose code they cannot contain (``core.quoting``),
under a note that the blocks are data; RCO's judges keep the system part free of them. CriticEval's released text is
sent as released: the model texts go into its slots as written, unfenced (a fence would be our text inside theirs,
a prompt CriticEval never sent); the grade parsing (``pipeline``) refuses an echoed grade there as everywhere, the
texts handed to it as they are.
"""

from __future__ import annotations

import json
from pathlib import Path

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.quoting import note, noted, quote_fields
from critic_tasks.llm.chat import ChatPrompt
from critic_tasks.protocols import variants
from critic_tasks.protocols.criticbench import judge_prompts as cb_judge_prompts
from critic_tasks.protocols.criticbench import prompts as cb_prompts
from critic_tasks.protocols.criticbench import toolkit
from critic_tasks.protocols.criticbench.prompts import DOMAINS

PROTOCOL_OF = {"revision_pool": "multicritique", "utility": "rco"}  # the data dimension -> its protocol

CRITIC_VERSION = "revision-critic-v1"  # the short variant's versions
# v2: the model-written texts (initial response, critique, revision) fenced as data (issue 27), so no reply to an
# unfenced prompt is reused
REVISER_VERSION = "revision-reviser-v2"
JUDGE_VERSION = "revision-judge-v2"
_VERSIONS = {
    ("multicritique", variants.SHORT): {"critic": CRITIC_VERSION, "reviser": REVISER_VERSION, "judge": JUDGE_VERSION},
    ("rco", variants.SHORT): {"critic": CRITIC_VERSION, "reviser": REVISER_VERSION, "judge": JUDGE_VERSION},
    # MultiCritique's paper variant asks CriticEval's prompts; its judge is CriticEval's correction judge
    ("multicritique", variants.PAPER): {"critic": "multicritique-critic-paper-v1",
                                        "reviser": "multicritique-reviser-paper-v2",  # v2: fenced (issue 27)
                                        "judge": cb_judge_prompts.PROMPT_VERSION},
    ("rco", variants.PAPER): {"critic": "rco-critic-paper-v1", "reviser": "rco-reviser-paper-v2",
                              # v2: a system and a user message, "summaries"; v3: model-written texts fenced
                              "judge": "rco-judge-paper-v3"},
}


# MultiCritique's paper variant asked with CriticEval's released text (the user's checkout): other versions, so a
# reply to a paraphrase is never taken for one to the released prompt, and the results say which was asked
_RELEASED_VERSIONS = {"critic": "criticeval-released-feedback-sub", "reviser": "criticeval-released-correction",
                      "judge": "criticeval-released-correction-judge"}
# the files of a CriticEval checkout each role's released text is read from
_RELEASED_FILES = {"critic": ("inference/utils/prompts.py", "inference/utils/formats.py"),
                   "reviser": ("inference/utils/prompts.py", "inference/utils/formats.py"),
                   "judge": (toolkit.CORRECTION_JUDGE_FILE.as_posix(),)}
ROLES = ("critic", "reviser", "judge")


def protocol_of(doc: dict) -> str:
    return PROTOCOL_OF[doc["dimension"]]


def uses_released(protocol: str, variant: str) -> bool:
    """Whether this protocol and variant ask a released text when the user has it (MultiCritique's paper variant:
    CriticEval's prompts); the others are ours whatever is installed."""
    return protocol == "multicritique" and variant == variants.PAPER


def toolkit_of(doc: dict) -> str:
    """The CriticEval checkout whose released prompts this document is asked with ('' for none: our text)."""
    if not uses_released(protocol_of(doc), variants.of(doc)):
        return ""
    return doc.get("toolkit_dir") or ""


def versions(protocol: str, variant: str, released: bool = False) -> dict[str, str]:
    """The prompt version of each role (critic, reviser, judge) for a protocol and variant (``released``: asked
    with CriticEval's released text from the user's checkout)."""
    if released and uses_released(protocol, variant):
        return dict(_RELEASED_VERSIONS)
    return dict(_VERSIONS[protocol, variant])


def sources(protocol: str, variant: str, toolkit_dir: str = "") -> dict[str, str]:
    """Where each role's prompt text comes from: ``released: <file(s)>`` (read from the user's checkout at run
    time), ``paraphrase`` (our wording of the paper's prompt) or ``ours`` (the short variant's generic prompts)."""
    if variant == variants.SHORT:
        return dict.fromkeys(ROLES, "ours")
    if toolkit_dir and uses_released(protocol, variant):
        root = Path(toolkit_dir)
        return {role: "released: " + " + ".join(str(root / f) for f in files) for role, files in _RELEASED_FILES.items()}
    return dict.fromkeys(ROLES, "paraphrase")


def source_text(protocol: str, variant: str, toolkit_dir: str = "") -> str:
    """``sources`` as one JSON text (a results entry)."""
    return json.dumps(sources(protocol, variant, toolkit_dir), sort_keys=True)


def _paper(doc: dict) -> bool:
    return variants.of(doc) == variants.PAPER


# ----------------------------------------------------------------------------- short variant (generic)


def _quote(**texts: str) -> tuple[dict[str, str], str]:
    """Each model-written text fenced as data (``core.quoting``: between BEGIN/END lines whose code none of them
    contains), and the note that says so, to go before the first block."""
    fenced, nonce = quote_fields(**texts)
    return fenced, note(nonce)


def _task(doc: dict, response: str | None = None) -> str:
    """The article, question and initial response (``response``: as given, fenced; default: the bare text)."""
    article = f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""
    response = doc["generation"] if response is None else response
    return f"{article}[Question]\n{doc['question']}\n\n[Initial response]\n{response}\n\n"


_CRITIC = """Review the response below to the question. Write feedback that would help its author improve it: point \
out every error (facts, reasoning, calculations, code), anything missing or irrelevant, and give concrete suggestions \
for a better response. Do not rewrite the response yourself.

{task}[Your feedback]
"""

_FORMS = {
    "final_answer": "Show your reasoning, then end with a line 'The answer is X' giving the final answer.",
    "program_value": "Reply with the complete revised program in one ```python code block: a class Solution whose "
                     "solution() method returns the answer.",
    "unit_test": "Reply with the complete revised code in one ```python code block, keeping the function names and "
                 "signatures of the initial response.",
}
_REVISER = """Revise the initial response to the question using the feedback below. Fix what the feedback rightly \
points out, keep what is good, and ignore suggestions that are wrong. {form}

{note}

{task}[Feedback]
{feedback}

[Your revised response]
"""

_PAIRWISE = """Compare two responses to the question below and decide which one is better: more correct, more \
helpful, more complete and clearer. Start your reply with your verdict: [[A]] if response A is better, [[B]] if \
response B is better, or [[C]] for a tie; then explain briefly.

{note}

{article}[Question]
{question}

[Response A]
{a}

[Response B]
{b}

[Your verdict]
"""

_RATING = """Rate the quality of the response to the question below on a scale of 1 to 10 (1: useless or wrong, \
10: fully correct, helpful and clear). Start your reply with your rating as "Rating: [[x]]", then explain briefly.

{note}

{article}[Question]
{question}

[Response]
{response}

[Your rating]
"""


def _article(doc: dict) -> str:
    return f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""


# ----------------------------------------------------------------------------- paper variant: MultiCritique


def criticbench_domain(doc: dict) -> str:
    """The CriticBench domain whose prompts an item is asked with (its own; else its check's; else by its inputs)."""
    if doc["domain"] in DOMAINS:
        return doc["domain"]
    return doc.get("check_domain") or ("summary" if doc.get("article") else "qa")


def _as_criticbench(doc: dict, **fields) -> dict:
    return {**doc, "domain": criticbench_domain(doc), "exec_rest": doc.get("exec_rest") or "", **fields}


# ----------------------------------------------------------------------------- paper variant: RCO

_KIND_OF_DOMAIN = {"chat": "dialog", "harmlessness": "dialog", "summary": "summary", "qa": "qa", "translate": "qa",
                   "math_cot": "math", "math_pot": "math", "code_exec": "code", "code_not_exec": "code"}
_KIND_OF_CHECK = {"final_answer": "math", "program_value": "math", "unit_test": "code"}


def task_kind(doc: dict) -> str:
    """RCO's task kind for an item: dialog, summary, qa, math or code (each kind has its own critic, reviser and
    judge prompts in the paper)."""
    if doc["domain"] in _KIND_OF_DOMAIN:
        return _KIND_OF_DOMAIN[doc["domain"]]
    if doc.get("check") in _KIND_OF_CHECK:
        return _KIND_OF_CHECK[doc["check"]]
    return "summary" if doc.get("article") else "qa"


# kind -> (who judges, what is shown, the input's label (the paper's field names), the response's name, what to
# look at)
_RCO_KINDS = {
    "dialog": ("an impartial judge", "a dialog between a human and an AI assistant", "Conversation", "response",
               "whether it is helpful, harmless and correct"),
    "summary": ("an impartial judge", "an article and a summary of it", "Question", "summary",
                "whether it misses key information from the article or holds information that is unnecessary or "
                "false"),
    "qa": ("an impartial judge", "a question and an answer", "User Question", "answer", "what is wrong with it"),
    "math": ("an expert on mathematics", "a math problem and an answer to it", "Math Problem", "answer",
             "what is wrong with it"),
    "code": ("an expert on computer programming", "a coding problem and code written for it", "Code Requirements",
             "code", "whether it is correct and readable and meets the requirements"),
}
_RULE = "----------"
_PLURAL = {"summary": "summaries", "code": "code"}  # the response's name, of two responses


def _rco_input(doc: dict, kind: str) -> str:
    """The task input as RCO's prompts show it: the article first for a summary, then the question / problem."""
    article = f"[Article]\n{doc['article']}\n\n" if doc.get("article") else ""
    return f"{article}[{_RCO_KINDS[kind][2]}]\n{doc['question']}\n"


def _rco_critic(doc: dict) -> str:
    kind = task_kind(doc)
    who, shown, _, name, look = _RCO_KINDS[kind]
    return (f"You are {who}. You are shown {shown}. Comment on the {name}: look at {look}. Then give suggestions for "
            f"improving the {name} that follow from your comment, under the heading \"Suggestions for improvement:\"."
            f"\n{_RULE}\n{_rco_input(doc, kind)}{_RULE}\n[The assistant's {name}]\n{doc['generation']}\n{_RULE}\n"
            "Your comment:\n")


def _rco_reviser(doc: dict, feedback: str | None) -> str:
    kind = task_kind(doc)
    who, shown, _, name, _ = _RCO_KINDS[kind]
    form = _FORMS.get(doc.get("check", ""), "")
    q, data_note = _quote(original=doc["generation"], comment=(feedback or "").strip() or "(none)")
    return (f"You are shown {shown}. {who[0].upper() + who[1:]} has commented on the {name}. Revise the {name} to "
            f"improve it, following the suggestions for improvement in the comment, and start your reply with "
            f"\"My revised {name}:\".{' ' + form if form else ''}\n{data_note}\n{_RULE}\n{_rco_input(doc, kind)}"
            f"{_RULE}\n[Original {name}]\n{q['original']}\n{_RULE}\n[The comment]\n{q['comment']}\n"
            f"{_RULE}\nYour revision:\n")


# kind -> (what a pairwise judge weighs, what a rating judge weighs)
_RCO_CRITERIA = {
    "dialog": ("which assistant follows the human's instructions better: how helpful, relevant, accurate, deep and "
               "creative each response is, and how much detail it gives",
               "how helpful, relevant, accurate, deep and creative the response is, and how much detail it gives"),
    "summary": ("whether each summary keeps all the key information of the article and avoids false or unnecessary "
                "sentences",
                "whether the summary keeps all the key information of the article and avoids false or unnecessary "
                "sentences"),
    "qa": ("which assistant follows the user's instructions and answers the question better: how helpful, relevant, "
           "accurate, deep and creative each answer is, and how much detail it gives",
           "how helpful, relevant, accurate, deep and creative the answer is, and how much detail it gives"),
    "math": ("correctness and helpfulness: compare both answers with the reference answer, and find and correct any "
             "mistakes",
             "correctness and helpfulness: compare the answer with the reference answer, and find and correct any "
             "mistakes"),
    "code": ("correctness and helpfulness: compare the two programs, and find and correct any mistakes",
             "correctness and helpfulness: find and correct any mistakes"),
}


def _reference_answer(doc: dict, kind: str) -> str:
    """The math judge's reference answer: the item's gold final answer (CriticBench ships no worked solution)."""
    gold = doc.get("ground_truth_answer") or ""
    if kind != "math" or not gold:
        return ""
    return f"[The Start of Reference Answer]\n{gold}\n[The End of Reference Answer]\n\n"


def _given(kind: str, what: str) -> str:
    return f"You are given {'a reference answer and ' if kind == 'math' else ''}{what}."


# The paper prints its judges in two parts (Tables 28-32, 38-42: [SYSTEM] the instructions, [USER] the task and the
# answers): ours go as a ChatPrompt, the system part as a system message where the judge's backend takes one. The
# user part opens with the task as the paper's does; the data note comes right before the first fenced answer.
def _rco_pairwise(doc: dict, a: str, b: str) -> ChatPrompt:
    kind = task_kind(doc)
    name = _RCO_KINDS[kind][3]
    names = _PLURAL.get(name, name + "s")
    title, given = name.capitalize(), _given(kind, "the two assistants' " + names)
    system = (f"Act as an impartial judge of the {names} two AI assistants gave to the task below. Weigh "
              f"{_RCO_CRITERIA[kind][0]}. {given} Begin with "
              "a short explanation comparing the two. Neither the order in which they appear, nor their length, nor "
              "the assistants' names may influence you; be as objective as possible. After your explanation, give "
              'your final verdict in exactly this form: "[[A]]" if assistant A is better, "[[B]]" if assistant B is '
              'better, "[[C]]" for a tie.')
    q, data_note = _quote(assistant_a=a, assistant_b=b)
    user = (f"{_rco_input(doc, kind)}\n{_reference_answer(doc, kind)}{data_note}\n\n"
            f"[The Start of Assistant A's {title}]\n{q['assistant_a']}\n[The End of Assistant A's {title}]\n\n"
            f"[The Start of Assistant B's {title}]\n{q['assistant_b']}\n[The End of Assistant B's {title}]\n")
    return ChatPrompt(system, user)


def _rco_rating(doc: dict, response: str) -> ChatPrompt:
    kind = task_kind(doc)
    name = _RCO_KINDS[kind][3]
    title, given = name.capitalize(), _given(kind, "the assistant's " + name)
    system = (f"Act as an impartial judge of the {name} an AI assistant gave to the task below. Weigh "
              f"{_RCO_CRITERIA[kind][1]}. {given} Begin with a short "
              f"explanation. Do not let the {name}'s length influence you; be as objective as possible. After your "
              f'explanation, rate the {name} on a scale of 1 to 10 in exactly this form: "Rating: [[x]]", for '
              'example "Rating: [[5]]".')
    q, data_note = _quote(assistant=response)
    user = (f"{_rco_input(doc, kind)}\n{_reference_answer(doc, kind)}{data_note}\n\n"
            f"[The Start of Assistant's {title}]\n{q['assistant']}\n[The End of Assistant's {title}]\n")
    return ChatPrompt(system, user)


# ----------------------------------------------------------------------------- the prompts, by protocol and variant


def _released_prompt(doc: dict, dimension: str, **fields) -> str:
    """CriticEval's released inference prompt for ``doc`` (prefix + the domain's format filled in + post), from the
    checkout ``doc`` names, as its own loader composes it."""
    kit = toolkit.load_toolkit(toolkit_of(doc))
    return kit.compose(dimension, "sub", criticbench_domain(doc), _as_criticbench(doc, **fields))


def critic_prompt(doc: dict) -> str:
    if _paper(doc):
        if protocol_of(doc) == "multicritique":
            if toolkit_of(doc):
                return _released_prompt(doc, "feedback")
            return cb_prompts.feedback_sub_prompt(_as_criticbench(doc))
        return _rco_critic(doc)
    return _CRITIC.format(task=_task(doc))


def reviser_prompt(doc: dict, feedback: str | None) -> str:
    if _paper(doc):
        if protocol_of(doc) == "multicritique":
            text = (feedback or "").strip() or "(no feedback)"
            if toolkit_of(doc):  # CriticEval's text as released, the critique in its slot as written (module doc)
                return _released_prompt(doc, "correction", feedback=text)
            q, nonce = quote_fields(generation=doc["generation"], feedback=text)
            return noted(cb_prompts.correction_prompt(_as_criticbench(doc, **q), with_feedback=True), nonce)
        return _rco_reviser(doc, feedback)
    form = _FORMS.get(doc.get("check", ""), "Reply with the revised response only.")
    q, data_note = _quote(initial_response=doc["generation"], feedback=(feedback or "").strip() or "(no feedback)")
    return _REVISER.format(form=form, note=data_note, task=_task(doc, q["initial_response"]), feedback=q["feedback"])


def pairwise_prompt(doc: dict, a: str, b: str) -> str:
    """RCO's preference judgment between two responses (A and B as given, each fenced as data)."""
    if _paper(doc):
        return _rco_pairwise(doc, a, b)
    q, data_note = _quote(response_a=a, response_b=b)
    return _PAIRWISE.format(note=data_note, article=_article(doc), question=doc["question"], a=q["response_a"],
                            b=q["response_b"])


def rating_prompt(doc: dict, response: str) -> str:
    """A 1-10 rating of one response: RCO's RQS (both variants); MultiCritique's R_sub on the short variant."""
    if _paper(doc):
        return _rco_rating(doc, response)
    q, data_note = _quote(response=response)
    return _RATING.format(note=data_note, article=_article(doc), question=doc["question"], response=q["response"])


def reference_judge_prompt(doc: dict, critique: str | None, revision: str) -> str:
    """MultiCritique's R_sub on the paper variant: CriticEval's correction judge grades the revision 1-10 against the
    human reference revision (``correction``, worth 8), seeing the critique the revision was made from."""
    item = _as_criticbench(doc, feedback=(critique or "").strip() or "(no feedback)")
    if toolkit_of(doc):
        return _released_judge_prompt(item, revision)
    return cb_judge_prompts.correction_judge_prompt(item, revision)


def _released_judge_prompt(item: dict, revision: str) -> str:
    """CriticEval's subjective correction judge for the item's text domain, from the user's checkout, filled as its
    evaluator fills it (the critique goes where the evaluator puts the dataset's feedback)."""
    root = toolkit.load_toolkit(item["toolkit_dir"]).root
    setting = f"toolkit_dir={item['toolkit_dir']}"
    judges = toolkit.correction_judges(root, setting)
    domain = item["domain"]
    if domain not in judges:
        raise ConfigError(f"{setting}: {root / toolkit.CORRECTION_JUDGE_FILE} has no correction judge for domain "
                          f"{domain!r} (it has {', '.join(sorted(judges))})")
    fields = {"a": item.get("article") or "", "q": item["question"], "r": item["generation"],
              "f": item["feedback"], "c_a": item["correction"], "c_b": revision}
    return toolkit.fill(judges[domain], fields, f"{root / toolkit.CORRECTION_JUDGE_FILE} ({domain})")


def gold_text(doc: dict) -> str:
    """What a correct revision must give (the gold answer or the test), for logs; empty for judged items."""
    return doc.get("ground_truth_answer") or doc.get("unit_test") or ""
