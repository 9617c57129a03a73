"""Load RM-Bench's prompts into flat documents: each prompt's 3 x 3 chosen-vs-rejected comparisons, each in both
orders.

Source of truth is the Hub dataset ``THU-KEG/RM-Bench`` (``total_dataset.json``, split ``train``: every prompt with
its ``domain``: chat, math, code, safety-refuse, safety-response). The paper repository (THU-KEG/RM-Bench) keeps the
same rows per domain as ``data/<domain>_filtered.json`` without the ``domain`` field, and lacks the math file. Each row:

    id         the prompt's id
    prompt     the user prompt (text)
    chosen     three better responses, in the styles [concise, detailed plain, detailed markdown]
    rejected   three worse responses, in the same styles
    subset     the source subset (alpacaeval, bigcode/humanevalpack, xstest-should-refuse, ...)

``RMBENCH_DATA_DIR`` (or ``data_dir``) names a local folder holding ``total_dataset.json`` or the ``*_filtered.json``
files (the folder itself or a checkout whose ``data/`` holds them); ``sample`` the small fixtures of ours in the
repository's layout. Domains are the authors' four (``DOMAINS``); a row's domain is the first of them its file's
domain starts with (the authors' ``split_dataset_by_domain``), so safety-refuse and safety-response are safety.

A local copy without a domain's file: a task of that domain alone is refused in one line naming the file; the
all-domain task leaves the domain out and says so in one line (``log``), and its overall averages the domains it
has (the results' ``domains`` names them).

Documents: chosen response i against rejected response j (i, j = 0, 1, 2; the comparison ``pair_id``
``<domain file>:<id>:<i><j>``), ``forward`` showing the chosen one as A and ``reverse`` showing it as B; ``preference``
(the forward order's gold) is always A.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.run_state import per_run
from critic_tasks.core.settings import resolve_dir
from critic_tasks.protocols import remote
from critic_tasks.protocols.remote import field, read_json
from critic_tasks.protocols.rewardbench.authors_prompts import pairwise_v1

log = logging.getLogger("critic_tasks")

HUB_REPO = "THU-KEG/RM-Bench"
HUB_SPLIT = "train"
TOTAL_FILE = "total_dataset.json"
DATA_DIR_ENV = "RMBENCH_DATA_DIR"
SAMPLE_DIR = Path(__file__).parent / "sample_data"
DIMENSION = "rmbench"
DOMAINS = ("chat", "code", "math", "safety")
# the repository's files of each domain
DOMAIN_FILES = {"chat": ("chat",), "code": ("code",), "math": ("math",), "safety": ("safety-refuse", "safety-response")}
STYLES = ("concise", "detailed_plain", "detailed_markdown")
ORDERS = ("forward", "reverse")
_SAID = per_run(set())  # missing-domain lines already said in this run


def domain_of(name: str) -> str | None:
    """The authors' domain of a file's domain name (``split_dataset_by_domain``: its prefix)."""
    return next((d for d in DOMAINS if name.startswith(d)), None)


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local root to read from (``sample``: the bundled fixtures), or None for the Hub."""
    return resolve_dir(data_dir, DATA_DIR_ENV, default="hub", named={"sample": SAMPLE_DIR})


def check_published(timeout: float = 5.0) -> None:
    """Online, before a run: the Hub answers one call for the dataset within ``timeout`` seconds."""
    remote.check_hub_dataset(HUB_REPO, DATA_DIR_ENV, "README.md", timeout)


def _rows_of_total(rows, where: str) -> list[tuple[str, dict, str]]:
    if not isinstance(rows, list):
        raise DataError(f"{where}: expected a list of prompts, got {type(rows).__name__}")
    out = []
    for i, row in enumerate(rows):
        name = field(row, "domain", f"{where}[{i}]")
        if domain_of(name) is None:
            raise DataError(f"{where}[{i}]: field 'domain' {name!r} is none of {', '.join(DOMAINS)}")
        out.append((name, row, f"{where}[{i}]"))
    return out


def read_rows(domains: tuple[str, ...], data_dir: str | os.PathLike | None = None,
              required: bool = True) -> list[tuple[str, dict, str]]:
    """(the row's domain name, the row, where it was read) of every prompt of ``domains``. ``required``: a missing
    domain file is an error (else one line, and the domain is left out)."""
    root = resolve_data_dir(data_dir)
    if root is None:
        rows = _rows_of_total(remote.hub_rows(HUB_REPO, HUB_SPLIT, DATA_DIR_ENV), f"hf://datasets/{HUB_REPO}")
    else:
        total = next((p for p in (root / TOTAL_FILE, root / "data" / TOTAL_FILE) if p.is_file()), None)
        if total is not None:
            rows = _rows_of_total(read_json(total), str(total))
        else:
            rows = _rows_of_files(root, domains, required)
    return [(name, row, where) for name, row, where in rows if domain_of(name) in domains]


