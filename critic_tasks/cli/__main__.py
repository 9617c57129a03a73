"""``python -m critic_tasks.cli`` = ``critic-eval``."""

import sys

from critic_tasks.cli import main

if __name__ == "__main__":
    sys.exit(main())
