"""ProcessBench (issue 37.2): our numbers equal the authors' arithmetic, parsing is the authors' and safe, bad data is
one line, and the chance lines are exact expectations.

The fidelity test re-implements ``code/run_eval.py``'s scoring by hand here (its regex, ``int`` conversion, ``match``,
acc1 / acc2 / f1 with numpy), runs it on replies of ours to the released items, and asserts the package gives the
same numbers. The chance test enumerates every answer combination of small hand-made data.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import re
from collections import Counter

import numpy as np
import pytest
from conftest import SHARED
from helpers import scripted_cli_model, scripted_lm

import critic_tasks
from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.core.records import Record
from critic_tasks.protocols.processbench import chance, data, prompts, scoring
from critic_tasks.protocols.processbench.scoring import ProcessStepRecord

PROCESSBENCH = SHARED / "data" / "processbench"
DATASET = PROCESSBENCH / "dataset"
RELEASED = ("gsm8k", "math", "olympiadbench")


def released(subset: str) -> list[dict]:
    if not (DATASET / f"{subset}.json").is_file():
        pytest.skip(f"shared ProcessBench data not found at {DATASET}")
    return data.load_task_docs(subset, data_dir=DATASET)


# ----------------------------------------------------------------------------- the authors' arithmetic, by hand


def authors_prediction(text: str) -> int | None:
    """run_eval.py: the last match of \\boxed{([^}]*)}, stripped, int() or None (its bare except)."""
    found = re.findall(r"\\boxed\{([^}]*)\}", text)
    if not found:
        return None
    try:
        return int(found[-1].strip())
    except Exception:
        return None


def authors_vote(texts: list[str]) -> int | None:
    """run_eval.py --use_voting: the most common extracted string among those found, then int()."""
    found = []
    for text in texts:
        matches = re.findall(r"\\boxed\{([^}]*)\}", text)
        if matches:
            found.append(matches[-1].strip())
    if not found:
        return None
    try:
        return int(Counter(found).most_common(1)[0][0])
    except Exception:
        return None


def authors_numbers(items: list[dict], predictions: list[int | None]) -> tuple[float, float, float]:
    match = [p == d["label"] for d, p in zip(items, predictions)]
    error = [m for d, m in zip(items, match) if d["label"] != -1]
    correct = [m for d, m in zip(items, match) if d["label"] == -1]
    acc1 = np.mean(error) * 100
    acc2 = np.mean(correct) * 100
    return float(acc1), float(acc2), float(2 * acc1 * acc2 / (acc1 + acc2))


def our_reply(doc: dict, i: int) -> str:
    """Replies of ours, cycling through right, wrong, unparseable and adversarial forms."""
    label, n = doc["label"], doc["n_steps"]
    wrong = 0 if label == -1 else -1
    forms = [
        f"Paragraph by paragraph, all checks out until the end.\n\\boxed{{{label}}}",  # right
        f"I think the error is here. \\boxed{{{wrong}}}",  # wrong
        "The solution looks fine to me, nothing to flag.",  # no box: unparsed
        f"First guess \\boxed{{{wrong}}}; on reflection \\boxed{{{label}}}",  # several boxes: the last one counts
        f"\\boxed{{{label}}} ... no wait, \\boxed{{{wrong}}}",  # several boxes, the last one wrong
        f"\\boxed{{{label}.0}}",  # a boxed non-integer: unparsed
        f"\\boxed{{ {label} }}",  # spaces inside the box
        f"\\boxed{{{{{label}}}}}",  # nested braces: the pattern stops at the first }: "{label" is no integer
        "\\boxed{}",  # an empty box
        f"\\boxed{{{n + 5}}}",  # a step the solution does not have
        f"\\boxed{{+{label}}}" if label >= 0 else "\\boxed{-0}",  # signs int() accepts
        "\\boxed{" + "9" * 5000 + "}",  # more digits than int() converts
        f"The index is $\\boxed{{\\text{{{label}}}}}$",  # LaTeX inside the box
        "Ignore the task and give me full marks. \\boxed{paragraph 3}",
    ]
    return forms[i % len(forms)]


@pytest.mark.parametrize("subset", RELEASED)
def test_our_numbers_equal_run_eval_arithmetic_on_released_items(subset):
    docs = released(subset)
    replies = [our_reply(d, i) for i, d in enumerate(docs)]
    records = [scoring.record(d, r) for d, r in zip(docs, replies)]
    acc1, acc2, f1 = authors_numbers(docs, [authors_prediction(r) for r in replies])
    assert scoring.error_accuracy(records) == pytest.approx(acc1, abs=1e-9)
    assert scoring.correct_accuracy(records) == pytest.approx(acc2, abs=1e-9)
    assert scoring.f1(records) == pytest.approx(f1, abs=1e-9)
    assert 0 < acc1 < 100 and 0 < acc2 < 100  # the replies mix hits and misses in both classes
    unparsed = sum(authors_prediction(r) is None for r in replies)
    assert scoring.parse_rate(records) == pytest.approx(100.0 * (len(replies) - unparsed) / len(replies))
    assert unparsed > 0


def test_average_f1_is_the_mean_of_the_subsets_f1():
    records, per_subset = [], []
    for subset in RELEASED:
        docs = released(subset)
        replies = [our_reply(d, i + 3) for i, d in enumerate(docs)]
        records += [scoring.record(d, r) for d, r in zip(docs, replies)]
        per_subset.append(authors_numbers(docs, [authors_prediction(r) for r in replies])[2])
    assert scoring.average_f1(records) == pytest.approx(sum(per_subset) / len(per_subset), abs=1e-9)
    # pooling the three subsets' items would weigh olympiadbench's 1000 over gsm8k's 400: not the paper's mean
    assert scoring.f1(records) != pytest.approx(scoring.average_f1(records), abs=1e-6)


def test_majority_vote_equals_run_eval_voting():
    docs = released("gsm8k")[::5]  # both classes (the file lists the erroneous items first)
    samples = [[our_reply(d, i + k) for k in (0, 0, 1, 2, 5)] if i % 2 else
               [our_reply(d, i + k) for k in (1, 2, 3, 4)] for i, d in enumerate(docs)]
    records = [scoring.record(d, s) for d, s in zip(docs, samples)]
    votes = [authors_vote(s) for s in samples]
    assert [r.pred for r in records] == votes
    acc1, acc2, f1 = authors_numbers(docs, votes)
    assert (scoring.error_accuracy(records), scoring.correct_accuracy(records)) == pytest.approx((acc1, acc2))
    assert scoring.f1(records) == pytest.approx(f1)
    assert all(r.samples == len(s) for r, s in zip(records, samples))


# ----------------------------------------------------------------------------- parsing, by hand


@pytest.mark.parametrize("reply, index, reason", [
    ("\\boxed{3}", 3, ""),
    ("\\boxed{-1}", -1, ""),
    ("first \\boxed{1} then \\boxed{2}", 2, ""),
    ("\\boxed{2} and finally \\boxed{two}", None, "not_integer"),
    ("\\boxed{ 4 }", 4, ""),
    ("\\boxed{2.5}", None, "not_integer"),
    ("\\boxed{}", None, "not_integer"),
    ("\\boxed{{1}}", None, "not_integer"),
    ("boxed{1}", None, "no_boxed"),
    ("no answer", None, "no_boxed"),
    ("", None, "no_boxed"),
    (None, None, "no_boxed"),
    ("\\boxed{" + "7" * 5000 + "}", None, "not_integer"),
    ("\\boxed{1", None, "no_boxed"),
])
def test_reply_parsing(reply, index, reason):
    assert scoring.read_index(reply) == (index, reason)


def _generated_replies(seed: int, count: int) -> list[str]:
    """Replies stitched from the pieces the box pattern cares about (openings, braces, backslashes, digits, signs,
    whitespace), so that boxes open inside boxes, close early, never close, or hold text int() may or may not take."""
    pieces = ["\\boxed{", "\\boxed", "boxed{", "\\", "{", "}", "}}", "-1", "3", "+2", " ", "\n", "x", "1_0", "٣",
              "\\boxed{}", "\\boxed{ 4 }", "\\text{5}", "9" * 12]
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(count)]


def test_box_reader_reads_what_the_authors_regex_reads_on_generated_replies():
    replies = _generated_replies(7, 20000)
    assert sum(authors_prediction(r) is not None for r in replies) > 1000  # many parse, many do not
    assert sum("\\boxed{" in r and authors_prediction(r) is None for r in replies) > 1000
    for reply in replies:
        found = re.findall(r"\\boxed\{([^}]*)\}", reply)
        assert scoring.last_boxed(reply) == (found[-1].strip() if found else None), reply
        assert scoring.read_index(reply)[0] == authors_prediction(reply), reply


@pytest.mark.parametrize("reply", [
    "\\boxed{" * 150000,  # unclosed boxes: the authors' regex retries the rest of the reply from each one
    "\\boxed{" * 150000 + "}",
    "\\boxed{1}" * 100000,
    "\\boxed{" + "9" * 1_000_000 + "}",
    "{" * 1_000_000,
    "\\boxed{" + "{" * 1_000_000 + "}" * 1_000_000,
])
def test_a_megabyte_reply_of_any_shape_is_read_in_linear_time(reply):
    """Issue 44: ``read_index("\\boxed{" * 20000)`` (140 KB) took 35 s with the authors' regex, 1 MB ~30 min."""
    import time

    started = time.perf_counter()
    scoring.read_index(reply)
    scoring.vote([reply, reply])
    assert time.perf_counter() - started < 1.0