def _rows_of_files(root: Path, domains: tuple[str, ...], required: bool) -> list[tuple[str, dict, str]]:
    """The rows of the repository's ``<name>_filtered.json`` files under ``root`` (itself or ``data/``). The
    repository lacks only the math file: without ``required`` (every domain asked) a missing math file is one line
    and math is left out; any other missing file is a broken copy (one error naming it), and a folder holding none
    of the files is no copy of RM-Bench (one error naming what it should hold)."""
    rows, missing = [], []
    for domain in domains:
        for name in DOMAIN_FILES[domain]:
            filename = f"{name}_filtered.json"
            path = next((p for p in (root / filename, root / "data" / filename) if p.is_file()), None)
            if path is None:
                missing.append((domain, filename))
                continue
            content = read_json(path)
            if not isinstance(content, list):
                raise DataError(f"{path}: expected a list of prompts, got {type(content).__name__}")
            rows += [(name, row, f"{path}[{i}]") for i, row in enumerate(content)]
    if not missing:
        return rows
    if not rows and len(missing) > 1:
        raise DataError(f"{root}: none of RM-Bench's files here (expected {TOTAL_FILE}, the Hub's, or the "
                        f"repository's {', '.join(f for _, f in missing)}; in the folder itself or under data/)")
    for domain, filename in missing:
        message = f"{root / filename}: file not found (nor under {root / 'data'})"
        if domain != "math":
            raise DataError(f"{message}; a copy of the repository's data/ holds every domain but math")
        message += (f"; THU-KEG/RM-Bench's repository lacks the math file, the Hub's {HUB_REPO} ({TOTAL_FILE}) has "
                    "every domain")
        if required:
            raise DataError(message)
        if message not in _SAID:
            _SAID.add(message)
            log.warning("critic_tasks: rmbench: %s; %s is left out, and the overall is the mean of the other domains",
                        message, domain)
    return rows


def _responses(row: dict, key: str, where: str) -> list[str]:
    value = field(row, key, where, (list,))
    if len(value) != len(STYLES) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{where}: field '{key}' should hold {len(STYLES)} texts (the styles {', '.join(STYLES)}), "
                        f"got {len(value)} item(s)")
    return value


def prompt_docs(name: str, row: dict, where: str) -> list[dict]:
    """The 18 documents of one prompt: 3 x 3 comparisons, each in both orders."""
    prompt_id = f"{name}:{field(row, 'id', where, (str, int))}"
    question = field(row, "prompt", where)
    chosen, rejected = _responses(row, "chosen", where), _responses(row, "rejected", where)
    subset = row.get("subset") if isinstance(row.get("subset"), str) else ""
    docs = []
    for i, better in enumerate(chosen):
        for j, worse in enumerate(rejected):
            for order in ORDERS:
                a, b = (better, worse) if order == "forward" else (worse, better)
                docs.append({"dimension": DIMENSION, "domain": domain_of(name), "source": name, "subset": subset,
                             "prompt_id": prompt_id, "pair_id": f"{prompt_id}:{i}{j}", "chosen_style": i,
                             "rejected_style": j, "order": order, "question": question, "response_a": a,
                             "response_b": b, "preference": "A", "source_file": where.rsplit("[", 1)[0]})
    return docs


def load_task_docs(dimension: str = DIMENSION, data_dir: str | os.PathLike | None = None, domain: str = "all",
                   **_ignored) -> list[dict]:
    """The documents of one RM-Bench task: every domain (``domain``: all) or one (chat | code | math | safety)."""
    if dimension != DIMENSION:
        raise ConfigError(f"rmbench: unknown dimension {dimension!r} (expected {DIMENSION!r})")
    if domain != "all" and domain not in DOMAINS:
        raise ConfigError(f"rmbench domain {domain!r}: expected all or one of {', '.join(DOMAINS)}")
    domains = DOMAINS if domain == "all" else (domain,)
    rows = read_rows(domains, data_dir, required=domain != "all")
    if not rows:
        raise DataError(f"rmbench: no prompts of domain {domain!r} in {resolve_data_dir(data_dir) or HUB_REPO}")
    # the judge's system message (RewardBench's, read now: a run without the authors' file stops before generating)
    system = pairwise_v1()[0]
    docs = [{**doc, "system_message": system} for name, row, where in rows for doc in prompt_docs(name, row, where)]
    seen: dict[str, str] = {}
    for doc in docs[::2 * len(STYLES) ** 2]:
        if doc["prompt_id"] in seen:
            raise DataError(f"{doc['source_file']}: prompt id {doc['prompt_id']!r} repeats")
        seen[doc["prompt_id"]] = doc["source_file"]
    return docs
