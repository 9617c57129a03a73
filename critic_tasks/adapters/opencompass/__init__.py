"""The OpenCompass adapter: datasets, evaluators, a summarizer and a config tree, all read from the registry.

Importing this package does not import OpenCompass (``critic-eval opencompass-config-dir`` runs in any
environment); the classes live in ``datasets``, ``evaluators`` and ``summarizer``, which OpenCompass configs import;
``spec`` describes the configs without them.
"""

from pathlib import Path

CONFIG_DIR = Path(__file__).parent / "configs"  # what `opencompass --config-dir` reads
