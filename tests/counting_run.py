"""``critic-eval`` in a subprocess, with lm-eval's HF model counted (for tests/test_resume.py).

CRITIC_TEST_CALLS: a file that gets one line per request the HF model is asked to generate (its prompt's first
characters), written as generation starts; CRITIC_TEST_PROGRESS: a file that gets a line each time the model finishes
a ``generate`` call (so a test knows generation is under way before it interrupts the run). With
CRITIC_TEST_HOLD set, the model stops before its second ``generate`` call (the first reply is then in the request
cache), writes "holding" and waits there for the test's SIGINT: interrupted mid-generation however fast or loaded the machine is.
"""

import os
import sys
import time

from lm_eval.models import huggingface

_generate_until = huggingface.HFLM.generate_until
_model_generate = huggingface.HFLM._model_generate


def generate_until(self, requests, disable_tqdm=False):
    with open(os.environ["CRITIC_TEST_CALLS"], "a") as out:
        out.writelines(f"{len(r.args[0])}\n" for r in requests)
    return _generate_until(self, requests, disable_tqdm)


def model_generate(self, *args, **kwargs):
    progress = os.environ["CRITIC_TEST_PROGRESS"]
    if os.environ.get("CRITIC_TEST_HOLD") and os.path.exists(progress):
        with open(progress, "a") as log:  # a reply is generated and cached, the next is not: the test interrupts now
            log.write("holding\n")
        time.sleep(900)
    out = _model_generate(self, *args, **kwargs)
    with open(os.environ["CRITIC_TEST_PROGRESS"], "a") as log:
        log.write("generated\n")
    return out


huggingface.HFLM.generate_until = generate_until
huggingface.HFLM._model_generate = model_generate

from critic_tasks.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
