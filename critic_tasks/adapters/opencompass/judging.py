"""Which judge grades the judge-scored datasets under OpenCompass, and how OpenCompass's own judge settings map.

Precedence, first found wins:
1. ``CRITIC_JUDGE_MODEL`` (with the other ``CRITIC_JUDGE_*`` settings): our judge layer's own configuration, the
   same as for lm-eval runs, so one setting serves both harnesses;
2. ``judge_cfg`` on the dataset and its evaluator (OpenCompass's convention, e.g. an ``OpenAISDK`` model config:
   ``path``, ``key``, ``openai_api_base``, ``max_out_len``, ``temperature``), as ``examples/eval_critic.py`` or
   ``configuring.with_judge`` sets it;
3. ``OC_JUDGE_MODEL`` / ``OC_JUDGE_API_BASE`` / ``OC_JUDGE_API_KEY``, OpenCompass's environment variables.
Whichever wins, the calls go through our judge layer: its cache, concurrency, retries and recorded identity.
"""

from __future__ import annotations

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.settings import read_setting
from critic_tasks.llm import LLMSettings
from critic_tasks.protocols.criticbench.judge import judge_settings


def _base_url(value) -> str | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return str(value).rstrip("/") if value else None


def settings_for(judge_cfg: dict | None = None) -> LLMSettings | None:
    """The judge settings for a judge-scored dataset, or None when no judge is configured anywhere."""
    ours = judge_settings()
    if ours.model:
        return ours
    if judge_cfg:
        model = judge_cfg.get("path") or judge_cfg.get("model")
        if not model:
            raise ConfigError("judge_cfg: needs 'path' (the judge model's name), as OpenCompass's OpenAISDK configs")
        overrides = {"backend": "openai", "model": str(model),
                     "base_url": _base_url(judge_cfg.get("openai_api_base") or judge_cfg.get("base_url"))}
        key = judge_cfg.get("key")
        if key and key != "ENV":
            overrides["api_key"] = str(key)
        if judge_cfg.get("max_out_len"):
            overrides["max_tokens"] = int(judge_cfg["max_out_len"])
        return judge_settings(**overrides)
    if read_setting("OC_JUDGE_MODEL"):
        return judge_settings(backend="openai", model=read_setting("OC_JUDGE_MODEL"),
                              base_url=_base_url(read_setting("OC_JUDGE_API_BASE") or None),
                              api_key=read_setting("OC_JUDGE_API_KEY") or None)
    return None


def require_judge(task: str, judge_cfg: dict | None = None) -> LLMSettings:
    settings = settings_for(judge_cfg)
    if settings is None:
        raise ConfigError(f"{task} is judge-scored but no judge is configured: set CRITIC_JUDGE_MODEL (and "
                          "CRITIC_JUDGE_BASE_URL), or OC_JUDGE_MODEL / OC_JUDGE_API_BASE / OC_JUDGE_API_KEY, or give "
                          "the datasets a judge_cfg (see examples/eval_critic.py)")
    return settings
