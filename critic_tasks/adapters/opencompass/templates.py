"""The prompt OpenCompass sends for our datasets: the document's prompt, verbatim, as one user message.

lm-eval sends ``doc_to_text(doc)`` as the only chat message (no system message, nothing appended). OpenCompass's
``PromptTemplate`` with a ``round`` of one ``HUMAN`` turn does not: a chat model's default meta template maps its
empty ``SYSTEM`` role to the user too, and the two user turns are joined with ``"\\n"``, so the user message gained
a trailing newline (and the text went through ``str.replace`` of every ``{column}``). This template returns the
``prompt`` column as a plain string, which every model class sends as is: ``HuggingFacewithChatTemplate`` and
``VLLMwithChatTemplate`` turn a string into ``[{"role": "user", "content": text}]`` and apply the tokenizer's chat
template; ``OpenAISDK`` sends the same single user message; base models get the text itself (as lm-eval without
``--apply_chat_template``). A model's ``meta_template`` is therefore not applied to our datasets.
"""

from __future__ import annotations

from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.registry import ICL_PROMPT_TEMPLATES


@ICL_PROMPT_TEMPLATES.register_module()
class CriticPromptTemplate(PromptTemplate):

    def __init__(self, column: str = "prompt") -> None:
        super().__init__(template="{" + column + "}")
        self.column = column

    def generate_item(self, entry, output_field=None, output_field_replace_token="", ice_field_replace_token=""):
        return entry[self.column]
