"""The loader: real layout, local override, one clear error per bad file or field."""

import json

import pytest

from critic_tasks.core.errors import DataError
from critic_tasks.protocols.criticbench import data


def _write(root, rel, items):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(items if isinstance(items, str) else json.dumps(items), encoding="utf-8")
    return path


FEEDBACK_ITEM = {
    "question": "Q?", "generation": "G.", "feedback": "F. Decision: Yes.", "feedback_score": "5",
    "metadata": {"quality": "med", "llm_name": "m"}, "correction": "C.",
}
PAIR_ITEM = {
    "question": "Q?", "obj": {"generation_a": "a", "generation_b": "b", "preference": "Preference: B"},
    "metadata": {"quality_a_sub": "low", "quality_b_sub": "high"},
}


def test_feedback_pools_main_and_correction_part(tmp_path):
    _write(tmp_path, "obj_dev_data/chat_feedback_correction.json", [FEEDBACK_ITEM, FEEDBACK_ITEM])
    _write(tmp_path, "obj_dev_data/correction_part/chat_feedback.json",
           [{**FEEDBACK_ITEM, "feedback_score": 7, "metadata": {"quality": "super-high"}}])
    docs = data.load_feedback("dev", "chat", data_dir=tmp_path)
    assert [d["part"] for d in docs] == ["main", "main", "correction_part"]
    assert [d["feedback_score"] for d in docs] == [5.0, 5.0, 7.0]  # "5" coerced with float(), as the toolkit
    assert docs[2]["quality"] == "super-high"
    assert docs[0]["source_file"].endswith("chat_feedback_correction.json")


SUPER_HIGH = {**FEEDBACK_ITEM, "feedback_score": 7, "metadata": {"quality": "super-high"}}  # a correction_part item


def test_env_var_override(tmp_path, monkeypatch):
    _write(tmp_path, "obj_dev_data/qa_feedback_correction.json", [FEEDBACK_ITEM])
    _write(tmp_path, "obj_dev_data/correction_part/qa_feedback.json", [SUPER_HIGH])
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", str(tmp_path))
    assert len(data.load_feedback("dev", "qa")) == 2


def test_comparison_both_orders_and_gold_last_char(tmp_path):
    _write(tmp_path, "obj_dev_data/chat_comp_feedback.json", [PAIR_ITEM])
    fwd, rev = data.load_comparison("dev", "chat", data_dir=tmp_path)
    assert (fwd["order"], fwd["generation_a"], fwd["generation_b"]) == ("forward", "a", "b")
    assert (rev["order"], rev["generation_a"], rev["generation_b"]) == ("reverse", "b", "a")
    assert fwd["preference"] == rev["preference"] == "B"
    assert fwd["difficulty"] == "easy"


def test_test_split_tolerates_withheld_labels(tmp_path):
    item = {k: v for k, v in FEEDBACK_ITEM.items() if k != "feedback_score"}
    _write(tmp_path, "obj_test_data/chat_feedback_correction.json", [item])
    _write(tmp_path, "obj_test_data/correction_part/chat_feedback.json",
           [{k: v for k, v in SUPER_HIGH.items() if k != "feedback_score"}])
    docs = data.load_feedback("test", "chat", data_dir=tmp_path)
    assert [d["feedback_score"] for d in docs] == [None, None]