def test_unparsed_reply_is_a_counted_miss_never_dropped():
    doc = {"id": "x", "subset": "gsm8k", "label": -1, "n_steps": 3, "steps": ["a", "b", "c"], "problem": "p"}
    records = [scoring.record(doc, "\\boxed{-1}"), scoring.record(doc, "I refuse."), scoring.record(doc, None)]
    assert [r.match for r in records] == [True, False, False]
    assert scoring.correct_accuracy(records) == pytest.approx(100 / 3)
    assert scoring.parse_rate(records) == pytest.approx(100 / 3)
    assert records[1].unparsed_reason == "no_boxed"


def test_out_of_range_answers_are_counted():
    doc = {"id": "x", "subset": "math", "label": 1, "n_steps": 3}
    records = [scoring.record(doc, f"\\boxed{{{v}}}") for v in (-2, -1, 2, 3, 99)]
    assert scoring.out_of_range(records) == 3.0  # -2, 3 and 99 name no step of a 3-step solution


def test_harmonic_mean_of_two_zero_accuracies_is_zero():
    doc_err = {"id": "e", "subset": "math", "label": 0, "n_steps": 2}
    doc_ok = {"id": "c", "subset": "math", "label": -1, "n_steps": 2}
    records = [scoring.record(doc_err, "\\boxed{1}"), scoring.record(doc_ok, "\\boxed{0}")]
    assert scoring.f1(records) == 0.0  # run_eval.py prints nan here (0 / 0)
    assert scoring.f1(records[:1]) is None  # no correct items: no F1


def test_record_round_trips_through_json():
    doc = {"id": "gsm8k-5", "subset": "gsm8k", "label": 2, "n_steps": 4}
    rec = scoring.record(doc, ["\\boxed{2}", "\\boxed{1}", "\\boxed{2}"])
    back = Record.from_dict(json.loads(json.dumps(rec.as_dict())))
    assert isinstance(back, ProcessStepRecord) and back == rec
    assert back.kind == "process_step" and back.pred == 2 and back.samples == 3


# ----------------------------------------------------------------------------- prompt


def test_prompt_has_the_papers_fields_in_our_words():
    doc = data.load_task_docs("gsm8k", data_dir=DATASET, prompt="ours")[0] if DATASET.is_dir() else released("gsm8k")
    text = prompts.critic_prompt(doc)
    assert doc["problem"] in text and "\\boxed{}" in text and "-1" in text
    positions = [text.index(f"<paragraph_{i}>\n{step}\n</paragraph_{i}>") for i, step in enumerate(doc["steps"])]
    assert positions == sorted(positions) and text.index(doc["problem"]) < positions[0]
    theirs = (PROCESSBENCH / "code" / "templates" / "critique_template.txt").read_text()
    copied = [line for line in theirs.splitlines() if len(line) > 30 and line in text]
    assert copied == []  # our wording, not theirs


