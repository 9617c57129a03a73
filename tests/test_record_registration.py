"""A protocol package registers its own record kind (``core.records.register_record``): logged rows of that kind
read back as its class, and a second class under a known kind is refused."""

from dataclasses import dataclass

import pytest

from critic_tasks.core import records


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
    assert records.RECORD_TYPES["likert"] is not Impostor
