"""The toolkit protocol's step from a raw dataset item to the toolkit's fields (lifting ``obj`` / ``sub``, reducing a
comparison's ``exec_rest_a`` / ``_b`` dict to its ``detail``, swapping both for the reverse order), through our
loader, against the prompts released with CriticEval.

For every released prediction file (DeepSeek-67B-Chat, dev and test, ../shared/data/criticeval/example-predictions,
read at run time), raw items are written *in the dataset's schema and layout* (SCHEMA.md): top-level ``question``,
``generation``, ``article``, ``unit_test``, ``exec_rest`` (a JSON object where the released text is a dict's repr),
``feedback``, ``ground_truth_feedback``, ``evaluated_feedback``; a pair under ``obj`` / ``sub`` in the forward order;
``metadata``. Their text comes from the released prompts (recovered with the toolkit's format strings); the labels,
which no prompt shows, are placeholders. The files are loaded by ``load_task_docs(..., protocol="toolkit")`` exactly
as a run loads the dataset, and every prompt must equal the released one byte for byte, both orders included. Nothing
released is stored in the repository: the items are built in a temporary folder.

A small hand-written item covers what the released prompts cannot: a comparison whose ``exec_rest_a`` / ``_b`` are
objects (the toolkit shows only their ``detail``, swapped with the responses in the reverse order)."""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict

import pytest
from conftest import SHARED
from test_toolkit_protocol import CHAT_WRAP, NAME, _fields

from critic_tasks.protocols.criticbench import data, toolkit
from critic_tasks.protocols.criticbench.data import load_task_docs
from critic_tasks.protocols.criticbench.prompts import DOMAINS

pytestmark = pytest.mark.slow

TOOLKIT = SHARED / "data" / "criticeval" / "toolkit"
# placeholders for what no prompt shows (labels, quality, references): the loader needs them on the dev split
LABELS = {"feedback_score": 4, "metadata": {"quality": "low"}}


@pytest.fixture(scope="module")
def kit():
    if not (TOOLKIT / "inference" / "utils" / "prompts.py").is_file():
        pytest.skip(f"the released toolkit is not at {TOOLKIT}")
    return toolkit.load_toolkit(str(TOOLKIT))


def _unwrap(prompt: str) -> str:
    assert prompt.startswith(CHAT_WRAP[0]) and prompt.endswith(CHAT_WRAP[1])
    return prompt[len(CHAT_WRAP[0]): -len(CHAT_WRAP[1])]


def _recover(kit, mode: str, flag: str, domain: str, prompt: str) -> dict:
    """The toolkit's fields behind one released prompt (the format string inverted)."""
    table = kit.prompts[mode][flag] if mode in ("feedback", "comp_feedback") else kit.prompts[mode]
    prefix, post = table[domain]["prefix_prompt"], table[domain]["post_prompt"]
    fields = _fields(kit.mappings[mode][domain], prompt[len(prefix): len(prompt) - len(post)])
    assert prompt.startswith(prefix) and prompt.endswith(post) and fields is not None
    return fields


def _as_dataset_value(key: str, text: str):
    """``exec_rest`` as the dataset may hold it: a JSON object, shown by str.format as its Python repr."""
    if key == "exec_rest":
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        if isinstance(value, dict) and repr(value) == text:
            return value
    return text


def _merge(item: dict, fields: dict, where: str) -> None:
    for key, text in fields.items():
        value = _as_dataset_value(key, text)
        assert item.get(key, value) == value, (where, key)  # the feedback and correction prompts agree
        item[key] = value


def _write_dataset(kit, predictions_dir, root):
    """Raw items in the dataset's layout, from every released prompt; returns the released prompts by document
    (dimension, fmt, split, domain, part/order, index)."""
    files: dict[str, dict[int, dict]] = defaultdict(dict)
    expected = {}
    for path in sorted(predictions_dir.glob("*.json")):
        m = NAME.match(path.name)
        split, domain, mode, flag = m["split"], m["domain"], m["mode"], m["flag"]
        part = "correction_part" if path.name.endswith("_correction_part.json") else "main"
        order = "reverse" if m["reverse"] else "forward"
        for key, row in json.loads(path.read_text(encoding="utf-8")).items():
            i, prompt = int(key), _unwrap(row["origin_prompt"])
            fields = _recover(kit, mode, flag, domain, prompt)
            if mode in ("feedback", "correction"):
                rel = (f"{flag}_{split}_data/correction_part/{domain}_feedback.json" if part == "correction_part"
                       else f"{flag}_{split}_data/{domain}_feedback_correction.json")
                item = files[rel].setdefault(i, {})
                _merge(item, fields, f"{path.name}[{i}]")
                dimension = "feedback" if mode == "feedback" else "correction"
                expected[(dimension, flag, split, domain, part, i)] = prompt
            elif mode == "comp_feedback":
                item = files[f"{flag}_{split}_data/{domain}_comp_feedback.json"].setdefault(i, {})
                pair = {k: v for k, v in fields.items() if k.endswith(("_a", "_b"))}
                if order == "reverse":  # the dataset holds the forward order
                    pair = {k[:-1] + ("b" if k.endswith("a") else "a"): v for k, v in pair.items()}
                _merge(item, {k: v for k, v in fields.items() if k not in pair and not k.endswith(("_a", "_b"))},
                       path.name)
                assert item.setdefault(flag, pair) == pair, (path.name, i)
                expected[("comparison", flag, split, domain, order, i)] = prompt
            else:
                rel = f"obj_{split}_data/meta_feedback_single/meta_feedback_singlewise_{domain}.json"
                _merge(files[rel].setdefault(i, {}), fields, path.name)
                expected[("meta", flag, split, domain, "main", i)] = prompt
    for rel, items in files.items():
        rows = [items[i] for i in range(len(items))]
        for row in rows:
            _add_placeholders(rel, row)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return expected, sorted(files)


