"""OpenCompass summarizer: OpenCompass's own table, then the paper's dimension table and overall.

The dimension table is the one ``critic-eval summary`` prints for an lm-eval run (``reports.tables``), built from
the same metric keys; the overall is the registry's group rule (the unweighted mean of the four dimensions' scores),
computed when all members ran. It is also written beside OpenCompass's own summary files: ``critic_summary_<time>.json``
(every model, and the datasets without results) and ``critic_results_<model>_<time>.json`` per model in lm-eval's
results shape, which ``critic-eval summary``, ``report`` and ``check`` read, with the text-valued metrics
OpenCompass's own parsing leaves out (RewardBench's ``orders``: which orders were asked).

OpenCompass runs each dataset in a process of its own and exits 0 when one fails, leaving a row of dashes. For our
datasets the summarizer says which ones have no results and why (the ``critic-tasks:`` line our code printed in that
task's log, e.g. a missing data directory or judge), and then exits 1, so a CI job sees the failure.
"""

from __future__ import annotations

import json
import os.path as osp
import sys
from datetime import datetime

from opencompass.summarizers import DefaultSummarizer
from opencompass.summarizers.default import model_abbr_from_cfg_used_in_summarizer

from critic_tasks import registry
from critic_tasks.adapters.opencompass.errors import failure_reason
from critic_tasks.adapters.opencompass.spec import group_results, model_summary, run_records


def text_metrics(task: str, result: dict) -> dict[str, str]:
    """A result's text-valued metrics (RewardBench's ``orders``, RewardBench 2's ``ratings``, the sandbox's
    ``isolation``, ...: what lm-eval's results name), which OpenCompass's parsed results leave out (numbers only).
    OpenCompass's eval task writes a value that is no number as a list, one per replica: the one value they agree
    on."""
    text = {m.key for m in registry.task(task).kind_spec.metrics if m.scale == "text"}
    out = {}
    for key, value in result.items():
        values = value if isinstance(value, list) else [value]
        if key in text and values and isinstance(values[0], str) and all(v == values[0] for v in values):
            out[key] = values[0]
    return out


class CriticSummarizer(DefaultSummarizer):

    def __init__(self, config, dataset_abbrs=None, summary_groups=None, prompt_db=None) -> None:
        groups = [{"name": g.name, "subsets": [[m, g.metric] for m in g.members]} for g in registry.GROUPS.values()]
        super().__init__(config, dataset_abbrs=dataset_abbrs, summary_groups=summary_groups or groups,
                         prompt_db=prompt_db)

    def summarize(self, output_path: str = None, time_str: str = datetime.now().strftime("%Y%m%d_%H%M%S")):
        super().summarize(output_path=output_path, time_str=time_str)
        raw, parsed, _, _ = self._pick_up_results()
        tables = {}
        for model in self.model_cfgs:
            abbr = model_abbr_from_cfg_used_in_summarizer(model)
            per_task = {t: {**text_metrics(t, raw.get(abbr, {}).get(t, {})), **m}
                        for t, m in parsed.get(abbr, {}).items() if t in registry.TASKS}
            if not per_task:
                continue
            tables[abbr] = group_results(per_task)
            print(model_summary(abbr, tables[abbr]))
        missing = self._missing(parsed)
        # what the dataset configs cut (test_range) and set (protocol options): recorded, so that
        # `critic-eval report --chance` draws the chance line on the documents the run scored
        records = run_records(self.dataset_cfgs)
        if tables:
            folder = osp.dirname(output_path) if output_path else osp.join(self.work_dir, "summary")
            path = osp.join(folder, f"critic_summary_{time_str}.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump({**tables, "missing": missing, **records}, fh, indent=2, default=str)
            for abbr, results in tables.items():  # one lm-eval-shaped file per model: summary, report, check read it
                groups = {g: results[g] for g in registry.GROUPS if g in results}
                cuts = {"test_range": records["test_range"]} if "test_range" in records else {}
                with open(osp.join(folder, f"critic_results_{abbr}_{time_str}.json"), "w", encoding="utf-8") as fh:
                    json.dump({"results": results, "groups": groups,
                               "config": {"model": abbr, "harness": "opencompass", **cuts},
                               **({"configs": records["configs"]} if "configs" in records else {})},
                              fh, indent=2, default=str)
        for model, datasets in missing.items():
            for abbr, why in datasets.items():
                print(f"critic-tasks: {model}/{abbr}: no results: {why}", file=sys.stderr)
        if missing:
            raise SystemExit(1)

    def _missing(self, parsed: dict) -> dict[str, dict[str, str]]:
        """Our datasets without results, per model, each with the reason found in its task logs."""
        ours = [d["abbr"] for d in self.dataset_cfgs if d.get("task") in registry.TASKS]
        out: dict[str, dict[str, str]] = {}
        for model in self.model_abbrs:
            for abbr in ours:
                if parsed.get(model, {}).get(abbr):
                    continue
                out.setdefault(model, {})[abbr] = self._reason(model, abbr)
        return out

    def _reason(self, model: str, abbr: str) -> str:
        return failure_reason(self.work_dir, model, abbr)
