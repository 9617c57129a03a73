"""The leaderboard-compatible protocol, checked against the released toolkit (../shared/data/criticeval/toolkit, read
at run time as a user's checkout) and the 156 prediction files released with it (DeepSeek-67B-Chat)."""

import json
import re
from pathlib import Path

import pytest
from conftest import SHARED
from helpers import scripted_lm
from toolkit_reference import toolkit_extract, toolkit_option

import critic_tasks
from critic_tasks.core.errors import ConfigError
from critic_tasks.protocols.criticbench import toolkit
from critic_tasks.protocols.criticbench.data import load_task_docs
from critic_tasks.protocols.criticbench.prompts import DOMAIN_NAMES

TOOLKIT = SHARED / "data" / "criticeval" / "toolkit"
DIMENSION_OF = {"feedback": "feedback", "comp_feedback": "comparison", "meta_feedback": "meta",
                "correction": "correction"}
NAME = re.compile(rf"^(?P<split>dev|test)_(?P<domain>{'|'.join(DOMAIN_NAMES)})_(?P<mode>comp_feedback|meta_feedback|"
                  r"feedback|correction)_(?P<flag>obj|sub)(?P<reverse>_reverse)?(?:_correction_part)?\.json$")
CHAT_WRAP = ("User: ", "\n\nAssistant: ")  # the DeepSeek chat template OpenCompass put around each prompt


@pytest.fixture(scope="module")
def kit():
    if not (TOOLKIT / "inference" / "utils" / "prompts.py").is_file():
        pytest.skip(f"the released toolkit is not at {TOOLKIT}")
    return toolkit.load_toolkit(str(TOOLKIT))


def _fields(template: str, content: str) -> dict | None:
    """Invert a toolkit format string: the field values that fill ``template`` to give ``content``."""
    names, pattern, last = [], "", 0
    for m in re.finditer(r"\{(\w+)\}", template):
        pattern += re.escape(template[last:m.start()])
        group = m.group(1) if m.group(1) not in names else None
        pattern += f"(?P<{group}>.*?)" if group else f"(?P={m.group(1)})"
        names.append(m.group(1))
        last = m.end()
    match = re.fullmatch(pattern + re.escape(template[last:]), content, re.S)
    return match.groupdict() if match else None


def _released(predictions_dir):
    for path in sorted(predictions_dir.glob("*.json")):
        m = NAME.match(path.name)
        assert m, path.name
        yield path, m, json.loads(path.read_text(encoding="utf-8"))


def test_prompts_rendered_from_the_fields_are_byte_identical_to_every_released_prompt(kit, predictions_dir):
    files = items = 0
    for path, m, predictions in _released(predictions_dir):
        mode, flag, domain, reverse = m["mode"], m["flag"], m["domain"], bool(m["reverse"])
        table = kit.prompts[mode][flag] if mode in ("feedback", "comp_feedback") else kit.prompts[mode]
        prefix, post = table[domain]["prefix_prompt"], table[domain]["post_prompt"]
        for key, row in predictions.items():
            prompt = row["origin_prompt"]
            assert prompt.startswith(CHAT_WRAP[0]) and prompt.endswith(CHAT_WRAP[1]), (path.name, key)
            prompt = prompt[len(CHAT_WRAP[0]): -len(CHAT_WRAP[1])]
            assert prompt.startswith(prefix) and prompt.endswith(post), (path.name, key)
            fields = _fields(kit.mappings[mode][domain], prompt[len(prefix): len(prompt) - len(post)])
            assert fields is not None, (path.name, key)
            item = dict(fields)
            if mode == "comp_feedback":  # the dataset keeps the pair under obj/sub, in the forward order
                pair = {k: item.pop(k) for k in list(item) if k.endswith(("_a", "_b"))}
                if reverse:
                    pair = {k[:-1] + ("b" if k.endswith("a") else "a"): v for k, v in pair.items()}
                item[flag] = pair
            rendered = kit.compose(DIMENSION_OF[mode], flag, domain, item, reverse=reverse)
            assert rendered == prompt, (path.name, key)
            items += 1
        files += 1
    assert files == 156 and items > 5000


