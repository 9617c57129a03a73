"""lm-eval's document list (``adapters/lm_eval/task_functions.Docs``): a field mixing types across documents stops the run
with one line naming the file, the items and the field, the check running only when Arrow refuses the table."""

import pytest

from critic_tasks.core.errors import DataError


@pytest.mark.parametrize("values, kinds", [((7, "a7"), "str but number"), ((True, 1), "number but bool"),
                                           ((["x"], "x"), "str but list of str")])
def test_a_field_mixing_types_is_one_line_naming_file_items_and_field(values, kinds):
    from critic_tasks.adapters.lm_eval.task_functions import Docs

    docs = [{"source_file": "data/x.json", "item_index": i, "id": v} for i, v in enumerate(values)]
    with pytest.raises(DataError) as err:
        Docs.from_list(docs)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("data/x.json[1]: field 'id' is ") and kinds in message and "data/x.json[0]" in message


def test_a_table_arrow_refuses_for_another_reason_keeps_arrows_error():
    """Objects whose same key holds a number in one and text in another: no field of ours mixes kinds at the top,
    so Arrow's own error stands (as before the check moved behind it)."""
    import pyarrow

    from critic_tasks.adapters.lm_eval.task_functions import Docs

    with pytest.raises(pyarrow.ArrowException):
        Docs.from_list([{"a": {"b": 1}}, {"a": {"b": "x"}}])
