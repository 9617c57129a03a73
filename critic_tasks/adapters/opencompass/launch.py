"""OpenCompass's own command, with one evaluation process for every dataset: what ``critic-eval opencompass``
runs (``python -m critic_tasks.adapters.opencompass.launch ARGS`` = ``opencompass ARGS`` otherwise).

Where no eval stage is configured (``--datasets`` runs, eval configs without ``eval``), OpenCompass's default
starts one evaluation process per dataset, each paying OpenCompass's imports again (~20 s on 2 CPU cores) to score
a few hundred replies: a run of 8 datasets spends minutes starting processes. Its inference stage already runs the
datasets together in one process (``--max-num-workers`` 1, its default); the evaluation stage then does the same.
``--max-num-workers`` above 1, ``--slurm`` and ``--dlc`` keep OpenCompass's one process per dataset (the processes
then run side by side), as does an eval config's own ``eval``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def one_eval_process(fill_eval_cfg: Callable) -> Callable:
    """OpenCompass's ``fill_eval_cfg(cfg, args)`` (its default eval stage), with every dataset in one task for a
    local run of one worker."""

    def fill(cfg, args) -> None:
        fill_eval_cfg(cfg, args)
        if getattr(args, "slurm", False) or getattr(args, "dlc", False) or (args.max_num_workers or 1) > 1:
            return
        datasets = len(cfg["datasets"])
        cfg["eval"]["partitioner"]["n"] = max(datasets, 1)
        if datasets > 1:
            print(f"critic-eval: one evaluation process for the {datasets} datasets (--max-num-workers N above 1: "
                  "one per dataset, N at a time)", file=sys.stderr)

    return fill


def main() -> int:
    from opencompass.cli import main as opencompass_cli  # only in OpenCompass's environment

    # the CLI calls the name it imported from opencompass.utils.run: replace it there
    opencompass_cli.fill_eval_cfg = one_eval_process(opencompass_cli.fill_eval_cfg)
    sys.argv[0] = "opencompass"
    return opencompass_cli.main()


if __name__ == "__main__":
    sys.exit(main())
