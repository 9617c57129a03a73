"""A prompt in two parts, the way some papers print them: a system part (the instructions) and a user part (the
inputs). RCO's judges (Yu et al. 2025, Tables 28-32, 38-42) are printed as ``[SYSTEM]`` / ``[USER]``.

``ChatPrompt`` is a ``str`` (the two parts joined by a blank line), so every caller, cache and third-party backend
that takes plain text keeps working and sees all of it; the built-in backends read ``messages(prompt)`` and send
the system part as a system message where the model takes one (an OpenAI-compatible server; a chat template that
accepts a system turn), else the joined text as one user message."""

from __future__ import annotations


class ChatPrompt(str):
    """``system`` and ``user``; as a str, ``system + "\\n\\n" + user``."""

    system: str
    user: str

    def __new__(cls, system: str, user: str) -> "ChatPrompt":
        obj = super().__new__(cls, f"{system}\n\n{user}")
        obj.system, obj.user = system, user
        return obj

    def __reduce__(self):  # pickles (a process pool, a spawn worker) keep both parts
        return ChatPrompt, (self.system, self.user)


def messages(prompt: str) -> list[dict]:
    """The chat messages of a prompt: system + user for a ``ChatPrompt``, one user message otherwise."""
    if isinstance(prompt, ChatPrompt) and prompt.system:
        return [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}]
    return [{"role": "user", "content": str(prompt)}]


def single_message(prompt: str) -> list[dict]:
    """The whole prompt as one user message: for a chat template that refuses a system turn (Gemma's, say)."""
    return [{"role": "user", "content": str(prompt)}]


def key_text(prompt: str) -> str:
    """What the reply cache keys a prompt by: its text, and for a ``ChatPrompt`` which part is which (the same
    words sent as one message or as system + user are different requests). A plain prompt keys as before."""
    if isinstance(prompt, ChatPrompt) and prompt.system:
        return f"\x00system\x00{prompt.system}\x00user\x00{prompt.user}"
    return str(prompt)


def render(tokenizer, prompt: str) -> str:
    """The prompt through a tokenizer's chat template: system + user where the template takes a system turn, else
    the whole text as one user message (a template that refuses one raises; that is the only fallback)."""
    if isinstance(prompt, ChatPrompt) and prompt.system:
        try:
            return tokenizer.apply_chat_template(messages(prompt), tokenize=False, add_generation_prompt=True)
        except Exception:  # jinja's TemplateError: "System role not supported"
            pass
    return tokenizer.apply_chat_template(single_message(prompt), tokenize=False, add_generation_prompt=True)
