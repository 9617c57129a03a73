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
