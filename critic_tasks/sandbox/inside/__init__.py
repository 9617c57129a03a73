"""The programs that run inside the sandbox, not in the harness: ``boot.py`` (each sandbox's first code: the seccomp
filter, the limits, then the program), ``zygote.py`` with ``tree.py`` (a pre-started sandbox that forks one fresh
process per item). The executor reads them as text and pastes them into what it starts; ``tree.py``'s helpers are
the one part the harness imports too (emptying a folder the same way on both sides)."""