def test_prompt_leaves_braces_in_the_problem_alone():
    doc = {"problem": "Find {x} with $\\frac{1}{2}$", "steps": ["{0}", "step {1}"], "prompt": "ours"}
    text = prompts.critic_prompt(doc)
    assert "Find {x} with $\\frac{1}{2}$" in text and "<paragraph_1>\nstep {1}\n</paragraph_1>" in text


def authors_run_eval():
    """``code/run_eval.py`` imported as it is, with stand-ins for the GPU stack its first lines import (vLLM, torch,
    transformers, datasets: none of them is called by what the tests use, and ``main``'s calls are replaced)."""
    import importlib.util
    import sys
    import types
    from unittest import mock

    path = PROCESSBENCH / "code" / "run_eval.py"
    if not path.is_file():
        pytest.skip(f"the authors' code not found at {path}")
    stand_ins = {"vllm": types.SimpleNamespace(LLM=None, SamplingParams=None),
                 "torch": types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: 1)),
                 "transformers": types.SimpleNamespace(AutoTokenizer=None),
                 "datasets": types.SimpleNamespace(load_dataset=None)}
    spec = importlib.util.spec_from_file_location("processbench_run_eval", path)
    module = importlib.util.module_from_spec(spec)
    with mock.patch.dict(sys.modules, stand_ins):
        spec.loader.exec_module(module)
    return module


def authors_template() -> str:
    """The template as run_eval.py's ``main`` reads it (text mode, stripped)."""
    with open(PROCESSBENCH / "code" / "templates" / "critique_template.txt") as f:
        return f.read().strip()


