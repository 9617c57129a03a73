import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PREDICTIONS = SHARED / "data" / "criticeval" / "example-predictions" / "deepseek-67b-chat-hf"


@pytest.fixture
def predictions_dir():
    if not PREDICTIONS.is_dir():
        pytest.skip(f"shared data not found at {PREDICTIONS}")
    return PREDICTIONS
