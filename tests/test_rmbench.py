"""RM-Bench for generative judges (issue 47.3): a real lm-eval run on replies of many shapes equals the authors'
``compute_accuracy`` (RM-Bench's scripts/utils.py) fed with the decisions their RewardBench reading
(``process_judgement``) and the pair rule give; the prompt is RewardBench's ``format_judge_answers``'; the shared
data loads (math named as missing); chance and bias lines against blind critics played through the run."""

from __future__ import annotations

import hashlib
import json
import logging
import time

import pytest
from rewardbench_authors import REWARDBENCH, RMBENCH, decided_scores, generative, needs_rewardbench, needs_rmbench, rmbench_utils

from critic_tasks.core.errors import ConfigError, DataError
from critic_tasks.core.metrics.bootstrap import BootstrapSettings
from critic_tasks.protocols.rmbench import data, scoring

SAMPLE_FILES = ("chat", "code", "math", "safety-refuse", "safety-response")
pytestmark = [needs_rewardbench]


@pytest.fixture(autouse=True)
def _authors_checkout(monkeypatch):
    """The authors' prompt file from the shared checkout (no network in tests)."""
    monkeypatch.setenv("REWARDBENCH_DATA_DIR", str(REWARDBENCH))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _sample_rows() -> dict[str, list[dict]]:
    return {name: json.loads((data.SAMPLE_DIR / f"{name}_filtered.json").read_text(encoding="utf-8"))
            for name in SAMPLE_FILES}


# replies of many shapes: verdicts alone, in prose, in bold, both labels (their reading takes A first), lower case,
# a tie label their prompt does not offer, the label list echoed, nothing, a long ramble
SHAPES = ("[[A]]", "[[B]]", "After comparing, I pick [[A]].", "Assistant B is better.\n\n**[[B]]**",
          "[[B]] ... on reflection [[A]]", "[[a]]", "[[C]]", "", "Verdict: A", "A" * 5000 + " [[B]]",
          '"[[A]]" if assistant A is better, "[[B]]" if assistant B is better.', "[[ B ]]", "[[B]]\n[[B]]")


def _shape(system: str, user: str) -> str:
    """A reply picked by the prompt's hash: the same messages get the same reply, whoever renders them."""
    h = int(hashlib.sha256((system + "\x00" + user).encode()).hexdigest(), 16)
    return SHAPES[h % len(SHAPES)]


def _chat_lm(reply):
    """An lm-eval model rendering each chat as JSON (what it was sent) and answering ``reply(system, user)``."""
    from lm_eval.api.model import LM

    class ChatLM(LM):
        def __init__(self):
            super().__init__()
            self.chats: list[list[dict]] = []

        def apply_chat_template(self, chat_history, add_generation_prompt=True):
            return json.dumps(chat_history)

        def chat_template(self, chat_template=False):
            return "json"

        @property
        def tokenizer_name(self):
            return "json-recorder"

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for r in requests:
                chat = json.loads(r.args[0])
                self.chats.append(chat)
                system = next((m["content"] for m in chat if m["role"] == "system"), "")
                out.append(reply(system, chat[-1]["content"]))
            return out

        def loglikelihood(self, requests, disable_tqdm=False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            raise NotImplementedError

    return ChatLM()


def _run(monkeypatch, task: str, reply):
    import lm_eval

    import critic_tasks

    monkeypatch.setenv("RMBENCH_DATA_DIR", "sample")
    lm = _chat_lm(reply)
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], bootstrap_iters=0, apply_chat_template=True,
                                  task_manager=critic_tasks.task_manager(), log_samples=True)
    return out["results"][task], lm, out


def _authors_messages(question: str, a: str, b: str) -> tuple[str, str]:
    return generative().format_judge_answers(question, [{}, {"content": a}], [{}, {"content": b}])