@pytest.mark.parametrize(
    "content,message",
    [
        ("[{\"question\": ", "malformed JSON at line 1"),
        ("{\"a\": 1}", "expected a JSON array"),
        ("[1]", "[0]: expected an object"),
        (json.dumps([{k: v for k, v in FEEDBACK_ITEM.items() if k != "generation"}]), "[0]: missing field 'generation'"),
        (json.dumps([{k: v for k, v in FEEDBACK_ITEM.items() if k != "feedback_score"}]),
         "[0]: missing field 'feedback_score'"),
        (json.dumps([{**FEEDBACK_ITEM, "feedback_score": "great"}]), "field 'feedback_score' should be a number"),
        # labels are validated like every other field: not a number, or off the 1-7 scale
        (json.dumps([{**FEEDBACK_ITEM, "feedback_score": "nan"}]),
         "field 'feedback_score' is 'nan'; expected a number from 1 to 7"),
        (json.dumps([{**FEEDBACK_ITEM, "feedback_score": 99}]), "field 'feedback_score' is 99; expected a number from 1 to 7"),
        (json.dumps([{**FEEDBACK_ITEM, "feedback_score": True}]), "field 'feedback_score' should be a number, got True"),
        (json.dumps([{**FEEDBACK_ITEM, "metadata": {"quality": "meh"}}]), "field 'metadata.quality' is 'meh'"),
        (json.dumps([{**FEEDBACK_ITEM, "metadata": {}}]), "missing field 'metadata.quality'"),
    ],
)
def test_bad_files_raise_one_clear_error(tmp_path, content, message):
    path = _write(tmp_path, "obj_dev_data/chat_feedback_correction.json", content)
    _write(tmp_path, "obj_dev_data/correction_part/chat_feedback.json", [SUPER_HIGH])
    with pytest.raises(DataError) as err:
        data.load_feedback("dev", "chat", data_dir=tmp_path)
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize("loader, rel", [
    (lambda root: data.load_comparison("dev", "chat", data_dir=root), "obj_dev_data/chat_comp_feedback.json"),
    (lambda root: data.load_meta("dev", "chat", data_dir=root),
     "obj_dev_data/meta_feedback_single/meta_feedback_singlewise_chat.json"),
    (lambda root: data.load_feedback("dev", "chat", data_dir=root), "obj_dev_data/chat_feedback_correction.json"),
    (lambda root: data.load_feedback("dev", "chat", data_dir=root), "obj_dev_data/correction_part/chat_feedback.json"),
])
def test_an_empty_file_is_an_error_naming_it_not_a_dropped_domain(tmp_path, loader, rel):
    """Before: `[]` loaded as no items, so the domain vanished from the run (and from its averages) without a word."""
    _write(tmp_path, "obj_dev_data/chat_feedback_correction.json", [FEEDBACK_ITEM])
    _write(tmp_path, "obj_dev_data/correction_part/chat_feedback.json", [SUPER_HIGH])
    path = _write(tmp_path, rel, [])
    with pytest.raises(DataError) as err:
        loader(tmp_path)
    assert str(err.value).startswith(f"{path}: an empty list") and "\n" not in str(err.value)


def test_missing_file_and_bad_preference(tmp_path):
    with pytest.raises(DataError, match="chat_comp_feedback.json: file not found"):
        data.load_comparison("dev", "chat", data_dir=tmp_path)
    _write(tmp_path, "obj_dev_data/chat_comp_feedback.json",
           [{**PAIR_ITEM, "obj": {**PAIR_ITEM["obj"], "preference": "D"}}])
    with pytest.raises(DataError, match=r"\[0\]: field 'obj.preference' should end in A, B or C"):
        data.load_comparison("dev", "chat", data_dir=tmp_path)


def test_hub_is_default_and_offline_gives_clear_error(monkeypatch):
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match=r"hf://datasets/opencompass/CriticBench/obj_dev_data/chat_comp_feedback.json.*CRITICBENCH_DATA_DIR"):
        data.load_comparison("dev", "chat")


def test_data_dir_error_names_the_setting_given(monkeypatch):
    monkeypatch.delenv("CRITICBENCH_DATA_DIR", raising=False)
    with pytest.raises(DataError, match=r"^data_dir=/nope: not a directory$"):
        data.load_meta("dev", data_dir="/nope")
    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "/nope")
    with pytest.raises(DataError, match=r"^CRITICBENCH_DATA_DIR=/nope: not a directory$"):
        data.load_meta("dev")


def test_unknown_split_and_domain():
    with pytest.raises(DataError, match="unknown split"):
        data.load_meta("train", data_dir="sample")
    with pytest.raises(ValueError, match="unknown CriticBench domain"):
        data.load_meta("dev", "poetry", data_dir="sample")
