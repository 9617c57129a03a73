"""The prompt OpenCompass sends for our datasets: the document's prompt, verbatim, as one user message.

lm-eval sends ``doc_to_text(doc)`` as the only chat message (no system message, nothing appended). OpenCompass's
``PromptTemplate`` with a ``round`` of one ``HUMAN`` turn does not: a chat model's default meta template maps its
empty ``SYSTEM`` role to the user too, and the two user turns are joined with ``"\\n"``, so the user message gained
a trailing newline (and the text went through ``str.replace`` of every ``{column}``). This template returns the
``prompt`` column as a plain string, which every model class sends as is: ``HuggingFacewithChatTemplate`` and
``VLLMwithChatTemplate`` turn a string into ``[{"role": "user", "content": text}]`` and apply the tokenizer's chat
template; ``OpenAISDK`` sends the same single user message; base models get the text itself (as lm-eval without
``--apply_chat_template``). A model's ``meta_template`` is therefore not applied to our datasets.

A dataset whose protocol has system messages (JudgeBench's authors' judge; ``system_column``) sends a row with one
as OpenCompass's dialogue of a ``SYSTEM`` turn (its ``begin`` section, falling back to ``HUMAN``) and a ``HUMAN``
turn. OpenCompass maps the SYSTEM role by the model's meta template: a model config declaring it
(``meta_template=dict(round=[dict(role='HUMAN', api_role='HUMAN'), dict(role='BOT', api_role='BOT', generate=True)],
reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')])``) sends lm-eval's system and user messages byte for byte;
OpenCompass's default chat meta template maps every SYSTEM turn to the user's on purpose, so the model gets one user
message, the system message and the prompt joined by newlines (docs/opencompass.md).
"""

from __future__ import annotations

from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.registry import ICL_PROMPT_TEMPLATES
from opencompass.utils.prompt import PromptList


@ICL_PROMPT_TEMPLATES.register_module()
class CriticPromptTemplate(PromptTemplate):

    def __init__(self, column: str = "prompt", system_column: str | None = None) -> None:
        super().__init__(template="{" + column + "}")
        self.column, self.system_column = column, system_column

    def generate_item(self, entry, output_field=None, output_field_replace_token="", ice_field_replace_token=""):
        system = entry.get(self.system_column) if self.system_column else None
        return dialogue(system, entry[self.column]) if system else entry[self.column]


def dialogue(system: str, prompt: str, earlier: tuple[tuple[str, str], ...] = ()) -> PromptList:
    """OpenCompass's dialogue of a system message ("" for none), the prompt, then for each earlier exchange the
    model's reply and the next user message (a second turn), ending where the model answers."""
    begin = ([{"section": "begin", "pos": "begin"}, {"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": system},
              {"section": "begin", "pos": "end"}] if system else [])
    turns = [{"role": "HUMAN", "prompt": prompt}]
    for reply, follow_up in earlier:
        turns += [{"role": "BOT", "prompt": reply}, {"role": "HUMAN", "prompt": follow_up}]
    return PromptList([*begin, {"section": "round", "pos": "begin"}, *turns, {"role": "BOT", "prompt": ""},
                       {"section": "round", "pos": "end"}])
