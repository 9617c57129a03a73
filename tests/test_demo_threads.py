"""The demo's CPU threads: the cores the load leaves free (PyTorch's one thread per core spins when the cores are
busy), unless the user set OMP_NUM_THREADS / MKL_NUM_THREADS."""

from __future__ import annotations

import sys
import types

import pytest

from critic_tasks.adapters.lm_eval import demo


@pytest.mark.parametrize(("cores", "load", "threads"), [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.4, 1), (2, 4.0, 1), (2, 11.0, 1), (16, 3.2, 13), (1, 0.0, 1),
])
def test_threads_are_the_cores_the_load_leaves_free(cores, load, threads):
    assert demo.idle_cores(cores, load) == threads


@pytest.fixture
def recorded_threads(monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(set_num_threads=calls.append))
    monkeypatch.setattr(demo.os, "getloadavg", lambda: (4.0, 4.0, 4.0))
    monkeypatch.setattr(demo.os, "sched_getaffinity", lambda pid: {0, 1})
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_a_loaded_machine_gets_one_thread(recorded_threads):
    demo._set_demo_threads()
    assert recorded_threads == [1]


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_the_users_thread_setting_stands(recorded_threads, monkeypatch, name):
    monkeypatch.setenv(name, "2")
    demo._set_demo_threads()
    assert recorded_threads == []