def _authors_results(reply) -> list[dict]:
    """compute_accuracy's input, made with their code from the sample files: for each prompt and comparison,
    both orders rendered by format_judge_answers, answered by ``reply``, read by process_judgement, decided by the
    pair rule (+1 per order naming the chosen response, -1 per order naming the rejected one; right if > 0)."""
    results = []
    for name, rows in _sample_rows().items():
        for row in rows:
            right = {}
            for i, chosen in enumerate(row["chosen"]):
                for j, rejected in enumerate(row["rejected"]):
                    forward = generative().process_judgement(reply(*_authors_messages(row["prompt"], chosen, rejected)), None)
                    reverse = generative().process_judgement(reply(*_authors_messages(row["prompt"], rejected, chosen)), None)
                    counter = (forward == "A") - (forward == "B") + (reverse == "B") - (reverse == "A")
                    right[(i, j)] = counter > 0
            score_chosen, score_rejected = decided_scores(right)
            results.append({"domain": name, "score_chosen": score_chosen, "score_rejected": score_rejected})
    return results


@needs_rmbench
def test_a_run_on_replies_of_many_shapes_equals_the_authors_compute_accuracy(monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    results, lm, out = _run(monkeypatch, "critic_rmbench", _shape)
    rows = _sample_rows()
    # the messages sent are format_judge_answers' (system, user), in the loader's order: prompt, i, j, order
    want = [_authors_messages(row["prompt"], *((c, r) if order == 0 else (r, c)))
            for name in SAMPLE_FILES for row in rows[name] for c in row["chosen"] for r in row["rejected"]
            for order in (0, 1)]
    assert [(chat[0]["content"], chat[1]["content"]) for chat in lm.chats] == want
    assert [[m["role"] for m in chat] for chat in lm.chats] == [["system", "user"]] * len(want)
    authors = rmbench_utils().compute_accuracy(_authors_results(_shape))
    capsys.readouterr()  # their function prints what it does
    for domain in data.DOMAINS:
        assert results[f"accuracy_{domain},none"] == pytest.approx(100 * authors[domain])
    for key in ("hard", "normal", "easy"):
        assert results[f"{key},none"] == pytest.approx(100 * authors[f"{key}_acc"])
    assert results["accuracy,none"] == pytest.approx(100 * authors["total_avg_acc"])
    assert results["style_gap,none"] == pytest.approx(100 * (authors["easy_acc"] - authors["hard_acc"]))
    assert results["domains,none"] == "chat+code+math+safety"
    assert results["comparisons,none"] == 9 * sum(len(r) for r in rows.values())
    read = [generative().process_judgement(_shape(*m), None) for m in want]
    assert results["parse_rate,none"] == pytest.approx(100 * sum(v in ("A", "B") for v in read) / len(read))
    assert 0 < results["accuracy,none"] < 100 and results["hard,none"] != results["easy,none"]  # the shapes vary


@needs_rmbench
def test_one_domain_equals_the_authors_on_that_domains_prompts(monkeypatch, capsys):
    pytest.importorskip("lm_eval")
    results, _, _ = _run(monkeypatch, "critic_rmbench_safety", _shape)
    safety = [r for r in _authors_results(_shape) if r.pop("domain").startswith("safety")]
    authors = rmbench_utils().compute_accuracy(safety)
    capsys.readouterr()
    assert results["accuracy,none"] == pytest.approx(100 * (authors["hard_acc"] + authors["normal_acc"]
                                                            + authors["easy_acc"]) / 3)
    for key in ("hard", "normal", "easy"):
        assert results[f"{key},none"] == pytest.approx(100 * authors[f"{key}_acc"])
    assert results["domains,none"] == "safety"


# ----------------------------------------------------------------------------- blind critics: chance and bias lines


def _between(user: str) -> tuple[str, str]:
    a = user.split("[The Start of Assistant A's Answer]\n", 1)[1].split("\n[The End of Assistant A's Answer]", 1)[0]
    b = user.split("[The Start of Assistant B's Answer]\n", 1)[1].split("\n[The End of Assistant B's Answer]", 1)[0]
    return a, b


def _longer(system: str, user: str) -> str:
    a, b = _between(user)
    return "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "no idea"


def test_blind_critics_through_the_run_score_their_chance_and_bias_lines(monkeypatch):
    pytest.importorskip("lm_eval")
    from critic_tasks import chance

    first, _, _ = _run(monkeypatch, "critic_rmbench", lambda system, user: "[[A]]")
    # always position A: +1 in one order, -1 in the other: never right, always inconsistent, all first-slot
    assert first["accuracy,none"] == 0.0 and first["inconsistency,none"] == 100.0
    assert first["first_position,none"] == 100.0 and first["style_gap,none"] == 0.0
    longer, _, _ = _run(monkeypatch, "critic_rmbench", _longer)
    # by hand from the sample files: a comparison is right when the chosen response is the longer
    by_domain_class: dict = {}
    labels_longer = decided = tied = 0
    for name, rows in _sample_rows().items():
        for row in rows:
            for i, c in enumerate(row["chosen"]):
                for j, r in enumerate(row["rejected"]):
                    cls = "hard" if i < j else "normal" if i == j else "easy"
                    by_domain_class.setdefault((data.domain_of(name), cls), []).append(len(c) > len(r))
                    tied += len(c) == len(r)
                    if len(c) != len(r):
                        decided += 2
                        labels_longer += 2 * (len(c) > len(r))
    cls_mean = {k: 100 * sum(v) / len(v) for k, v in by_domain_class.items()}
    for cls in ("hard", "normal", "easy"):
        assert longer[f"{cls},none"] == pytest.approx(sum(cls_mean[(d, cls)] for d in data.DOMAINS) / 4)
    want = sum(sum(cls_mean[(d, c)] for c in ("hard", "normal", "easy")) / 3 for d in data.DOMAINS) / 4
    assert longer["accuracy,none"] == pytest.approx(want)
    assert longer["style_gap,none"] == pytest.approx(longer["easy,none"] - longer["hard,none"])
    # always the longer: 100 x (1 - the labels' longer share) beyond the labels (here the chosen is the label)
    assert longer["length_bias,none"] == pytest.approx(100 - 100 * labels_longer / decided)
    # equal lengths: no verdict in either order, so inconsistent (and wrong); every other comparison consistent
    assert tied and longer["inconsistency,none"] == pytest.approx(100 * tied / (decided / 2 + tied))
    # the chance line: the floors of the content-blind critics, the longer one's equal to the run above
    monkeypatch.setenv("RMBENCH_DATA_DIR", "sample")
    line = chance.chance_line("critic_rmbench")
    assert line.floors["coin"]["accuracy"] == 50.0 and line.floors["always_first"]["accuracy"] == 0.0
    for key in ("accuracy", "hard", "normal", "easy"):
        assert line.floors["longer"][key] == pytest.approx(longer[f"{key},none"])
        assert line.chance[key] == max(floors[key] for floors in line.floors.values())
    assert line.values["always_first"]["accuracy"] == 0.0


# ----------------------------------------------------------------------------- the reading, the data


@pytest.mark.parametrize("reply", [*SHAPES, None, 7, "[[A]" + "]" * 3, "x" * 1_000_000 + "[[B]]"])
def test_verdicts_are_read_as_process_judgement_reads_them(reply):
    from critic_tasks.protocols.rewardbench.authors_prompts import read_v1_verdict

    theirs = generative().process_judgement(reply, None) if isinstance(reply, str) else "error"
    assert read_v1_verdict(reply) == (theirs if theirs in ("A", "B") else None)


def test_a_megabyte_reply_is_read_in_linear_time():
    from critic_tasks.protocols.rewardbench.authors_prompts import read_v1_verdict

    for reply in ("[" * 1_000_000, "[[" * 500_000 + "B", "[[A" * 333_333, "x" * 1_000_000):
        start = time.perf_counter()
        read_v1_verdict(reply)
        assert time.perf_counter() - start < 1.0


@needs_rmbench
def test_the_shared_data_loads_chat_code_and_safety_and_names_the_missing_math_file(caplog):
    with caplog.at_level(logging.WARNING, logger="critic_tasks"):
        docs = data.load_task_docs(data_dir=RMBENCH)
    sizes = {name: len(json.loads((RMBENCH / "data" / f"{name}_filtered.json").read_text()))
             for name in ("chat", "code", "safety-refuse", "safety-response")}
    assert len(docs) == 18 * sum(sizes.values())
    assert {d["domain"] for d in docs} == {"chat", "code", "safety"}
    lines = [r.getMessage() for r in caplog.records if "math_filtered.json" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0] and "math is left out" in lines[0]
    with pytest.raises(DataError, match=r"math_filtered\.json: file not found") as err:
        data.load_task_docs(data_dir=RMBENCH, domain="math")
    assert "\n" not in str(err.value)
    assert len(data.load_task_docs(data_dir=RMBENCH, domain="chat")) == 18 * sizes["chat"]


def test_the_hub_layout_total_dataset_is_read_by_its_domain_field(tmp_path):
    rows = [{**row, "domain": name} for name, rs in _sample_rows().items() for row in rs]
    (tmp_path / data.TOTAL_FILE).write_text(json.dumps(rows), encoding="utf-8")
    docs = data.load_task_docs(data_dir=tmp_path)
    assert ([(d["pair_id"], d["order"], d["response_a"], d["domain"]) for d in docs]
            == [(d["pair_id"], d["order"], d["response_a"], d["domain"]) for d in data.load_task_docs(data_dir="sample")])
    rows[3]["domain"] = "finance"
    (tmp_path / data.TOTAL_FILE).write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"total_dataset\.json\[3\]: field 'domain' 'finance' is none of"):
        data.load_task_docs(data_dir=tmp_path)


