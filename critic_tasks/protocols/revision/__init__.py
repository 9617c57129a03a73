"""The critique -> revision pipeline, and the two protocols that judge a critique by its revisions.

A critic writes feedback on an initial response; one or more revisers ("actors") revise the response given that
feedback; each revision is checked by answer / execution where the item has a gold answer or a test, and by a judge
elsewhere. ``data`` (items: CriticBench's initial responses, or a user JSONL), ``prompts`` (critic, reviser, judge),
``pipeline`` (revise -> check / judge, every call through ``critic_tasks.llm.complete``), ``scoring`` (the
``multicritique`` and ``rco`` metric families).

* MultiCritique (Lan et al. 2024b, arXiv:2410.15287): a pool of revisers; ``r_obj`` / ``r_sub``.
* RCO critique utility (Yu et al. 2025, arXiv:2506.22157): revised vs initial, judged in both orders.
"""
