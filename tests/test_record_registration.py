"""A protocol package registers its own record kind (``core.records.register_record``): logged rows of that kind
read back as its class, and a second class under a known kind is refused."""

from dataclasses import dataclass

import pytest

from critic_tasks.core import records
from critic_tasks.protocols.criticbench.scoring import LikertRecord


@dataclass(frozen=True)
class _HandMadeRecord(records.Record):
    kind = "hand_made_for_this_test"
    answer: tuple = ()
    note: str = ""


@pytest.fixture(autouse=True)
def _own_tables(monkeypatch):  # registrations made here stay here
    monkeypatch.setattr(records, "RECORD_TYPES", dict(records.RECORD_TYPES))
    monkeypatch.setattr(records, "_FIELDS", dict(records._FIELDS))


def test_a_registered_kind_reads_back_from_its_logged_row():
    assert records.register_record(_HandMadeRecord) is _HandMadeRecord
    row = {"kind": "hand_made_for_this_test", "domain": "math", "answer": [1, 2], "note": "x", "unknown_field": 3}
    back = records.Record.from_dict(row)
    assert type(back) is _HandMadeRecord and back.answer == (1, 2) and back.note == "x"
    assert records.register_record(_HandMadeRecord) is _HandMadeRecord  # the same class again: no error


def test_a_second_class_under_a_known_kind_is_refused():
    @dataclass(frozen=True)
    class Impostor(records.Record):
        kind = "likert"

    with pytest.raises(RuntimeError, match="record kind 'likert' is registered twice"):
        records.register_record(Impostor)
    assert records.RECORD_TYPES["likert"] is LikertRecord


def test_every_record_kind_lives_in_its_protocol_package():
    """The core declares no protocol's record (issue 35): once the registry is read, each kind a task makes is
    registered, by a class of its protocol package's ``scoring`` module (reply -> record -> metric in one file)."""
    import critic_tasks.registry  # noqa: F401  (imports every protocol, hence their records)

    expected = {"likert", "verdict", "correction", "judged", "feedback_text", "rating", "preference", "aiu",
                "revision", "judgebench", "process_step", "realcritic"}
    assert expected <= set(records.RECORD_TYPES)
    homes = {kind: cls.__module__ for kind, cls in records.RECORD_TYPES.items() if kind in expected}
    assert all(home.startswith("critic_tasks.protocols.") and home.endswith(".scoring") for home in homes.values()), homes