def _add_placeholders(rel: str, row: dict) -> None:
    """The labels and references our loader requires on the dev split (no prompt shows them)."""
    dev = "_dev_" in rel
    if "comp_feedback" in rel:
        row["metadata"] = {"quality_a_sub": "low", "quality_b_sub": "high"}
        if dev and "obj" in row:
            row["obj"]["preference"] = "A"
        if dev and "sub" in row:
            row["sub"]["feedback"] = "(placeholder reference comparison)"
    elif "meta_feedback" in rel:
        row.update(raw_quality="low", **({"meta_feedback_score": 4} if dev else {}))
    else:
        row.setdefault("metadata", dict(LABELS["metadata"]))
        if dev:
            row["feedback_score"] = LABELS["feedback_score"]
            row.setdefault("feedback", "(placeholder reference critique)")
            row.setdefault("correction", "(placeholder reference revision)")
        row.setdefault("ground_truth_answer", "1")  # math correction items need one; no prompt shows it


def test_raw_items_in_the_dataset_schema_reproduce_every_released_prompt(kit, predictions_dir, tmp_path):
    expected, written = _write_dataset(kit, predictions_dir, tmp_path)
    assert any("/correction_part/" in f for f in written) and any("meta_feedback_single" in f for f in written)
    assert sum(isinstance(i.get("exec_rest"), dict) for f in written
               for i in json.loads((tmp_path / f).read_text())) > 0  # some exec_rest are JSON objects
    loaded = {}
    for dimension, flag, split, domain, _, _ in expected:
        key = (dimension, flag, split, domain)
        if key in loaded:
            continue
        if dimension == "feedback" and f"{flag}_{split}_data/{domain}_feedback_correction.json" not in written:
            # the release lacks this main file's prompts (dev harmlessness, objective): its correction_part alone,
            # through the same steps the task loader takes (read with the raw item kept, then the toolkit's prompt)
            docs = toolkit.attach_prompts(data.load_feedback(split, (domain,), str(tmp_path), fmt=flag,
                                                             parts=("correction_part",), keep_raw=True), kit)
        else:
            docs = load_task_docs(dimension, split, domain, str(tmp_path), fmt=flag, protocol="toolkit",
                                  toolkit_dir=str(TOOLKIT))
        loaded[key] = docs
        for doc in docs:
            slot = doc.get("part") if dimension == "feedback" else doc.get("order", "main") \
                if dimension == "comparison" else "main"
            want = expected.get((dimension, flag, split, domain, slot, doc["item_index"]))
            if want is None:  # a document whose released prompt was not released (none expected)
                pytest.fail(f"no released prompt for {key} {slot} {doc['item_index']}")
            assert doc["prompt"] == want, (key, slot, doc["item_index"])
    # every released prompt was matched by exactly one loaded document, and every document by a released prompt
    assert sum(len(d) for d in loaded.values()) == len(expected) > 5000


def test_a_comparison_with_execution_results_as_objects_shows_their_detail_swapped_in_reverse(kit, tmp_path):
    """Hand-written, in the dataset's schema: code_exec's exec_rest_a / _b as objects under obj; the toolkit lifts
    them, keeps the detail only, and swaps them with the responses for the reverse order."""
    item = {"question": "def inc(x):\n    \"\"\"Return x + 1.\"\"\"", "unit_test": "assert inc(1) == 2",
            "obj": {"generation_a": "def inc(x):\n    return x + 1", "generation_b": "def inc(x):\n    return x",
                    "exec_rest_a": {"status": "PASSED", "detail": "ok: 1 test"},
                    "exec_rest_b": {"status": "NOT PASSED", "detail": "AssertionError at line 1"},
                    "preference": "A"},
            "metadata": {"quality_a_sub": "high", "quality_b_sub": "low"}}
    folder = tmp_path / "obj_dev_data"
    folder.mkdir()
    (folder / "code_exec_comp_feedback.json").write_text(json.dumps([item]))
    forward, reverse = load_task_docs("comparison", "dev", "code_exec", str(tmp_path), protocol="toolkit",
                                      toolkit_dir=str(TOOLKIT))
    for doc, (first, second) in ((forward, ("ok: 1 test", "AssertionError at line 1")),
                                 (reverse, ("AssertionError at line 1", "ok: 1 test"))):
        prompt = doc["prompt"]
        assert "'status'" not in prompt and "PASSED" not in prompt  # the detail only
        a, b = prompt.index(first), prompt.index(second)
        assert a < b  # A's result before B's, as the responses
        responses = ("return x + 1", "return x\n") if doc["order"] == "forward" else ("return x\n", "return x + 1")
        assert prompt.index(responses[0]) < prompt.index(responses[1])
        assert re.search(r"Execution Result A[^\n]*\n" + re.escape(first), prompt)
    assert DOMAINS["code_exec"].has_exec_result
