"""lm-eval's private API is used in one module, for one release: on any other lm-eval these fail, loudly, before a
run can go wrong quietly (critic_tasks/adapters/lm_eval/private.py says what each hook is for)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import critic_tasks

REPO = Path(__file__).resolve().parent.parent
PACKAGE = Path(critic_tasks.__file__).parent


def test_the_installed_lm_eval_is_the_one_release_pinned_and_supported():
    import lm_eval

    from critic_tasks.adapters.lm_eval.private import SUPPORTED

    assert lm_eval.__version__ == SUPPORTED, (
        f"lm-eval {lm_eval.__version__} is installed; critic_tasks/adapters/lm_eval/private.py is written against "
        f"{SUPPORTED}: check each of its hooks against the new source, then move SUPPORTED and the pin together")
    pins = re.findall(r'"lm-eval(?:\[\w+\])?([^"]*)"', (REPO / "pyproject.toml").read_text())
    assert pins and set(pins) == {f"=={SUPPORTED}"}, pins  # the package, hf, vllm and api extras alike


def test_the_private_names_each_hook_relies_on_are_there():
    import lm_eval.__main__
    import lm_eval.api.task
    import lm_eval.evaluator
    from lm_eval._cli.harness import HarnessCLI
    from lm_eval.models.api_models import TemplateAPI
    from lm_eval.tasks import TaskManager

    # the task index: looked up through _entry, held in _index and the _all_* lists that __init__ fills
    assert list(inspect.signature(TaskManager._entry).parameters) == ["self", "name"]
    init = inspect.getsource(TaskManager.__init__)
    for name in ("self._index =", "self._all_tasks =", "self._all_subtasks =", "self._all_groups =",
                 "self._all_tags ="):
        assert name in init, name
    assert "self._entry(" in inspect.getsource(TaskManager._load_spec)
    # the CLI: reads sys.argv (parse_args takes nothing), and builds its TaskManager from lm_eval.tasks' name
    assert list(inspect.signature(HarnessCLI.parse_args).parameters) == ["self"]
    assert "HarnessCLI()" in inspect.getsource(lm_eval.__main__.cli_evaluate)
    from lm_eval.config.evaluate_config import EvaluatorConfig

    assert "from lm_eval.tasks import TaskManager" in inspect.getsource(EvaluatorConfig.process_tasks)
    # distinct seeds: generate_until(requests, disable_tqdm), the model's seed in _seed
    assert list(inspect.signature(TemplateAPI.generate_until).parameters)[:3] == ["self", "requests", "disable_tqdm"]
    assert "self._seed = " in inspect.getsource(TemplateAPI.__init__)
    # quiet output: the module-level names the evaluator and the task call
    assert callable(lm_eval.evaluator.get_git_commit_hash) and "get_git_commit_hash()" in inspect.getsource(
        lm_eval.evaluator.simple_evaluate)
    assert "tqdm(" in inspect.getsource(lm_eval.api.task.Task.build_all_requests)
    # whole pairs: evaluate sizes each task through the module-level get_sample_size
    assert "get_sample_size(task, limit_arg)" in inspect.getsource(lm_eval.evaluator.evaluate)
    # the run's model arguments and tasks: simple_evaluate's own locals, its frame named as its code is; the CLI
    # merges model_args into the metadata, and --metadata is read by MergeDictAction with key_val_to_dict
    simple_evaluate = inspect.unwrap(lm_eval.evaluator.simple_evaluate)
    assert simple_evaluate.__code__.co_name == "simple_evaluate" and simple_evaluate.__module__ == "lm_eval.evaluator"
    assert list(inspect.signature(simple_evaluate).parameters)[:3] == ["model", "model_args", "tasks"]
    assert "self.model_args | self.metadata" in inspect.getsource(EvaluatorConfig)
    from lm_eval._cli.utils import MergeDictAction

    assert "key_val_to_dict(v)" in inspect.getsource(MergeDictAction.__call__)
    assert "**(self.config.metadata or {}), **(self.config.dataset_kwargs or {})" in inspect.getsource(
        lm_eval.api.task.ConfigurableTask.download)


def test_no_other_module_reaches_into_lm_eval_privately():
    """The done-check of issue 30: lm-eval's private names appear only in private.py."""
    pattern = re.compile(r"\b_entry\b|\._index\b|\b_index_everything\b|sys\.argv\s*=|TemplateAPI\.generate_until\s*="
                         r"|lm_eval\.tasks\.TaskManager\s*=|get_git_commit_hash\s*=|\b_format_type\b|\b_indices\b")
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50 and (PACKAGE / "adapters" / "lm_eval" / "runner.py") in files
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in files if path.name != "private.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


@pytest.mark.parametrize(("requests", "seeds"), [
    # three repeats of one sampled request: the model's seed, then seed + 1, seed + 2
    ([("ctx", {"do_sample": True})] * 3, [None, 8, 9]),
    # greedy, or naming its own seed: untouched
    ([("ctx", {"do_sample": False})] * 2, [None, None]),
    ([("ctx", {"temperature": 0.7, "seed": 3})] * 2, [3, 3]),
    # two sampled requests interleaved: each counts its own repeats
    ([("a", {"temperature": 0.8}), ("b", {"temperature": 0.8}), ("a", {"temperature": 0.8})], [None, None, 8]),
])
def test_repeats_of_a_sampled_request_ask_with_distinct_seeds(requests, seeds):
    from lm_eval.api.instance import Instance

    from critic_tasks.adapters.lm_eval.private import distinct_seeds

    reqs = [Instance(request_type="generate_until", doc={}, arguments=(c, dict(g)), idx=0) for c, g in requests]
    out = distinct_seeds(reqs, 7)
    assert [r.args[1].get("seed") for r in out] == seeds
    assert [r.args[0] for r in out] == [c for c, _ in requests]
