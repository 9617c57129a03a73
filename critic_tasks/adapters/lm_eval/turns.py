"""The second turn of a protocol that asks again (JudgeBench's Arena-Hard judge: a reply without a verdict is sent
"continue your judgment ..." with the conversation so far), run by ``critic-eval`` as a second pass through the
same lm-eval model.

While lm-eval's ``evaluate`` runs (``private.around_evaluate``), the model's ``generate_until`` is wrapped: after the
first pass, each reply whose protocol names a follow-up for it (``registry.Protocol.follow_up``: the document and
the reply -> the next user message, or None) is asked again, all of them in one more call of the same
``generate_until`` (so the request cache keeps them, and a killed run resumes with them), and the reply lm-eval
scores becomes both turns joined as the protocol's authors join them (``Protocol.join_turns``), a
``core.turns.Turns`` that keeps each turn. The second request is the conversation so far:

* with ``--apply_chat_template``: the model's own ``apply_chat_template`` over the system message (the document's
  ``system_message``, after ``--system_instruction`` as lm-eval joins them), the prompt, the first reply as the
  assistant's turn and the follow-up as the user's;
* without: the first request's text, the first reply, then the follow-up, each after a blank line.

Under plain ``lm_eval`` nothing of this runs: the records say which replies would have been asked again
(JudgeBench's ``second_turns_missing``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging

from critic_tasks import registry
from critic_tasks.adapters.lm_eval import private
from critic_tasks.core.turns import Turns

log = logging.getLogger("critic_tasks")


def _protocol(request) -> registry.Protocol | None:
    task = registry.TASKS.get(getattr(request, "task_name", None) or "")
    protocol = task.kind_spec.protocol_spec if task is not None else None
    return protocol if protocol is not None and protocol.follow_up is not None else None


def second_context(lm, request, reply: str, follow_up: str, chat: bool, system_instruction: str | None) -> str:
    """The request text of the conversation so far plus ``follow_up`` (see the module's docstring)."""
    context = request.args[0]
    if not chat:
        return f"{context}{reply}\n\n{follow_up}\n\n"
    doc = request.doc
    system = private.system_prompt(system_instruction, doc.get("system_message") or "")
    steps = _protocol(request)
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": steps.prompt(doc)}, {"role": "assistant", "content": reply},
        {"role": "user", "content": follow_up}]
    return lm.apply_chat_template(messages)


def asking_again(lm, generate_until, chat: bool, system_instruction: str | None):
    """``generate_until`` with the second pass after it."""

    def generate(requests, *args, **kwargs):
        requests = list(requests)
        replies = list(generate_until(requests, *args, **kwargs))
        again = []
        for i, (request, reply) in enumerate(zip(requests, replies)):
            steps = _protocol(request)
            follow_up = steps.follow_up(request.doc, reply) if steps is not None and isinstance(reply, str) else None
            if follow_up:
                context = second_context(lm, request, reply, follow_up, chat, system_instruction)
                again.append((i, dataclasses.replace(request, arguments=(context, *request.args[1:]), resps=[],
                                                     filtered_resps={})))
        if again:
            log.info("critic_tasks: %d repl(ies) without an answer asked again (the protocol's second turn)",
                     len(again))
            seconds = generate_until([r for _, r in again], *args, **kwargs)
            for (i, request), second in zip(again, seconds):
                first = replies[i]
                replies[i] = Turns(_protocol(request).join_turns((first, second)), (first, second))
        return replies

    generate._critic_second_turn = True
    return generate


@contextlib.contextmanager
def second_turns(lm, evaluate_kwargs: dict):
    """While ``evaluate`` runs on ``lm``: its ``generate_until`` asks again where a protocol says so."""
    if not any(p.follow_up is not None for p in registry.PROTOCOLS.values()):
        yield
        return
    original = lm.generate_until
    if getattr(original, "_critic_second_turn", False):
        yield
        return
    own = vars(lm).get("generate_until")  # an attribute of the instance itself, if it had one
    chat = bool(evaluate_kwargs.get("apply_chat_template"))
    lm.generate_until = asking_again(lm, original, chat, evaluate_kwargs.get("system_instruction"))
    try:
        yield
    finally:
        if own is not None:
            lm.generate_until = own
        else:  # the class's method (or CachingLM's) again
            del lm.generate_until
