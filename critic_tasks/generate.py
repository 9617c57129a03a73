"""Regenerate every generated file from the registry: run after editing ``registry.py`` (tests fail while any is stale).

    python -m critic_tasks.generate

The lm-eval task YAML files and their ``tasks/utils.py`` (``adapters/lm_eval/generate.py``), and the OpenCompass
config tree (``adapters/opencompass/generate.py``). Both generators only write text: neither harness is imported.
"""

from __future__ import annotations

from critic_tasks.adapters.lm_eval import generate as lm_eval_files
from critic_tasks.adapters.opencompass import generate as opencompass_files


def main() -> None:
    lm_eval_files.main()
    opencompass_files.main()


if __name__ == "__main__":
    main()
