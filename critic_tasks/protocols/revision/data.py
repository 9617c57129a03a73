"""Items for the revision protocols: an initial response to revise, with a gold answer or a test where one exists.

* CriticBench (default): the initial responses of the main feedback files (``{split}``, all nine domains, or the
  task's ``domains``): math_cot / math_pot carry ``ground_truth_answer``, code_exec / code_not_exec ``unit_test``,
  so their revisions are checked by our answer checks and the sandbox; the five text domains are judged.
  ``CRITICBENCH_DATA_DIR`` / ``data_dir`` as for the CriticBench tasks (``sample``: the bundled sample).
* Your own items: ``items_file`` (task option, or ``--metadata '{"items_file": "items.jsonl"}'``), one JSON object
  per line with ``question`` and ``generation`` (the initial response); optional ``id``, ``domain``, ``article``,
  and a check: ``ground_truth_answer`` (a final answer, checked as math_cot's), ``unit_test`` (Python tests,
  run with the revised code as code_not_exec's), or ``domain`` naming one of CriticBench's four checked domains.
  A bad row is one DataError naming the file, line and field. ``correction`` (optional): the human reference
  revision, which MultiCritique's paper R_sub judges a judged (text) item's revisions against.
* MultiCritique, paper variant: the five text domains' items are CriticEval's subjective correction items
  (``sub_{split}_data/{d}_feedback_correction.json``), which hold the reference revisions (``correction``); the four
  checked domains stay the objective files'. Every judged item needs its ``correction`` (the test split withholds
  them: run the short variant there), else one DataError naming file, item and field.

Every document also carries the run's prompt ``variant`` (``protocols.variants``), ``failure_rule`` (what a
missing verdict or revision counts as; ``FAILURE_RULES`` below) and ``toolkit_dir`` (MultiCritique's paper variant:
the CriticEval checkout whose released prompts are asked, from ``toolkit_dir`` / ``CRITICBENCH_TOOLKIT_DIR``; ''
for our text), so re-scoring saved samples follows the run.

Every document field is a string (Arrow needs one type per column): ``check`` is the check kind (``final_answer``,
``program_value``, ``unit_test``, or empty for judged items) and ``check_domain`` the CriticBench domain whose
checker runs it.
"""

from __future__ import annotations

from pathlib import Path

from critic_tasks.core.columns import item_label
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.jsonl import iter_jsonl
from critic_tasks.core.settings import read_setting
from critic_tasks.protocols import variants
from critic_tasks.protocols.criticbench import data as cb_data
from critic_tasks.protocols.criticbench import toolkit
from critic_tasks.protocols.criticbench.data import resolve_domains
from critic_tasks.protocols.criticbench.prompts import DOMAINS, OBJECTIVE_CORRECTION_DOMAINS, TEXT_DOMAINS

DATA_DIR_ENV = cb_data.DATA_DIR_ENV
TASK_KINDS = ("revision_pool", "utility")  # MultiCritique's and RCO's data dimensions (registry)

# What a verdict or revision that is missing (an unreadable reply, a failed call) counts as; the papers do not say.
#   exclude (ours): an RCO item is averaged over its readable orders and left out when none is readable; a failed
#     revision leaves its reviser's pass-rate denominator and the item's utility / RQS / R_sub;
#   tie: a missing preference verdict counts 0.5 (no revision: the response stayed as it was, a tie in both orders),
#     a missing revision fails its check;
#   zero: a missing preference verdict counts 0 (a loss), a missing revision fails its check.
# Ratings (RQS, R_sub) are never filled in: an unreadable or missing rating is left out under every rule, as
# CriticEval's judge drops an item without a score. The counts partial_items / empty_items say how many items a
# rule touched.
FAILURE_RULES = ("exclude", "tie", "zero")
FAILURE_RULE_ENV = "CRITIC_REVISION_FAILURE_RULE"


def resolve_failure_rule(value: str | None = None) -> str:
    given = value not in (None, "")
    chosen = str(value) if given else read_setting(FAILURE_RULE_ENV)
    if chosen not in FAILURE_RULES:
        setting = "failure_rule" if given else FAILURE_RULE_ENV
        raise ConfigError(f"{setting}={chosen!r}: expected one of {', '.join(FAILURE_RULES)}")
    return chosen


def _doc(dimension: str, **fields) -> dict:
    domain = fields.get("domain") or "custom"
    check_domain = domain if domain in OBJECTIVE_CORRECTION_DOMAINS else fields.get("check_domain", "")
    doc = {"dimension": dimension, "fmt": "sub", "domain": domain, "check_domain": check_domain,
           "check": DOMAINS[check_domain].correction_check if check_domain else ""}
    for name in ("question", "article", "generation", "ground_truth_answer", "unit_test", "data_source", "exec_rest",
                 "quality", "source_file", "id", "correction"):
        doc[name] = str(fields.get(name) or "")
    doc["item_index"] = int(fields.get("item_index", 0))
    return doc


_KEPT = ("domain", "question", "article", "generation", "ground_truth_answer", "unit_test", "data_source", "exec_rest",
         "quality", "source_file", "item_index", "correction")


