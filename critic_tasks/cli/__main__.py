"""``python -m critic_tasks.cli`` = ``critic-eval``."""

import sys

from critic_tasks.cli import main

sys.exit(main())