@pytest.mark.parametrize("change, message", [
    (lambda rows: rows[0]["chosen"].pop(), r"\[0\]: field 'chosen' should hold 3 texts"),
    (lambda rows: rows[1].pop("prompt"), r"\[1\]: missing field 'prompt'"),
    (lambda rows: rows[1].update(rejected="no"), r"\[1\]: field 'rejected' should be list, got str"),
    (lambda rows: rows[1].update(id=rows[0]["id"]), r"prompt id 'chat:101' repeats"),
])
def test_bad_data_is_one_error_naming_the_file_and_field(tmp_path, change, message):
    rows = _sample_rows()["chat"]
    change(rows)
    (tmp_path / "chat_filtered.json").write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(DataError, match=message) as err:
        data.load_task_docs(data_dir=tmp_path, domain="chat")
    assert "chat_filtered.json" in str(err.value)


def test_bad_options_and_an_unreadable_prompt_file(monkeypatch, tmp_path):
    with pytest.raises(ConfigError, match="rmbench domain 'finance'"):
        data.load_task_docs(data_dir="sample", domain="finance")
    with pytest.raises(ConfigError, match="dimension 'comparison'"):
        data.load_task_docs("comparison", data_dir="sample")
    # a checkout at another version of generative.py: one line naming the file, before any generation
    from critic_tasks.protocols.rewardbench import authors_prompts

    (tmp_path / "rewardbench").mkdir()
    (tmp_path / "rewardbench" / "generative.py").write_text("prompt_v2 = 'changed'\n", encoding="utf-8")
    monkeypatch.setenv("REWARDBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CRITIC_AUTHORS_MIRROR", str(tmp_path / "no-mirror"))
    authors_prompts.pairwise_v1.cache_clear()
    from critic_tasks.protocols import authors

    authors._text.cache_clear()
    try:
        with pytest.raises(DataError, match=r"generative\.py: sha256 .* is not the pinned"):
            data.load_task_docs(data_dir="sample")
    finally:
        authors_prompts.pairwise_v1.cache_clear()
        authors._text.cache_clear()


