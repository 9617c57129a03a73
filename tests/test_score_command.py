"""critic-eval score: saved predictions in the toolkit's / OpenCompass's format give the numbers of a live run."""

import hashlib
import json

import pytest
from conftest import SHARED
from helpers import scripted_lm

import critic_tasks
from critic_tasks import cli
from critic_tasks.protocols.criticbench.loading import load_task_docs
from critic_tasks.protocols.criticbench.prompts import critic_prompt

lm_eval = pytest.importorskip("lm_eval")
MODES = {"feedback": "feedback", "comparison": "comp_feedback", "meta": "meta_feedback", "correction": "correction"}


def reply(prompt: str) -> str:
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    if h % 11 == 0:
        return "I cannot say."
    if "Decision: A`, `Decision: B`" in prompt:
        return f"Decision: {'ABC'[h % 3]}"
    if "revised response" in prompt:
        return "#### RESULT: 5" if h % 2 else "```python\nclass Solution:\n    def solution(self):\n        return 5\n```"
    return f"{'Score' if '`Score: x`' in prompt else 'Decision'}: {h % 7 + 1}"


def write_predictions(folder, split="dev", prompt_of=critic_prompt, **load):
    """The sample dataset's items as the toolkit names and lays out prediction files, answered by ``reply``."""
    files = {}
    for dim, mode in MODES.items():
        for doc in load_task_docs(dim, split, None, "sample", **load):
            name = f"{split}_{doc['domain']}_{mode}_obj"
            name += "_correction_part" if doc.get("part") == "correction_part" else ""
            name += "_reverse" if doc.get("order") == "reverse" else ""
            rows = files.setdefault(f"{name}.json", {})
            prompt = prompt_of(doc)
            rows[str(len(rows))] = {"origin_prompt": f"User: {prompt}\n\nAssistant: ", "prediction": reply(prompt)}
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        (folder / name).write_text(json.dumps(rows))
    return folder


@pytest.fixture(autouse=True)
def sample(monkeypatch):
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.delenv("CRITICBENCH_PROTOCOL", raising=False)


def test_scores_equal_a_live_lm_eval_run_on_the_same_replies(tmp_path, capsys):
    folder = write_predictions(tmp_path / "preds")
    out = tmp_path / "scored.json"
    assert cli.main(["score", str(folder), "--data_dir", "sample", "--output", str(out)]) == 0
    scored = json.loads(out.read_text())
    live = lm_eval.simple_evaluate(model=scripted_lm(reply), tasks=["critic", "critic_per_domain"],
                                   task_manager=critic_tasks.task_manager(), bootstrap_iters=0)["results"]
    compared = 0
    for task, metrics in scored["results"].items():
        for key, value in metrics.items():
            assert live[task][key] == pytest.approx(value, abs=1e-9), (task, key)
            compared += 1
    assert {"critic", "critic_feedback", "critic_comparison", "critic_meta", "critic_correction"} <= set(scored["results"])
    assert compared > 300
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["task", "metric", "value", "note"]
    assert any(line.split()[:2] == ["critic", "overall"] for line in table[1:-1])
    # the summary command reads what score wrote
    assert cli.main(["summary", str(out)]) == 0


def test_toolkit_protocol_checks_every_prompt_is_the_toolkits(tmp_path):
    toolkit_dir = SHARED / "data" / "criticeval" / "toolkit"
    if not toolkit_dir.is_dir():
        pytest.skip("no toolkit checkout in ../shared")
    kw = {"protocol": "toolkit", "toolkit_dir": str(toolkit_dir)}
    folder = write_predictions(tmp_path / "preds", prompt_of=lambda d: d["prompt"], **kw)
    out = tmp_path / "scored.json"
    assert cli.main(["score", str(folder), "--data_dir", "sample", "--protocol", "toolkit", "--toolkit_dir",
                     str(toolkit_dir), "--output", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    assert results["critic_comparison"]["score,none"] == results["critic_comparison"]["accuracy_loose,none"]
    # our prompts are not the toolkit's: with a checkout, that mismatch is an error naming file and item
    ours = write_predictions(tmp_path / "ours")
    assert cli.main(["score", str(ours), "--data_dir", "sample", "--protocol", "toolkit", "--toolkit_dir",
                     str(toolkit_dir)]) == 2


def test_test_split_reports_parse_rates_and_per_item_values(tmp_path):
    folder = write_predictions(tmp_path / "preds", split="test")
    out = tmp_path / "scored.json"
    assert cli.main(["score", str(folder), "--data_dir", "sample", "--output", str(out)]) == 0
    report = json.loads(out.read_text())
    meta = report["results"]["critic_meta_test"]
    assert meta["labels_available,none"] == 0 and "spearman,none" not in meta and meta["parse_rate,none"] > 0
    values = report["items"]["test_chat_meta_feedback_obj.json"]
    rows = json.loads((folder / "test_chat_meta_feedback_obj.json").read_text())
    expected = {k: (None if r["prediction"].startswith("I cannot") else float(r["prediction"].split(":")[1]))
                for k, r in rows.items()}
    assert values == expected


def test_mismatched_predictions_are_one_clear_line(tmp_path, capsys):
    folder = write_predictions(tmp_path / "preds")
    path = folder / "dev_chat_meta_feedback_obj.json"
    rows = json.loads(path.read_text())
    rows.pop(str(len(rows) - 1))
    path.write_text(json.dumps(rows))
    assert cli.main(["score", str(folder), "--data_dir", "sample"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "predictions but the dataset file has" in err[0]
    # the right count, but another domain's items: caught by content
    path.write_text((folder / "dev_qa_meta_feedback_obj.json").read_text())
    assert cli.main(["score", str(folder), "--data_dir", "sample"]) == 2
    assert "does not contain the task input" in capsys.readouterr().err
