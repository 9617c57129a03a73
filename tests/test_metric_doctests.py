"""The examples in the metric functions' docstrings (``critic_tasks/core/metrics``, and the two averages beside the
records in ``core/records.py``) run, and hold, in the fast tier."""

import doctest
import importlib
import pkgutil

import pytest

import critic_tasks.core.metrics as metrics

MODULES = sorted(m.name for m in pkgutil.iter_modules(metrics.__path__, metrics.__name__ + ".")) + [
    "critic_tasks.core.records"]


def test_every_metric_module_is_checked():
    assert len(MODULES) >= 8 and "critic_tasks.core.records" in MODULES and "critic_tasks.core.metrics.spearman" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0, f"{name}: no examples in its docstrings"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail (run doctest on it)"