def test_toolkit_parse_equals_the_toolkits_own_on_every_released_prediction(predictions_dir):
    checked = 0
    for path, m, predictions in _released(predictions_dir):
        if m["flag"] != "obj" or m["mode"] == "correction":
            continue
        for row in predictions.values():
            text = row["prediction"]
            if m["mode"] == "comp_feedback":
                expected = toolkit_option(text) or None
                assert toolkit.parse_verdict(text) == expected, (path.name, text[:200])
            else:
                marker = "Score" if m["mode"] == "meta_feedback" else "Decision"
                expected = toolkit_extract(text, marker)
                got = toolkit.parse_score(text, marker)
                assert (got is None) if expected == "" else got == pytest.approx(float(expected)), (path.name, text[:200])
            checked += 1
    assert checked > 3000


@pytest.mark.parametrize("text,expected", [
    ("Decision: 5\nfine", 5.0), ("Decision: 9", 9.0),  # the toolkit keeps out-of-range scores
    ("Decision: five. Overall 3", 3.0), ("the answer is 2**3 then 1/0", 8.0), ("True or 0", None),
    ("10**10**10", None),  # eval would hang; arithmetic refuses a huge exponent
    ("((((10**64)**64)**64)**64)", None),  # a power of powers: each exponent small, eval takes hours (red team: 22 s)
    ("I rate it " + "(10**64)*" * 20000 + "1", None),  # a product past any float, not computed to the end
    ("(10**64)**4/10**64", 1e192), ("2**64*3", 3 * 2.0 ** 64),  # under the bound: as eval gives
])
def test_toolkit_score_rules(text, expected):
    assert toolkit.parse_score(text) == expected


def test_toolkit_mode_runs_in_lm_eval_with_the_leaderboard_overall(kit, monkeypatch):
    import lm_eval

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("CRITICBENCH_PROTOCOL", "toolkit")
    monkeypatch.setenv("CRITICBENCH_TOOLKIT_DIR", str(TOOLKIT))

    def reply(prompt):
        h = sum(map(ord, prompt))
        return f"Decision: {'ABC'[h % 3]}." if "Decision: A/B/C" in prompt else f"Decision: {h % 7 + 1}\nScore: {h % 5 + 2}"

    lm = scripted_lm(reply)
    tasks = ["critic_feedback", "critic_comparison", "critic_meta", "critic_correction"]
    out = lm_eval.simple_evaluate(model=lm, tasks=["critic"], task_manager=critic_tasks.task_manager(),
                                  bootstrap_iters=0)
    expected_prompts = [d["prompt"] for dim in ("feedback", "comparison", "meta", "correction")
                        for d in load_task_docs(dim, "dev", None, "sample")]
    assert sorted(lm.prompts) == sorted(expected_prompts)  # the model saw the toolkit's prompts, nothing else
    results = out["results"]
    assert results["critic_comparison"]["score,none"] == results["critic_comparison"]["accuracy_loose,none"]
    # the leaderboard's overall: (feedback + 100) / 2, correction, comparison (toolkit rule), (meta + 100) / 2
    fb, meta = results["critic_feedback"]["spearman,none"], results["critic_meta"]["spearman,none"]
    overall = ((fb + 100) / 2 + results["critic_correction"]["pass_rate,none"]
               + results["critic_comparison"]["accuracy_loose,none"] + (meta + 100) / 2) / 4
    assert results["critic"]["score,none"] == pytest.approx(overall)
    assert all(t in results for t in tasks)


def test_missing_or_bad_toolkit_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.delenv("CRITICBENCH_TOOLKIT_DIR", raising=False)
    with pytest.raises(ConfigError, match="set CRITICBENCH_TOOLKIT_DIR"):
        load_task_docs("meta", "dev", "chat", "sample", protocol="toolkit")
    with pytest.raises(ConfigError, match=r"toolkit_dir=/nope: not a directory"):
        load_task_docs("meta", "dev", "chat", "sample", protocol="toolkit", toolkit_dir="/nope")
    with pytest.raises(ConfigError, match=r"prompts.py not found"):
        load_task_docs("meta", "dev", "chat", "sample", protocol="toolkit", toolkit_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"protocol=paper: unknown protocol"):
        load_task_docs("meta", "dev", "chat", "sample", protocol="paper")


