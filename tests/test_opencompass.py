"""The OpenCompass adapter: its generated config tree, and (where OpenCompass is installed) real runs."""

from critic_tasks.adapters.opencompass import CONFIG_DIR
from critic_tasks.adapters.opencompass import generate as _generate_configs


def test_generated_config_tree_in_sync_with_generator():
    files = _generate_configs.render()
    on_disk = {p.relative_to(CONFIG_DIR).as_posix(): p.read_text(encoding="utf-8") for p in CONFIG_DIR.rglob("*.py")}
    assert on_disk == files, "run: python -m critic_tasks.adapters.opencompass.generate"
    assert "datasets/critic_feedback_gen.py" in files and "summarizers/critic.py" in files
