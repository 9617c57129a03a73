"""The commands that read a run's saved samples (judge, revise, rescore) tell a path that does not exist from a run
that kept no samples: a typo in the path is not fixed by rerunning with --log_samples."""

import pytest

from critic_tasks import cli


@pytest.mark.parametrize("command", [["judge", "--model", "m"], ["revise"], ["rescore"]])
def test_a_missing_path_is_said_to_be_missing(command, capsys, tmp_path):
    missing = tmp_path / "no-such-run"
    assert cli.main([command[0], str(missing), *command[1:]]) == 2
    assert capsys.readouterr().err.strip() == f"critic-eval: {missing}: no such file or directory"


@pytest.mark.parametrize("command", [["judge", "--model", "m"], ["revise"]])
def test_a_folder_without_samples_still_names_log_samples(command, capsys, tmp_path):
    assert cli.main([command[0], str(tmp_path), *command[1:]]) == 2
    assert capsys.readouterr().err.strip() == (f"critic-eval: {tmp_path}: no lm-eval samples files found (run lm-eval "
                                               "with --log_samples --output_path)")


def test_the_per_round_lines_name_each_rounds_results_file(tmp_path, capsys):
    """A multi-round run's output folder holds every round (and `check` refuses a folder of several runs): each
    round's line names the results file to give `summary`, `check` or `compare`."""
    import json

    from critic_tasks.adapters.lm_eval.stages import rounds_summary

    runs, files = [], []
    for round_no, accuracy in ((1, 50.0), (2, 0.0)):
        folder = tmp_path / f"round_{round_no}"
        (folder / "model").mkdir(parents=True)
        results = folder / "model" / "results_2026-01-01T00-00-00.json"
        results.write_text(json.dumps({"results": {"critic_realcritic_self_gsm8k": {"accuracy,none": accuracy}}}))
        files.append(results)
        runs.append(["--tasks", "critic_realcritic_self_gsm8k", "--metadata", f"round={round_no}",
                     "--output_path", str(folder)])
    assert rounds_summary(runs) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1:] == [f"  round 1: critic_realcritic_self_gsm8k accuracy 50.0 ({files[0]})",
                         f"  round 2: critic_realcritic_self_gsm8k accuracy 0.0 ({files[1]})"]