def test_sample_items_render_for_every_dimension_and_format(kit):
    for dimension, fmt in (("feedback", "obj"), ("feedback", "sub"), ("comparison", "obj"), ("comparison", "sub"),
                           ("meta", "obj"), ("correction", "obj"), ("correction", "sub")):
        docs = load_task_docs(dimension, "dev", None, "sample", fmt=fmt, protocol="toolkit", toolkit_dir=str(TOOLKIT))
        assert docs and all(d["prompt"].strip() and d["protocol"] == "toolkit" for d in docs), (dimension, fmt)
    assert Path(kit.root) == TOOLKIT


def test_group_overall_reproduces_the_published_leaderboard():
    """The critic group's overall (mean of the members' scores: (feedback+100)/2, correction, comparison, (meta+100)/2)
    against the published objective leaderboard: most rows to the rounding; the rest are the reward/critique-tuned
    models (scored on feedback and comparison only) and rows copied from another table."""
    import csv

    from critic_tasks import registry
    from critic_tasks.core.metrics import likert_score

    board = SHARED / "data" / "criticeval" / "leaderboard" / "scores_obj.csv"
    if not board.is_file():
        pytest.skip(f"no leaderboard at {board}")
    rows = list(csv.DictReader(board.open(encoding="utf-8")))
    group = registry.GROUPS["critic"]
    matched = 0
    for row in rows:
        scores = {"critic_feedback": likert_score(float(row["feedback"])), "critic_correction": float(row["correction"]),
                  "critic_comparison": float(row["comparison"]), "critic_meta": likert_score(float(row["meta_feedback"]))}
        overall = sum(scores[m] for m in group.members) / len(group.members)
        matched += abs(overall - float(row["overall"])) <= 0.005 + 1e-9
    assert len(rows) == 36 and matched >= 28, (matched, len(rows))


def test_a_checkout_is_read_once_however_it_is_named(tmp_path, monkeypatch):
    """The revision documents carry the resolved path of the checkout the user named (toolkit_dir or the environment
    variable, maybe relative): every spelling of one folder reads its files once. Removed after the first read, the
    files are not needed again; each Toolkit still names the folder as its caller did."""
    if not (TOOLKIT / "inference" / "utils" / "prompts.py").is_file():
        pytest.skip(f"the released toolkit is not at {TOOLKIT}")
    import shutil

    root = tmp_path / "CriticEval"
    shutil.copytree(TOOLKIT / "inference" / "utils", root / "inference" / "utils")
    shutil.copytree(TOOLKIT / toolkit.CORRECTION_JUDGE_FILE.parent, root / toolkit.CORRECTION_JUDGE_FILE.parent)
    first = toolkit.load_toolkit(str(root))
    judges = toolkit.correction_judges(first.root, f"toolkit_dir={root}")
    assert set(toolkit.CORRECTION_JUDGE_DOMAINS) <= set(judges)
    for name in ("prompts.py", "formats.py"):
        (root / "inference" / "utils" / name).unlink()
    (root / toolkit.CORRECTION_JUDGE_FILE).unlink()
    (tmp_path / "link").symlink_to(root)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(toolkit.TOOLKIT_DIR_ENV, "CriticEval")
    for spelling, kit in (("CriticEval", toolkit.load_toolkit(None)), ("CriticEval", toolkit.load_toolkit("CriticEval")),
                          (str(tmp_path / "link"), toolkit.load_toolkit(str(tmp_path / "link"))),
                          (str(root.resolve()), toolkit.load_toolkit(str(root.resolve())))):
        assert kit.root == Path(spelling)
        assert kit.prompts == first.prompts and kit.mappings == first.mappings
        assert toolkit.correction_judges(spelling, f"toolkit_dir={spelling}") == judges
    with pytest.raises(ConfigError, match=re.escape(f"toolkit_dir={tmp_path / 'other'}: not a directory")):
        toolkit.load_toolkit(str(tmp_path / "other"))