def test_metrics_on_hand_made_records_and_their_intervals():
    def rec(prompt, i, j, order, verdict, domain="chat"):
        return scoring.RMBenchRecord(domain=domain, prompt_id=prompt, pair_id=f"{prompt}:{i}{j}", chosen_style=i,
                                     rejected_style=j, order=order, verdict=verdict, parsed=verdict is not None)

    records = []
    for i in range(3):
        for j in range(3):
            # prompt p: right exactly on the diagonal and below it (easy, normal); wrong above (hard)
            good = i >= j
            records += [rec("p", i, j, "forward", "A" if good else "B"), rec("p", i, j, "reverse", "B" if good else "A")]
            # prompt q (code): one order names the chosen, the other no verdict: right everywhere (+1)
            records += [rec("q", i, j, "forward", "A", "code"), rec("q", i, j, "reverse", None, "code")]
    values = scoring.rmbench_metrics(records)
    assert values["hard"] == 50.0 and values["normal"] == 100.0 and values["easy"] == 100.0
    assert values["accuracy"] == pytest.approx((200 / 3 + 100) / 2)
    assert values["style_gap"] == 50.0 and values["domains"] == "chat+code"
    assert values["inconsistency"] == 50.0 and values["parse_rate"] == pytest.approx(100 * 27 / 36)
    settings = BootstrapSettings(resamples=200, seed=1)
    for base in ("accuracy", "hard", "easy", "style_gap", "inconsistency", "first_position"):
        low, high = scoring.rmbench_interval(records, base, settings)
        assert low <= values[base] <= high
    assert scoring.rmbench_interval(records, "parse_rate", settings) is None
    from critic_tasks.core.records import Record

    assert Record.from_dict(json.loads(json.dumps(records[1].as_dict()))) == records[1]


