"""The programs a code correction runs inside the sandbox, read as text by ``programs.py`` and pasted into each
pair's two sides: ``wire.py`` (the two sides' message format), ``candidate_side.py`` (the model's program, run
untrusted), ``tester_side.py`` (the unit test, which decides the verdict), ``prelude.py`` (the imports the
authors' programs expect)."""