def load_criticbench(dimension: str, split: str = "dev", domains=None, data_dir=None,
                     reference_revisions: bool = False) -> list[dict]:
    """``reference_revisions``: the text domains' items from the subjective files, which hold the human reference
    revisions (MultiCritique's paper R_sub); otherwise every domain from the objective files."""
    wanted = resolve_domains(domains)
    from_sub = [d for d in wanted if reference_revisions and d in TEXT_DOMAINS]
    docs = []
    for domain in wanted:  # in domain order, each from its file
        fmt = "sub" if domain in from_sub else "obj"
        docs += cb_data.load_feedback(split, (domain,), data_dir, fmt=fmt, parts=("main",))
    return [_doc(dimension, **{k: d.get(k) for k in _KEPT}) for d in docs]


def _text(row: dict, name: str, where: str, required: bool = False) -> str:
    value = row.get(name)
    if value is None or value == "":
        if required:
            raise DataError(f"{where}: missing field '{name}'")
        return ""
    if name == "ground_truth_answer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    if not isinstance(value, str):
        raise DataError(f"{where}: field '{name}' should be a string, got {type(value).__name__}")
    return value


def load_items_file(path: str | Path, dimension: str) -> list[dict]:
    """One document per line of a JSONL file of ``question`` / ``generation`` (+ optional gold / tests) rows."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"items_file={path}: no such file")
    docs = []
    for n, where, row in iter_jsonl(path):
        fields = {k: _text(row, k, where, required=k in ("question", "generation"))
                  for k in ("question", "generation", "domain", "article", "ground_truth_answer", "unit_test",
                            "data_source", "correction")}
        # an item without an id is named by its place among the items, not its line: a blank line does not rename it
        fields["id"] = str(row.get("id", len(docs) + 1))
        domain = fields["domain"]
        if domain in OBJECTIVE_CORRECTION_DOMAINS:
            need = "ground_truth_answer" if DOMAINS[domain].needs_gold_answer else "unit_test"
            if not fields[need]:
                raise DataError(f"{where}: missing field '{need}' (domain {domain!r} is checked with it)")
        elif fields["unit_test"]:
            fields["check_domain"] = "code_not_exec"
        elif fields["ground_truth_answer"]:
            fields["check_domain"] = "math_cot"
        docs.append(_doc(dimension, **fields, source_file=str(path), item_index=n - 1))
    if not docs:
        raise DataError(f"items_file={path}: no items")
    return docs


def resolve_toolkit_dir(dimension: str, variant: str, toolkit_dir=None) -> str:
    """The CriticEval checkout whose released prompts MultiCritique's paper variant asks (``toolkit_dir``, else
    ``CRITICBENCH_TOOLKIT_DIR``; '' when neither is set, or for a protocol / variant that asks our text), checked
    now: a path that is not a checkout stops the run before any generation, in one line naming the setting."""
    if dimension != "revision_pool" or variant != variants.PAPER:
        return ""
    given = toolkit_dir not in (None, "")
    if not given and not read_setting(toolkit.TOOLKIT_DIR_ENV):
        return ""
    kit = toolkit.load_toolkit(str(toolkit_dir) if given else None)
    setting = f"toolkit_dir={toolkit_dir}" if given else f"{toolkit.TOOLKIT_DIR_ENV}={read_setting(toolkit.TOOLKIT_DIR_ENV)}"
    toolkit.correction_judges(kit.root, setting)  # the R_sub judge's file too
    return str(kit.root.resolve())


def load_task_docs(dimension: str, split: str = "dev", domains=None, data_dir=None, items_file=None,
                   variant=None, failure_rule=None, toolkit_dir=None, **_ignored) -> list[dict]:
    if dimension not in TASK_KINDS:
        raise DataError(f"unknown revision dimension {dimension!r}; known: {', '.join(TASK_KINDS)}")
    chosen, rule = variants.resolve(variant), resolve_failure_rule(failure_rule)  # bad values stop the run now
    released = resolve_toolkit_dir(dimension, chosen, toolkit_dir)
    by_reference = dimension == "revision_pool" and chosen == variants.PAPER  # MultiCritique's paper R_sub
    if not items_file:
        docs = load_criticbench(dimension, split, domains, data_dir, reference_revisions=by_reference)
    else:
        docs = load_items_file(items_file, dimension)
        if domains not in (None, "all"):
            wanted = set(resolve_domains(domains)) if all(d in DOMAINS for d in str(domains).split(",")) else \
                set(str(domains).split(","))
            docs = [d for d in docs if d["domain"] in wanted]
            if not docs:
                raise DataError(f"items_file={items_file}: no items of domain(s) {domains}")
    for doc in docs:
        doc["variant"], doc["failure_rule"] = chosen, rule
        doc["toolkit_dir"] = released  # the prompts read CriticEval's released text from it ('': ours)
        if by_reference and not doc["check"] and not doc["correction"]:
            where_ = f"{doc['source_file']}:{doc['item_index'] + 1}" if items_file else item_label(doc)
            raise DataError(f"{where_}: missing field 'correction' (the human reference revision MultiCritique's "
                            "paper R_sub is judged against; the test split withholds it: use variant 'short' there)")
    return docs


