"""The model-calling layer for every role (judge, reviser): settings, cache, backends, ``complete``."""

from critic_tasks.llm.chat import ChatPrompt
from critic_tasks.llm.client import Completion, complete
from critic_tasks.llm.settings import LLMSettings

__all__ = ["ChatPrompt", "Completion", "LLMSettings", "complete"]
