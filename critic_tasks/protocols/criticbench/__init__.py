"""CriticBench / CriticEval (Lan et al. 2024, arXiv:2402.13764): feedback, comparison, meta-feedback, correction.

load (``data``) -> prompt (``prompts``, ``judge_prompts``) -> parse and record (``scoring``, ``correction``,
``judge``) -> metrics (``scoring.FAMILIES``). The domain table (``prompts.DOMAINS``) decides every per-domain behaviour.

Cite as::

    @article{lan2024criticeval,
      title={CriticEval: Evaluating Large Language Model as Critic},
      author={Lan, Tian and Zhang, Wenwei and Xu, Chen and Huang, Heyan and Lin, Dahua and Chen, Kai and Mao, Xian-ling},
      journal={arXiv preprint arXiv:2402.13764},
      year={2024}
    }
"""