def test_the_chance_line_of_comparisons_of_one_class_has_only_that_class(monkeypatch):
    """`critic-eval demo --tasks critic_rmbench` asks each prompt's first comparison (concise vs concise: `normal`),
    and the demo's chance line divided by zero for `hard` and `easy` (a traceback after the run); each class without
    comparisons now has no floor, as the run's metric has no value."""
    from critic_tasks import chance
    from critic_tasks.engine import task_docs

    monkeypatch.setenv("RMBENCH_DATA_DIR", "sample")
    docs = [d for d in task_docs("critic_rmbench") if d["chosen_style"] == 0 and d["rejected_style"] == 0
            and len(d["response_a"]) != len(d["response_b"])]  # equal lengths (the code sample's) leave the longer undefined
    assert {d["order"] for d in docs} == {"forward", "reverse"} and len(docs) == 2 * len({d["prompt_id"] for d in docs})
    line = chance.chance_line("critic_rmbench", docs)
    assert set(line.chance) == {"accuracy", "normal"} and line.chance["accuracy"] == line.chance["normal"]
    # the critic that always picks the longer response, counted by hand: per domain the share of its comparisons
    # whose chosen response is longer, then the mean of the domains
    by_domain = {}
    for d in docs:
        if d["order"] == "forward":
            by_domain.setdefault(d["domain"], []).append(100.0 * (len(d["response_a"]) > len(d["response_b"])))
    longer = sum(sum(v) / len(v) for v in by_domain.values()) / len(by_domain)
    assert line.floors["longer"] == pytest.approx({"accuracy": longer, "normal": longer})


def test_a_folder_that_is_no_rmbench_copy_or_lacks_another_domain_is_one_error(tmp_path, caplog):
    """A newcomer's RMBENCH_DATA_DIR naming RewardBench's checkout got five lines, each saying 'THU-KEG/RM-Bench's
    repository lacks the math file' of chat, code, math and both safety files, then 'no prompts of domain all'; and a
    copy without its chat file ran without chat. Only the math file (which the repository lacks) may be missing."""
    with caplog.at_level(logging.WARNING, logger="critic_tasks"), pytest.raises(DataError) as err:
        data.load_task_docs(data_dir=tmp_path)
    files = ", ".join(f"{name}_filtered.json" for name in SAMPLE_FILES)
    assert str(err.value) == (f"{tmp_path}: none of RM-Bench's files here (expected total_dataset.json, the Hub's, or "
                              f"the repository's {files}; in the folder itself or under data/)")
    assert not caplog.records
    for name in SAMPLE_FILES:
        if name not in ("chat", "math"):
            (tmp_path / f"{name}_filtered.json").write_text(json.dumps(_sample_rows()[name]), encoding="utf-8")
    with pytest.raises(DataError) as err:
        data.load_task_docs(data_dir=tmp_path)
    assert str(err.value) == (f"{tmp_path / 'chat_filtered.json'}: file not found (nor under {tmp_path / 'data'}); a "
                              "copy of the repository's data/ holds every domain but math")
    (tmp_path / "chat_filtered.json").write_text(json.dumps(_sample_rows()["chat"]), encoding="utf-8")
    assert {d["domain"] for d in data.load_task_docs(data_dir=tmp_path)} == {"chat", "code", "safety"}  # math left out
