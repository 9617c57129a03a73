"""CRITIC_EXECUTOR is read in one place: ``get_executor()`` without a name builds the executor it names, so a check
that falls back to ``get_executor()`` (a correction check, the revision pipeline) runs what the preflight, the lm-eval
filter, OpenCompass's evaluator and the CLI run (issue 35: the setting was read in five places, and the fallback
always built the sandbox whatever the setting said)."""

from pathlib import Path

import pytest

from critic_tasks.core.errors import ConfigError
from critic_tasks.protocols.criticbench.correction import check_corrections
from critic_tasks.sandbox import get_executor


def test_get_executor_without_a_name_builds_the_one_the_setting_names(monkeypatch):
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    with pytest.raises(ConfigError, match=r"no code executor named 'no-such-runner' \(CRITIC_EXECUTOR\)"):
        get_executor()


def test_a_name_given_wins_over_the_setting(monkeypatch):
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    with pytest.raises(ConfigError, match="'other-runner'"):
        get_executor("other-runner")


def test_a_correction_check_without_an_executor_runs_the_one_the_setting_names(monkeypatch):
    """A math_pot revision runs a program: with no executor handed, the check builds CRITIC_EXECUTOR's (here one
    that does not exist: the one-line error names it), never the sandbox behind the setting's back."""
    monkeypatch.setenv("CRITIC_EXECUTOR", "no-such-runner")
    item = {"domain": "math_pot", "ground_truth_answer": "4", "question": "2 + 2?"}
    with pytest.raises(ConfigError, match="no-such-runner"):
        check_corrections("math_pot", ["```python\nprint(2 + 2)\n```"], [item])


def test_each_task_scores_with_the_executor_checked_while_lm_eval_built_it(monkeypatch):
    """Issue 45: lm-eval builds a task (our loader checks the settings: the executor is built then, so a bad sandbox
    stops the run before any generation) and, after generation, calls the filter's factory again
    (``FilterEnsemble.apply``): the ScoreFilter built a second executor and the checked one was thrown away. Two
    correction tasks through lm-eval's own task build and filter step: two executors built in all, each task's
    programs run by the one checked at its build."""
    from lm_eval.api.instance import Instance
    from lm_eval.tasks import TaskManager

    from critic_tasks.adapters.lm_eval import task_functions
    from critic_tasks.hookspecs import hookimpl, plugin_manager
    from critic_tasks.sandbox import SandboxExecutor

    built = []

    class Counted(SandboxExecutor):
        def __init__(self, **options):
            super().__init__(**options)
            self.programs = 0
            built.append(self)

        def run(self, programs):
            self.programs += len(programs)
            return super().run(programs)

        def run_pairs(self, pairs):
            self.programs += len(pairs)
            return super().run_pairs(pairs)

    class Plugin:
        @hookimpl
        def critic_executor(self, name, options):
            return Counted(**options) if name == "counted" else None

    monkeypatch.setenv("CRITICBENCH_DATA_DIR", "sample")
    monkeypatch.setenv("CRITIC_EXECUTOR", "counted")
    names = ["critic_correction_code_not_exec", "critic_correction_math_pot"]
    pm = plugin_manager()
    pm.register(Plugin(), name="tests.counted")
    try:
        tasks_dir = Path(task_functions.__file__).parent / "tasks"
        tasks = TaskManager(include_path=str(tasks_dir), include_defaults=False).load(names)["tasks"]
        assert len(built) == 2  # one checked per task while lm-eval built it
        checked = list(built)
        for name, executor in zip(names, checked):
            docs = list(tasks[name].eval_docs)[:2]
            reply = "Revised:\n```python\nprint(1)\n```"
            instances = [Instance("generate_until", doc, ("", {}), 0, resps=[reply]) for doc in docs]
            tasks[name]._filters[0].apply(instances)  # lm-eval's filter step: the factory called again
            assert executor.programs > 0 and all(e.programs == 0 for e in checked if e is not executor), name
            executor.programs = 0
        assert built == checked  # no executor built after the task build
    finally:
        pm.unregister(name="tests.counted")
