import pytest

from traces.errors import ParentSubtypeMismatch, PayloadTooLarge, ValidationFailed
from traces.validation import Limits, ParentInfo, merge_patch, reward_of, validate_block

LIMITS = Limits(message=64, think=32, tool_args=64, tool_result=128)
MESSAGE = ParentInfo(id="tb_m", sub_type="MESSAGE")
CALL = ParentInfo(id="tb_c", sub_type="TOOL_CALL", call_id="c1")


def check(sub_type, payload, parent=None, **kw):
    return validate_block(sub_type=sub_type, payload=payload, parent=parent, limits=LIMITS, **kw)


def details_of(exc_type, *args, **kw):
    with pytest.raises(exc_type) as caught:
        check(*args, **kw)
    return caught.value.details


def test_it_derives_block_type_from_sub_type():
    assert check("THINK", {"text": "x"}, MESSAGE).block_type == "ACT"
    assert check("TOOL_RESULT", {"call_id": "c1", "output": "o"}, CALL).block_type == "OBSERVE"


def test_it_rejects_a_block_type_that_contradicts_the_sub_type():
    details = details_of(ValidationFailed, "THINK", {"text": "x"}, MESSAGE, block_type="OBSERVE")
    assert details == {"field": "block_type", "rule": "matches_sub_type", "expected": "ACT"}


def test_it_rejects_an_unknown_sub_type():
    assert details_of(ValidationFailed, "NOTE", {})["field"] == "sub_type"


def test_it_rejects_a_message_with_a_parent():
    assert (
        details_of(ValidationFailed, "MESSAGE", {"role": "user", "content": "x"}, MESSAGE)["rule"]
        == "message_has_no_parent"
    )


def test_it_rejects_a_tool_call_without_a_parent():
    payload = {"call_id": "c", "name": "f", "arguments": {}}
    assert details_of(ValidationFailed, "TOOL_CALL", payload)["rule"] == "required"


def test_it_rejects_tool_result_under_message():
    details = details_of(
        ParentSubtypeMismatch, "TOOL_RESULT", {"call_id": "c1", "output": "o"}, MESSAGE
    )
    assert details["allowed_parent_sub_type"] == "TOOL_CALL"


def test_it_rejects_a_result_whose_call_id_differs_from_its_call():
    details = details_of(ValidationFailed, "TOOL_RESULT", {"call_id": "c2", "output": "o"}, CALL)
    assert details["rule"] == "matches_parent"


def test_it_accepts_only_the_three_roles_through_the_api():
    assert (
        details_of(ValidationFailed, "MESSAGE", {"role": "developer", "content": "x"})["rule"]
        == "enum"
    )
    assert check("MESSAGE", {"role": "developer", "content": "x"}, strict=False).payload


def test_it_lets_only_an_assistant_turn_be_empty():
    assert check("MESSAGE", {"role": "assistant", "content": None}).sub_type == "MESSAGE"
    assert check("MESSAGE", {"role": "assistant", "content": ""}).sub_type == "MESSAGE"
    assert (
        details_of(ValidationFailed, "MESSAGE", {"role": "user", "content": ""})["rule"]
        == "non_empty"
    )


@pytest.mark.parametrize("name", ["", "has space", "tab\there", "nl\n", "x" * 129, "bell\x07"])
def test_it_rejects_invalid_tool_names(name):
    payload = {"call_id": "c", "name": name, "arguments": {}}
    assert details_of(ValidationFailed, "TOOL_CALL", payload, MESSAGE)["field"] == "payload.name"


def test_it_parses_string_arguments_and_refuses_non_objects_through_the_api():
    valid = check("TOOL_CALL", {"call_id": "c", "name": "f", "arguments": '{"b":1,"a":2}'}, MESSAGE)
    assert list(valid.payload["arguments"]) == ["b", "a"]
    for bad in ("[1]", "nope", 3):
        payload = {"call_id": "c", "name": "f", "arguments": bad}
        assert details_of(ValidationFailed, "TOOL_CALL", payload, MESSAGE)["rule"] == "json_object"


def test_it_requires_exactly_one_of_output_and_delta():
    both = {"call_id": "c1", "output": "a", "delta": "b"}
    assert details_of(ValidationFailed, "TOOL_RESULT", both, CALL)["rule"] == "exactly_one_of"
    assert (
        details_of(ValidationFailed, "TOOL_RESULT", {"call_id": "c1"}, CALL)["rule"]
        == "exactly_one_of"
    )


@pytest.mark.parametrize("seq", [-1, 1.5, "1", True, 2**63, 2**64 - 1])
def test_it_requires_seq_to_be_a_non_negative_integer(seq):
    payload = {"call_id": "c1", "delta": "a", "seq": seq}
    assert details_of(ValidationFailed, "TOOL_RESULT", payload, CALL)["field"] == "payload.seq"


def test_it_measures_size_in_utf8_bytes_and_never_truncates():
    text = "€" * 22  # 66 bytes
    with pytest.raises(PayloadTooLarge) as caught:
        validate_block(
            sub_type="MESSAGE",
            payload={"role": "user", "content": text},
            parent=None,
            limits=LIMITS,
        )
    assert caught.value.message == "message content exceeds 64 bytes limit"
    assert caught.value.details["actual_bytes"] == 66


@pytest.mark.parametrize(
    ("content", "size"),
    [
        ("x" * 64, 64),  # ASCII at the limit
        ("€" * 21 + "a", 64),  # 3-byte characters at the limit
        ("😀" * 16, 64),  # 4-byte characters at the limit
        ("\ud800" * 21 + "a", 64),  # lone surrogates count 3 bytes, as stored
        ("x" * 65, 65),
        ("😀" * 16 + "a", 65),  # 17 characters: fewer than the limit, 65 bytes
        ("\ud800" * 22, 66),
    ],
)
def test_it_counts_bytes_not_characters_at_the_limit(content, size):
    payload = {"role": "user", "content": content}
    if size <= LIMITS.message:
        validate_block(sub_type="MESSAGE", payload=payload, parent=None, limits=LIMITS)
        return
    with pytest.raises(PayloadTooLarge) as caught:
        validate_block(sub_type="MESSAGE", payload=payload, parent=None, limits=LIMITS)
    assert caught.value.details["actual_bytes"] == size


def test_it_measures_non_string_fields_as_compact_json():
    arguments = {"k": "v" * 60}  # {"k":"vvv..."} = 68 bytes
    with pytest.raises(PayloadTooLarge) as caught:
        check("TOOL_CALL", {"call_id": "c", "name": "f", "arguments": arguments}, MESSAGE)
    assert caught.value.details["actual_bytes"] == 68
    assert caught.value.details["field"] == "arguments"


def test_the_413_message_uses_the_spec_wording():
    limits = Limits(message=65536, think=32768, tool_args=262144, tool_result=2097152)
    with pytest.raises(PayloadTooLarge) as caught:
        validate_block(
            sub_type="TOOL_RESULT",
            payload={"call_id": "c1", "output": "x" * 2097153},
            parent=CALL,
            limits=limits,
        )
    assert caught.value.message == "tool_result output exceeds 2MB limit"


def test_merge_patch_follows_rfc_7386():
    target = {"a": "b", "c": {"d": "e", "f": "g"}}
    patch = {"a": "z", "c": {"f": None}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}}
    assert merge_patch({"a": 1}, ["x"]) == ["x"]


def test_reward_of_maps_booleans_and_ignores_non_numbers():
    assert [reward_of(v) for v in (True, False, 0.5, 2, "1", None)] == [
        1.0,
        0.0,
        0.5,
        2.0,
        None,
        None,
    ]