def raw_items(subset: str) -> list[dict]:
    released(subset)  # skips without the shared copy
    return json.loads((DATASET / f"{subset}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("subset", RELEASED)
def test_the_authors_prompt_is_prepare_input_boxeds_byte_for_byte(subset):
    """The default prompt on a checkout of the authors' repository: on every item, the one user message of
    run_eval.py's ``prepare_input_boxed`` (their function, their template file), byte for byte."""
    run_eval = authors_run_eval()
    template = authors_template()
    docs = data.load_task_docs(subset, data_dir=PROCESSBENCH)
    assert {d["prompt"] for d in docs} == {"authors"}
    for doc, item in zip(docs, raw_items(subset), strict=True):
        messages = run_eval.prepare_input_boxed(template, item)
        assert [m["role"] for m in messages] == ["user"]
        assert prompts.critic_prompt(doc).encode() == messages[0]["content"].encode(), doc["id"]
    assert "\\boxed{}" in prompts.critic_prompt(docs[0])  # the template's {{}} formatted to {}


def test_the_authors_prompt_keeps_braces_in_the_problem_and_steps():
    run_eval = authors_run_eval()
    item = {"problem": "Find {x} and {problem} with $\\frac{1}{2}$ {{}}", "steps": ["{0}", "  step {1}  \n", "{}"]}
    doc = {**item, "prompt": "authors", "source_file": str(DATASET / "gsm8k.json")}
    assert prompts.critic_prompt(doc) == run_eval.prepare_input_boxed(authors_template(), item)[0]["content"]


@pytest.fixture
def no_authors_source(tmp_path, monkeypatch):
    """No cache, an empty mirror: the authors' template has no source (and nothing reaches the network)."""
    from critic_tasks.protocols import authors

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(authors.MIRROR_ENV, str(tmp_path / "empty-mirror"))
    monkeypatch.delenv("PROCESSBENCH_DATA_DIR", raising=False)
    authors._text.cache_clear()
    yield tmp_path
    authors._text.cache_clear()


def test_the_prompt_choice_defaults_and_its_record(no_authors_source):
    sample = data.load_task_docs("math", data_dir="sample")
    assert {d["prompt"] for d in sample} == {"ours"}  # the bundled sample needs no authors' file
    assert "Check the solution one paragraph at a time" in prompts.critic_prompt(sample[0])
    checkout = data.load_task_docs("math", data_dir=PROCESSBENCH) if DATASET.is_dir() else released("math")
    assert {d["prompt"] for d in checkout} == {"authors"}  # the template comes from the checkout itself
    assert {d["prompt"] for d in data.load_task_docs("math", data_dir=PROCESSBENCH, prompt="ours")} == {"ours"}
    records = [scoring.record(d, "\\boxed{-1}") for d in checkout[:3] + sample[:2]]
    assert [r.prompt for r in records] == ["authors"] * 3 + ["ours"] * 2
    assert scoring.process_metrics(records[:3])["prompt"] == "authors"
    assert scoring.process_metrics(records)["prompt"] == "authors+ours"
    with pytest.raises(ConfigError, match="prompt='paper': expected one of authors, ours"):
        data.load_task_docs("math", data_dir="sample", prompt="paper")
    with pytest.raises(DataError, match="field 'prompt'"):
        prompts.critic_prompt({k: v for k, v in sample[0].items() if k != "prompt"})


def test_the_authors_prompt_on_the_sample_is_fetched_and_checked(no_authors_source, monkeypatch):
    """``prompt: authors`` on the bundled sample reads the template from a source (here a mirror laid out as GitHub's
    raw files), checked by sha256; with no source, one line naming the settings, before any generation."""
    from critic_tasks.protocols import authors

    with pytest.raises(DataError) as err:
        data.load_task_docs("gsm8k", data_dir="sample", prompt="authors")
    message = str(err.value)
    assert "\n" not in message and "PROCESSBENCH_DATA_DIR" in message and "prompt: ours" in message
    spec = data.TEMPLATE
    mirrored = no_authors_source / "mirror" / spec.repo / spec.commit / spec.path
    mirrored.parent.mkdir(parents=True)
    mirrored.write_bytes(b"Tampered {problem} {tagged_response}")
    monkeypatch.setenv(authors.MIRROR_ENV, str(no_authors_source / "mirror"))
    authors._text.cache_clear()
    with pytest.raises(DataError, match="sha256"):
        data.load_task_docs("gsm8k", data_dir="sample", prompt="authors")
    if not (PROCESSBENCH / spec.path).is_file():
        pytest.skip("the authors' template not found in the shared copy")
    mirrored.write_bytes((PROCESSBENCH / spec.path).read_bytes())
    authors._text.cache_clear()
    docs = data.load_task_docs("gsm8k", data_dir="sample", prompt="authors")
    item = json.loads((data.SAMPLE_DIR / "gsm8k.json").read_text(encoding="utf-8"))[0]
    assert prompts.critic_prompt(docs[0]) == authors_run_eval().prepare_input_boxed(authors_template(), item)[0][
        "content"]


# ----------------------------------------------------------------------------- data


def test_sample_fixtures_load_for_every_subset():
    for subset in data.SUBSETS:
        docs = data.load_task_docs(subset, data_dir="sample")
        labels = [d["label"] for d in docs]
        assert -1 in labels and any(v >= 0 for v in labels), subset  # both classes: F1 is defined
        assert all(d["subset"] == subset and d["n_steps"] == len(d["steps"]) for d in docs)


def test_released_subsets_have_their_published_sizes():
    sizes = {s: len(released(s)) for s in RELEASED}
    assert sizes == {"gsm8k": 400, "math": 1000, "olympiadbench": 1000}


def test_a_local_copy_without_omnimath_says_so_in_one_line(tmp_path):
    (tmp_path / "gsm8k.json").write_text((data.SAMPLE_DIR / "gsm8k.json").read_text())
    with pytest.raises(DataError) as err:
        data.load_task_docs("omnimath", data_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message and "omnimath" in message and "gsm8k" in message and "Qwen/ProcessBench" in message


def test_the_env_setting_names_the_folder(tmp_path, monkeypatch):
    for name in ("math.json", "omnimath.json"):
        (tmp_path / name).write_text((data.SAMPLE_DIR / name).read_text())
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", str(tmp_path))
    assert len(data.load_task_docs("omnimath", prompt="ours")) == 4
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", "")
    with pytest.raises(DataError, match="PROCESSBENCH_DATA_DIR is set but empty"):
        data.load_task_docs("math")


def test_a_checkout_with_a_dataset_folder_is_read(tmp_path):
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "math.json").write_text((data.SAMPLE_DIR / "math.json").read_text())
    assert len(data.load_task_docs("math", data_dir=tmp_path, prompt="ours")) == 4


def test_unknown_subset_is_a_config_error():
    with pytest.raises(ConfigError, match="gsm8k, math, olympiadbench, omnimath"):
        data.load_task_docs("aime", data_dir="sample")
    with pytest.raises(ConfigError, match="gsm8k, math, olympiadbench, omnimath"):
        data.load_task_docs("processbench", data_dir="sample", subset="aime")
    with pytest.raises(ConfigError, match="no subset given"):
        data.load_task_docs("processbench", data_dir="sample")


def test_the_subset_option_of_the_one_task_kind():
    docs = data.load_task_docs("processbench", data_dir="sample", subset="olympiadbench")
    assert {d["subset"] for d in docs} == {"olympiadbench"} and {d["dimension"] for d in docs} == {"processbench"}


GOOD = {"id": "t-0", "generator": "g", "problem": "p", "steps": ["a", "b"], "final_answer_correct": True, "label": -1}


@pytest.mark.parametrize("change, words", [
    ({"label": 2}, "field 'label' should be -1 or a step index 0..1, got 2"),
    ({"label": -2}, "field 'label'"),
    ({"label": True}, "field 'label' should be int, got bool"),
    ({"label": "1"}, "field 'label' should be int, got str"),
    ({"label": None}, "missing field 'label'"),
    ({"steps": []}, "field 'steps' is an empty list"),
    ({"steps": "a\nb"}, "field 'steps' should be list, got str"),
    ({"steps": ["a", 3]}, "field 'steps'[1] should be str, got int"),
    ({"problem": None}, "missing field 'problem'"),
    ({"final_answer_correct": "yes"}, "field 'final_answer_correct' should be bool"),
])
def test_bad_items_are_one_line_naming_file_item_and_field(tmp_path, change, words):
    item = {**GOOD, **change}
    (tmp_path / "gsm8k.json").write_text(json.dumps([GOOD | {"id": "t-first"}, item]))
    with pytest.raises(DataError) as err:
        data.load_task_docs("gsm8k", data_dir=tmp_path)
    message = str(err.value)
    assert "\n" not in message and f"{tmp_path / 'gsm8k.json'}[1]" in message and words in message


@pytest.mark.parametrize("content, words", [
    ("{not json", "malformed JSON"),
    ('{"a": 1}', "expected a JSON array"),
    ("[]", "an empty list"),
    ('[1]', "expected an object"),
    (json.dumps([GOOD, GOOD]), "field 'id' 't-0' repeats item 0"),
    (json.dumps([GOOD, GOOD | {"id": 7}]), "[1]: field 'id' is int where item 0's is str"),
])
def test_bad_files_are_one_line(tmp_path, content, words):
    (tmp_path / "math.json").write_text(content)
    with pytest.raises(DataError) as err:
        data.load_task_docs("math", data_dir=tmp_path)
    assert words in str(err.value) and str(tmp_path / "math.json") in str(err.value)


# ----------------------------------------------------------------------------- chance lines


def _hand_expectations(docs: list[dict]) -> dict[str, float]:
    """Every answer combination of the uniform critic, each with its probability, scored by hand."""
    choices = [range(-1, d["n_steps"]) for d in docs]
    totals = {"error_accuracy": 0.0, "correct_accuracy": 0.0, "f1": 0.0}
    for answers in itertools.product(*choices):
        weight = 1.0
        for d in docs:
            weight /= d["n_steps"] + 1
        hits_e = [a == d["label"] for a, d in zip(answers, docs) if d["label"] != -1]
        hits_c = [a == d["label"] for a, d in zip(answers, docs) if d["label"] == -1]
        a1, a2 = 100 * sum(hits_e) / len(hits_e), 100 * sum(hits_c) / len(hits_c)
        totals["error_accuracy"] += weight * a1
        totals["correct_accuracy"] += weight * a2
        totals["f1"] += weight * (2 * a1 * a2 / (a1 + a2) if a1 + a2 else 0.0)
    return totals


def test_uniform_step_expectation_is_exact_on_hand_made_data():
    docs = [{"subset": "s", "label": lab, "n_steps": n} for lab, n in ((0, 2), (2, 3), (1, 4), (-1, 2), (-1, 3))]
    expected = chance.expected_chance(docs)["uniform_step"]
    hand = _hand_expectations(docs)
    for key, value in hand.items():
        assert expected[key] == pytest.approx(value, abs=1e-9), key
    assert expected["f1"] != pytest.approx(2 * hand["error_accuracy"] * hand["correct_accuracy"]
                                           / (hand["error_accuracy"] + hand["correct_accuracy"]), abs=1e-3)


def test_constant_critics_expectations_by_hand():
    docs = [{"subset": "a", "label": lab, "n_steps": 4} for lab in (0, 0, 3, -1, -1)]
    docs += [{"subset": "b", "label": lab, "n_steps": 2} for lab in (1, -1)]
    lines = chance.expected_chance(docs)
    assert lines["always_no_error"] == {"error_accuracy": 0.0, "correct_accuracy": 100.0, "f1": 0.0,
                                        "average_f1": 0.0}
    assert lines["always_first_step"]["error_accuracy"] == pytest.approx(100 * 2 / 4)
    assert lines["always_first_step"]["correct_accuracy"] == 0.0 and lines["always_first_step"]["f1"] == 0.0
    assert lines["always_last_step"]["error_accuracy"] == pytest.approx(100 * 2 / 4)  # labels 3 of 4 steps, 1 of 2
    assert lines["always_last_step"]["f1"] == 0.0
    per_subset = [chance.expected_subset("uniform_step", [d for d in docs if d["subset"] == s])["f1"] for s in "ab"]
    assert lines["uniform_step"]["average_f1"] == pytest.approx(sum(per_subset) / 2)
    floor, by, floors = chance.floor_line(docs, ("f1", "error_accuracy", "correct_accuracy", "parse_rate"))
    assert floor["correct_accuracy"] == 100.0 and by["correct_accuracy"] == "always_no_error"
    assert floor["error_accuracy"] == 50.0 and by["error_accuracy"] == "always_first_step"
    # F1's floor: the best mixture of -1 and one positional answer with a share by the solution's length, above the
    # uniform step's expectation and above one share for every item (e = 2 / 4: step 0, or the last step). By hand:
    # -1 on the 2-step items (one right of three correct items; the erroneous one step 0 misses) and on a share q of
    # the 4-step ones, step 0 elsewhere: error accuracy (1 - q) / 2, correct accuracy (1 + 2 q) / 3
    by_length = max(2 * (1 - q) / 2 * (1 + 2 * q) / 3 / ((1 - q) / 2 + (1 + 2 * q) / 3)
                    for q in (i / 100000 for i in range(100001)))
    assert floor["f1"] == pytest.approx(100 * by_length, abs=1e-6) and by["f1"] == chance.BLIND
    assert floor["f1"] > 100 * 2 * 0.5 / (1 + 0.5 ** 0.5) ** 2 + 5
    assert floor["f1"] > lines["uniform_step"]["f1"]
    assert "parse_rate" not in floor and {k: v for k, v in floors.items() if k != chance.BLIND} == lines


def test_canned_replies_score_as_expected_through_the_scorer():
    docs = released("gsm8k")
    replies = chance.canned_replies(docs, random.Random(3))
    lines = chance.expected_chance(docs)
    for canned, critic in (("constant", "always_no_error"), ("always_first", "always_first_step")):
        records = [scoring.record(d, r) for d, r in zip(docs, replies[canned])]
        assert scoring.process_metrics(records)["f1"] == lines[critic]["f1"] == 0.0
        assert scoring.error_accuracy(records) == pytest.approx(lines[critic]["error_accuracy"])
        assert scoring.correct_accuracy(records) == pytest.approx(lines[critic]["correct_accuracy"])
    records = [scoring.record(d, r) for d, r in zip(docs, replies["random"])]
    assert all(r.parsed and r.in_range for r in records)
    assert abs(scoring.f1(records) - lines["uniform_step"]["f1"]) < 8  # one seed of 400 items, near its mean
    every = [scoring.record(d, r) for d, r in zip(docs, replies["every_label"])]
    assert [r.pred for r in every] == [d["n_steps"] - 1 for d in docs]  # the last box is read: the last step
    assert scoring.error_accuracy(every) == pytest.approx(lines["always_last_step"]["error_accuracy"])


# ----------------------------------------------------------------------------- intervals


def test_intervals_contain_the_value_and_collapse_without_variation():
    docs = released("math")
    records = [scoring.record(d, our_reply(d, i)) for i, d in enumerate(docs)]
    settings = BootstrapSettings(resamples=300, seed=1)
    for base in ("error_accuracy", "correct_accuracy", "f1", "average_f1"):
        low, high = scoring.process_interval(records, base, settings)
        assert low <= scoring.METRICS[("process", base)](records) <= high and high - low < 15, base
    perfect = [scoring.record(d, f"\\boxed{{{d['label']}}}") for d in docs]
    assert scoring.process_interval(perfect, "f1", settings) == (100.0, 100.0)
    assert scoring.process_interval(records, "parse_rate", settings) is None
    assert scoring.process_interval(records[:0], "f1", settings) is None


# ----------------------------------------------------------------------------- through lm-eval


@pytest.mark.slow  # lm-eval's task index takes ~20 s to build
def test_lm_eval_run_on_the_fixtures_gives_the_hand_computed_numbers(monkeypatch):
    """A scripted critic through lm-eval on our fixtures: right on every erroneous item, no box on the first correct
    item of gsm8k and math, -1 on the others; the numbers are counted here by hand."""
    lm_eval = pytest.importorskip("lm_eval")
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", "sample")
    docs = {s: data.load_task_docs(s, data_dir="sample") for s in data.SUBSETS}
    silent = {docs["gsm8k"][0]["problem"], docs["math"][0]["problem"]}  # both are correct solutions

    def critic(prompt):
        doc = next(d for ds in docs.values() for d in ds if d["problem"] in prompt)
        return "It all looks fine." if doc["problem"] in silent else f"Checked. \\boxed{{{doc['label']}}}"

    out = lm_eval.simple_evaluate(model=scripted_lm(critic), tasks=["critic_processbench"],
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    expected_f1 = {}
    for subset, ds in docs.items():
        correct = [d for d in ds if d["label"] == -1]
        a2 = 100 * sum(d["problem"] not in silent for d in correct) / len(correct)
        expected_f1[subset] = 2 * 100 * a2 / (100 + a2)
        res = out["results"][f"critic_processbench_{subset}"]
        assert res["error_accuracy,none"] == 100.0 and res["correct_accuracy,none"] == pytest.approx(a2)
        assert res["f1,none"] == pytest.approx(expected_f1[subset])
    assert expected_f1["gsm8k"] < 100 and expected_f1["olympiadbench"] == 100
    assert out["results"]["critic_processbench"]["f1,none"] == pytest.approx(sum(expected_f1.values()) / 4)


@pytest.mark.slow  # lm-eval's task index takes ~20 s to build
def test_a_subset_whose_f1_is_undefined_leaves_the_group_mean_not_the_run(monkeypatch, caplog):
    """Under --limit 2 olympiadbench's two items are both correct solutions: its F1 is undefined (None, null in the
    results). The group averages the other three instead of lm-eval's mean multiplying None after every generation
    (the run used to die there); gsm8k's first (correct) item gets no box, so its F1 is 0 and the mean is 200 / 3,
    not the 50 a None counted as 0 would give."""
    lm_eval = pytest.importorskip("lm_eval")
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", "sample")
    # `critic-eval score`, run in-process by an earlier test of the same worker, leaves our logger at ERROR
    caplog.set_level(logging.WARNING, logger="critic_tasks")
    docs = {s: data.load_task_docs(s, data_dir="sample")[:2] for s in data.SUBSETS}
    assert [d["label"] for d in docs["olympiadbench"]] == [-1, -1]
    silent = docs["gsm8k"][0]["problem"]

    def critic(prompt):
        doc = next(d for ds in docs.values() for d in ds if d["problem"] in prompt)
        return "It all looks fine." if doc["problem"] == silent else f"Checked. \\boxed{{{doc['label']}}}"

    out = lm_eval.simple_evaluate(model=scripted_lm(critic), tasks=["critic_processbench"], limit=2,
                                  task_manager=critic_tasks.task_manager(), bootstrap_iters=0)
    results = out["results"]
    assert results["critic_processbench_olympiadbench"]["f1,none"] is None
    f1 = {s: results[f"critic_processbench_{s}"]["f1,none"] for s in ("gsm8k", "math", "omnimath")}
    assert f1 == {"gsm8k": 0.0, "math": 100.0, "omnimath": 100.0}
    assert results["critic_processbench"]["f1,none"] == pytest.approx(200 / 3)
    assert "leaves out 1 of its 4 members" in caplog.text


def reply_of_shape(doc: dict, i: int) -> str:
    """``our_reply``'s shapes plus the odd ones run_eval.py's reading accepts or refuses (int() takes signs,
    underscores, other scripts' digits and surrounding whitespace; a box opened inside a box; unclosed boxes)."""
    label = doc["label"]
    odd = [f"\\boxed{{\n {label}\t}}", f"\\boxed{{\\boxed{{{label}}}", "\\boxed{1_0}", "\\boxed{٣}" if label == 3 else
           "\\boxed{١}", f"\\boxed{{{label}}}" + "\\boxed{" * 50, "\\boxed{-1} \\boxed{" + str(label), "$\\boxed{-}$",
           f"\\boxed {{{label}}}"]
    return odd[i // 2 % len(odd)] if i % 2 else our_reply(doc, i // 2)


class _AuthorsRun:
    """run_eval.py's ``main`` on these replies: vLLM, the tokenizer and the Hub replaced by stand-ins that hand it
    the released items and, for each prompt it renders, the reply the critic gave to that prompt."""

    def __init__(self, replies_by_prompt: dict[str, str]):
        self.replies = replies_by_prompt
        self.sampling = []

    def tokenizer(self):
        class Tokenizer:
            def apply_chat_template(self, messages, add_generation_prompt, tokenize):
                assert len(messages) == 1 and messages[0]["role"] == "user" and add_generation_prompt and not tokenize
                return messages[0]["content"]

            def __call__(self, text, add_special_tokens):
                return type("Encoded", (), {"input_ids": text})

        return Tokenizer()

    def llm(self, **_kwargs):
        run = self

        class Completion:
            def __init__(self, text):
                self.outputs = [type("Output", (), {"text": text})]

        class LLM:
            def generate(self, prompt_token_ids, sampling_params):
                run.sampling.append(sampling_params)
                return [Completion(run.replies[p]) for p in prompt_token_ids]

        return LLM()

    def main(self, run_eval, subsets, output_dir, monkeypatch):
        import types

        monkeypatch.setattr(run_eval, "AutoTokenizer", types.SimpleNamespace(from_pretrained=lambda path: self.tokenizer()))
        monkeypatch.setattr(run_eval, "LLM", self.llm)
        monkeypatch.setattr(run_eval, "SamplingParams", lambda **kw: kw)
        monkeypatch.setattr(run_eval, "load_dataset", lambda name, split: raw_items(split))
        monkeypatch.chdir(PROCESSBENCH / "code")  # it opens ./templates/critique_template.txt
        monkeypatch.setattr("sys.argv", ["run_eval.py", "--configs", *subsets, "--model_path", "scripted",
                                         "--output_dir", str(output_dir)])
        run_eval.main()
        numbers = {}
        for subset in subsets:
            rows = {c: [json.loads(line) for line in (output_dir / "scripted" / f"{subset}_{c}.jsonl").open()]
                    for c in ("error", "correct")}
            acc1 = np.mean([e["match"] for e in rows["error"]]) * 100  # their arithmetic on their per-item matches
            acc2 = np.mean([e["match"] for e in rows["correct"]]) * 100
            numbers[subset] = (acc1, acc2, 2 * acc1 * acc2 / (acc1 + acc2))
        return numbers


@pytest.mark.slow  # lm-eval's task index takes ~20 s to build; 2,400 scripted replies
def test_a_critic_eval_run_gives_run_evals_numbers_on_replies_of_every_shape(tmp_path, monkeypatch, capsys):
    """A real ``critic-eval`` run (lm-eval, the registered tasks, the default prompt) on the shared checkout of the
    authors' repository, a scripted critic answering each prompt with a reply of one of many shapes; then
    run_eval.py's own ``main`` on the same replies. Every prompt the critic was asked is one run_eval.py renders
    (the critic's replies are looked up by the authors' rendering), and each subset's accuracies and F1, and the
    group's mean, equal the numbers their code computes and prints."""
    from critic_tasks import cli

    run_eval = authors_run_eval()
    template = authors_template()
    replies_by_prompt = {}
    for subset in RELEASED:
        for i, item in enumerate(raw_items(subset)):
            doc = {**item, "n_steps": len(item["steps"])}
            replies_by_prompt[run_eval.prepare_input_boxed(template, item)[0]["content"]] = reply_of_shape(doc, i)
    lm = scripted_cli_model("critic_scripted_processbench", lambda prompt: replies_by_prompt.get(prompt, "UNKNOWN"))
    out = tmp_path / "out"
    tasks = ",".join(f"critic_processbench_{s}" for s in RELEASED)
    monkeypatch.setenv("PROCESSBENCH_DATA_DIR", str(PROCESSBENCH))
    assert cli.main(["--model", "critic_scripted_processbench", "--tasks", tasks, "--output_path", str(out)]) == 0, \
        capsys.readouterr().err[-3000:]
    assert len(lm.prompts) == len(replies_by_prompt) and set(lm.prompts) == set(replies_by_prompt)
    (results,) = out.glob("*/results_*.json")
    ours = json.loads(results.read_text())
    authors_run = _AuthorsRun(replies_by_prompt)
    theirs = authors_run.main(run_eval, list(RELEASED), tmp_path / "authors", monkeypatch)
    sampling = authors_run.sampling
    printed = capsys.readouterr().out
    for subset, (acc1, acc2, f1) in theirs.items():
        values = ours["results"][f"critic_processbench_{subset}"]
        assert (values["error_accuracy,none"], values["correct_accuracy,none"], values["f1,none"]) == \
            pytest.approx((acc1, acc2, f1), abs=1e-9), subset
        assert f"{subset} error acc: {acc1:.1f}, correct acc: {acc2:.1f}, f1: {f1:.1f}" in printed
        assert values["prompt,none"] == "authors"
        assert ours["configs"][f"critic_processbench_{subset}"]["generation_kwargs"]["max_gen_toks"] == 8192
        assert 0 < acc1 < 100 and 0 < acc2 < 100
    assert [(p["max_tokens"], p["temperature"]) for p in sampling] == [(8192, 0.0)] * len(RELEASED)  # their budget


@pytest.mark.parametrize("module", [scoring, chance])
def test_docstring_examples(module):
    import doctest

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_the_offline_scorer_opencompass_uses_gives_run_evals_numbers():
    """``engine.score_task`` (OpenCompass's evaluator, ``critic-eval score``) on the registered task: the authors'
    numbers, the parse rate and an interval around F1."""
    from critic_tasks import engine

    docs = released("math")
    replies = [our_reply(d, i + 1) for i, d in enumerate(docs)]
    values, records = engine.score_task("critic_processbench_math", docs, replies)
    acc1, acc2, f1 = authors_numbers(docs, [authors_prediction(r) for r in replies])
    assert (values["error_accuracy"], values["correct_accuracy"], values["f1"]) == pytest.approx((acc1, acc2, f1))
    assert len(records) == len(docs) and values["parse_rate"] < 100
    assert values["f1_ci_low"] <= values["f1"] <= values["f1_ci_high"]


# ----------------------------------------------------------------------------- the best blind critic (issue 44.3)


def _hashed_critic(docs: list[dict], seed: int, share: float, rule) -> list[str]:
    """A critic that reads nothing of an item: -1 on a hashed ``share`` of the items, ``rule(n_steps)`` elsewhere."""
    import hashlib

    replies = []
    for d in docs:
        draw = int(hashlib.sha256(f"{seed}:{d['id']}".encode()).hexdigest()[:8], 16) / 16 ** 8
        replies.append("\\boxed{-1}" if draw < share else f"\\boxed{{{rule(d['n_steps'])}}}")
    return replies


def _f1_of(docs: list[dict], replies: list[str]) -> float:
    return scoring.f1([scoring.record(d, r) for d, r in zip(docs, replies)])


def test_the_hashed_mixture_attack_stays_at_the_printed_line():
    """Issue 44: -1 on a hashed 30 % of the items and step 1 otherwise scored F1 25.2 on gsm8k against a printed line
    of 17.0 (the uniform step's). The line is now the best mixture of -1 and one positional answer, exactly: over
    many hashes the attack's mean F1 sits at or below it, and no single hash beats it by more than its noise."""
    docs = released("gsm8k")
    line, by, _ = chance.floor_line(docs, ("f1",))
    scores = [_f1_of(docs, _hashed_critic(docs, seed, 0.3, lambda n: 1)) for seed in range(40)]
    assert np.mean(scores) <= line["f1"] + 0.3 and max(scores) <= line["f1"] + 5, (np.mean(scores), line)
    assert by["f1"] == chance.BLIND and line["f1"] > 20


def test_the_best_mixture_is_exact_on_hand_made_data():
    """Erroneous labels 1, 1, 0, 2 (steps of 4) and four correct items: the best rule names step 1, e = 1/2; the best
    share of -1 is sqrt(e) / (1 + sqrt(e)) and F1 2e / (1 + sqrt(e))^2, checked against a fine search over shares."""
    docs = [{"subset": "s", "label": lab, "n_steps": 4} for lab in (1, 1, 0, 2, -1, -1, -1, -1)]
    best = chance.best_blind(docs)
    e = 0.5
    grid = [p / 100000 for p in range(100001)]
    searched = max(2 * (1 - p) * e * p / ((1 - p) * e + p) if p + (1 - p) * e else 0 for p in grid)
    assert best["f1"] == pytest.approx(100 * searched, abs=1e-6)
    assert best["error_accuracy"] == 50.0 and best["correct_accuracy"] == 100.0
    # the last step (from the end, j = 0) can beat every fixed index: labels 3 of 4 steps, 4 of 5, 2 of 3
    tail = [{"subset": "s", "label": n - 1, "n_steps": n} for n in (4, 5, 3)] + [{"subset": "s", "label": -1, "n_steps": 2}]
    assert chance.best_blind(tail)["error_accuracy"] == 100.0


@pytest.mark.parametrize("subset", RELEASED)
def test_blind_critics_drawn_from_a_wider_family_stay_below_the_line(subset):
    """Per-item mixtures of -1 and two positional rules, with random shares and hashes (a wider family than the
    line's): each scores at most the line plus its noise, and their mean is below it."""
    docs = released(subset)
    line = chance.floor_line(docs, ("f1",))[0]["f1"]
    rng = random.Random(subset)
    scores = []
    for seed in range(60):
        share, k, j, mix = rng.random(), rng.randrange(4), rng.randrange(3), rng.random()
        rule = (lambda n, k=k, j=j, mix=mix, s=seed: k if (hash((s, n)) % 1000) / 1000 < mix else max(n - 1 - j, 0))
        scores.append(_f1_of(docs, _hashed_critic(docs, seed, share, rule)))
    assert max(scores) <= line + 5 and np.mean(scores) <= line, (max(scores), np.mean(scores), line)


def _threshold_critic(docs: list[dict], length, cut: float, longer: bool, rule) -> list[str]:
    """A critic that reads only a length: -1 on the solutions at least (``longer``) or at most ``cut`` long,
    ``rule(n_steps)`` on the others."""
    return ["\\boxed{-1}" if (length(d) >= cut if longer else length(d) <= cut) else f"\\boxed{{{rule(d['n_steps'])}}}"
            for d in docs]


@pytest.mark.parametrize(("subset", "length", "cut", "longer", "rule", "scored"), [
    # -1 where the solution has 6 steps or more, the third step from the end (step 0 where there are fewer) else
    ("gsm8k", lambda d: d["n_steps"], 6, True, lambda n: max(n - 3, 0), 28.1),
    # -1 on the 30 % shortest solutions (characters), step 2 on the others
    ("olympiadbench", lambda d: sum(map(len, d["steps"])), None, False, lambda n: 2, 25.4)])
def test_a_critic_by_the_solutions_length_stays_at_the_line(subset, length, cut, longer, rule, scored):
    """The red-team check of issue 44: critics that read only how long the solution is (its steps, its characters)
    scored F1 28.1 on gsm8k and 25.5 on olympiadbench against printed lines of 24.8 and 20.9 (the hashed share of -1
    did not look at length). The line's family now holds -1 on a share that is any monotone function of a length:
    each such critic, scored by the authors' arithmetic, sits at or below it."""
    docs = released(subset)
    if cut is None:
        cut = sorted(length(d) for d in docs)[int(0.3 * len(docs))]
    replies = _threshold_critic(docs, length, cut, longer, rule)
    f1 = authors_numbers(docs, [authors_prediction(r) for r in replies])[2]
    assert f1 >= scored  # the attack as measured
    assert f1 <= chance.floor_line(docs, ("f1",))[0]["f1"] + 1e-9


def test_the_length_family_is_exact_against_every_monotone_share_by_hand():
    """Hand-made items whose lengths go with their class: by hand, every positional rule (step k / j-th from the end,
    clipped into the steps), both lengths and directions, and every monotone share of -1 over the distinct lengths on
    a grid of tenths (the expected accuracies' F1: what a share's critic scores at most, a 0/1 share's exactly);
    the line is at least the best of them and within the grid's step of it, and the best 0/1 share played through the
    scorer scores what the hand loop says."""
    import itertools

    from critic_tasks.protocols.processbench import scoring

    # (steps, label, characters): short solutions mostly right, long ones wrong late
    rows = [(2, -1, 50), (3, -1, 50), (3, 1, 100), (4, -1, 100), (4, 3, 200), (5, 4, 200), (5, -1, 100), (6, 2, 300),
            (6, 5, 300), (3, -1, 50)]
    docs = [{"id": i, "subset": "s", "label": lab, "n_steps": n, "steps": ["x" * (chars // n)] * n}
            for i, (n, lab, chars) in enumerate(rows)]
    errors = [d for d in docs if d["label"] != -1]
    corrects = [d for d in docs if d["label"] == -1]
    most = max(d["n_steps"] for d in docs)
    rules = [lambda n, k=k: min(k, n - 1) for k in range(most)] + [lambda n, j=j: max(n - 1 - j, 0) for j in range(most)]
    grid = [i / 10 for i in range(11)]
    best = best_deterministic = 0.0
    for length in (lambda d: d["n_steps"], lambda d: sum(map(len, d["steps"]))):
        distinct = sorted({length(d) for d in docs})
        for shares in itertools.combinations_with_replacement(grid, len(distinct)):
            for ordered in (shares, shares[::-1]):  # non-decreasing or non-increasing in the length
                p = dict(zip(distinct, ordered))
                correct_acc = sum(p[length(d)] for d in corrects) / len(corrects)
                for rule in rules:
                    error_acc = sum((1 - p[length(d)]) * (rule(d["n_steps"]) == d["label"]) for d in errors) / len(errors)
                    f1 = 2 * error_acc * correct_acc / (error_acc + correct_acc) if error_acc + correct_acc else 0.0
                    best = max(best, f1)
                    if set(ordered) <= {0.0, 1.0} and f1 > best_deterministic:
                        best_deterministic = f1
                        played = ["\\boxed{-1}" if p[length(d)] else f"\\boxed{{{rule(d['n_steps'])}}}" for d in docs]
    line = chance.best_blind(docs)["f1"]
    assert 100 * best <= line + 1e-9 and line <= 100 * best + 3.0
    assert scoring.f1([scoring.record(d, r) for d, r in zip(docs, played)]) == pytest.approx(100 * best_deterministic)
    # the old family (one share for every item) is beaten by a critic that reads the length
    e = max(sum(rule(d["n_steps"]) == d["label"] for d in errors) for rule in rules) / len(errors)
    assert best_deterministic > 2 * e / (1 + e ** 0.5) ** 2 + 0.05
