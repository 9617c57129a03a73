"""``critic-eval`` as one rank of a data-parallel lm-eval run on CPU (for tests/test_ranks.py).

Run it under ``python -m torch.distributed.run --nproc_per_node N`` (torchrun) with ``ACCELERATE_USE_CPU=1``, or
alone (one process). lm-eval's ``hf`` model shards the documents over ranks only when it sees more than one GPU: on
CPU every process of a multi-process launch reports rank 0 of 1 and does all the work. The ``hf-ranks`` model
registered here is lm-eval's ``hf`` model, with the rank and world size taken from the process group that
``accelerate`` opened (gloo, on CPU); everything else (``all_gather``, ``gather_object``, ``barrier``) is lm-eval's
own code, which then runs as it does on several GPUs.

CRITIC_TEST_EXEC_LOG: with ``CRITIC_EXECUTOR=counting``, a file that gets one JSON line per program (or wired
pair) the sandbox runs: the rank and pid that ran it and a hash of the model-written side. The ``counting`` executor
is the ordinary sandbox executor (same isolation, same limits), which also writes that line.
"""

import hashlib
import json
import os
import sys

from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM

from critic_tasks.hookspecs import hookimpl, plugin_manager
from critic_tasks.sandbox import SandboxExecutor


@register_model("hf-ranks")
class RankedHFLM(HFLM):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        accelerator = getattr(self, "accelerator", None)
        if accelerator is not None and accelerator.num_processes > 1 and self._world_size == 1:
            self._rank, self._world_size = accelerator.process_index, accelerator.num_processes


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


class CountingSandbox(SandboxExecutor):
    def _log(self, sources) -> None:
        with open(os.environ["CRITIC_TEST_EXEC_LOG"], "a") as out:
            out.writelines(json.dumps({"rank": _rank(), "pid": os.getpid(),
                                       "program": hashlib.sha256(s.encode()).hexdigest()}) + "\n" for s in sources)

    def run(self, programs):
        results = super().run(programs)
        self._log(p.source for p in programs)
        return results

    def run_pairs(self, pairs):
        results = super().run_pairs(pairs)
        self._log(p.untrusted for p in pairs)
        return results


class CountingPlugin:
    @hookimpl
    def critic_executor(self, name: str, options: dict):
        return CountingSandbox(**options) if name == "counting" else None


plugin_manager().register(CountingPlugin(), name="tests.ranks_run")

from critic_tasks.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
