"""The fast paths that replace heavier library calls: average ranks without scipy, Spearman from them, the documents' dataset that
decodes its rows once, and the overhead benchmark's synthetic dev-sized set. Expected values are worked out by hand
loops on hand-made data."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from critic_tasks.core.metrics.spearman import average_ranks, rank_correlation, resample_ranks

REPO = Path(__file__).resolve().parent.parent


def _hand_ranks(values):
    """rank_i = #(values below) + (#(values equal, itself included) + 1) / 2, by counting."""
    out = []
    for v in values:
        below = sum(1 for w in values if w < v)
        equal = sum(1 for w in values if w == v)
        out.append(below + (equal + 1) / 2)
    return out


def _hand_pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / math.sqrt(va * vb)


def test_average_ranks_match_counting():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0]
    assert average_ranks(values).tolist() == [4.5, 1.5, 6.0, 1.5, 8.0, 11.0, 3.0, 10.0, 8.0, 4.5, 8.0]
    assert average_ranks(values).tolist() == _hand_ranks(values)
    assert average_ranks([7.0]).tolist() == [1.0]
    assert average_ranks([2.0, 2.0, 2.0]).tolist() == [2.0, 2.0, 2.0]


def test_resample_ranks_rank_each_row_on_its_own():
    values = [5.0, 1.0, 5.0, 3.0, 7.0]
    rows = [[0, 0, 1, 2], [4, 3, 3, 3], [1, 2, 3, 4], [2, 2, 2, 2]]
    got = resample_ranks(values, np.array(rows))
    for row, ranks in zip(rows, got.tolist()):
        assert ranks == _hand_ranks([values[i] for i in row])
    assert resample_ranks(values, np.array([4, 0, 1])).tolist() == _hand_ranks([7.0, 5.0, 1.0])


def test_rank_correlation_is_pearson_of_average_ranks():
    pred = [1, 2, 2, 4, 5, 7, 7, 3]
    gold = [2, 1, 3, 3, 6, 7, 5, 4]
    expected = _hand_pearson(_hand_ranks(pred), _hand_ranks(gold))
    assert rank_correlation(pred, gold) == pytest.approx(expected, abs=1e-12)
    assert rank_correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(rank_correlation([4, 4, 4], [1, 2, 3]))  # a constant side: undefined
    assert math.isnan(rank_correlation([1, float("nan"), 3], [1, 2, 3]))


def test_docs_walks_give_the_documents_each_time_in_fresh_dicts():
    from critic_tasks.adapters.lm_eval.task_functions import Docs

    docs = [{"domain": "qa", "item_index": i, "question": f"q{i}", "score": float(i) / 2, "gold": None if i % 2 else "A"}
            for i in range(5)]
    ds = Docs.from_list(docs)
    first = list(ds)
    assert first == docs and [list(d) for d in first] == [list(d) for d in docs]  # values and key order
    first[0]["question"] = "changed"
    first[1]["added"] = True
    ds[2]["added"] = True
    assert list(ds) == docs  # a walk never sees what a caller did to an earlier walk's dicts
    assert ds[3] == docs[3] and len(ds) == 5 and ds[1:3] == docs[1:3]
    assert list(ds.features) == ["domain", "item_index", "question", "score", "gold"]  # lm-eval reads the columns
    # one Arrow table: a field one document lacks is null there, as a datasets loader gives it
    assert list(Docs.from_list([{"a": 1, "b": "x"}, {"a": 2}])) == [{"a": 1, "b": "x"}, {"a": 2, "b": None}]


def test_overhead_benchmark_writes_a_dev_sized_set_in_the_real_layout(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    sys.modules.pop("overhead", None)
    import overhead

    from critic_tasks.protocols.criticbench.data import load_docs

    overhead.write_dataset(tmp_path)
    feedback = load_docs("feedback", "dev", data_dir=str(tmp_path))
    comparison = load_docs("comparison", "dev", data_dir=str(tmp_path))
    meta = load_docs("meta", "dev", data_dir=str(tmp_path))
    # the dev split's files: 50 items in 7 domains, 63 code_exec, 41 code_not_exec, 10 in each of the 8
    # correction_part files; 50 pairs per domain, both orders; 60 meta items, 72 in math_cot and math_pot, 58 summary
    assert len(feedback) == 7 * 50 + 63 + 41 + 8 * 10 == 534
    assert len(comparison) == 9 * 50 * 2 == 900
    assert len(meta) == 6 * 60 + 72 + 72 + 58 == 562
    assert overhead.canned_reply("Answer on the first line exactly as `Decision: A`, ...").split("\n")[0] in (
        "Decision: A", "Decision: B", "Decision: C")
    assert overhead.canned_reply("... exactly as `Score: x` (x is an integer from 1 to 7)").startswith("Score: ")


def test_judge_client_names_a_connection_failure_as_one(tmp_path):
    """A refused connection reaches the backend (``_Endpoint.chat``, the SDK's ``chat.completions`` call) as openai's
    connection error: recorded as the transport's failure, never as a malformed reply."""
    import socket

    from critic_tasks.llm import LLMSettings
    from critic_tasks.llm.backends.openai_compatible import OpenAIBackend

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = LLMSettings(role="judge", backend="openai", model="j", base_url=f"http://127.0.0.1:{port}/v1",
                           cache=None, concurrency=2, max_tokens=8, timeout=5, max_tries=1)
    (reply,) = OpenAIBackend(settings).generate(["a"], progress=False)
    assert reply.text is None and reply.error.startswith("gave up after 1 tries; last error: ")
    assert "malformed" not in reply.error and "connect" in reply.error.lower()
