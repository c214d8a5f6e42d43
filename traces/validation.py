"""Every rule a block must satisfy (DESIGN.md "Rules", spec/004), for every way in.

Pure functions: no database access. Callers pass what they know of the parent;
the database enforces the duplicate rules again, so racing writers cannot both win.
What each sub type allows is its row in traces/kinds.py; the checks they are made of
are in traces/checks.py.
"""

from typing import Any

from traces import kinds
from traces.checks import (
    CheckInput,
    Context,
    Limits,
    ParentInfo,
    ValidBlock,
    check_json_depth,
    fail,
)
from traces.errors import ParentSubtypeMismatch, ValidationFailed
from traces.models import REWARD_LIMIT


def block_type_for(sub_type: Any, block_type: Any = None) -> tuple[str, str]:
    """The sub type and the lane (block_type) that follows from it; a client may send the
    lane, and a mismatch is refused."""
    kind = kinds.kind_of(sub_type)
    if kind is None:
        raise fail(
            f"sub_type must be one of {', '.join(kinds.SUB_TYPES)}, not {sub_type!r}",
            "sub_type",
            "enum",
        )
    if block_type is not None and block_type != kind.lane:
        raise fail(
            f"block_type {block_type!r} does not match sub_type {sub_type}: expected {kind.lane}",
            "block_type",
            "matches_sub_type",
            expected=kind.lane,
        )
    return kind.sub_type, kind.lane


def check_parent(sub_type: str, parent: ParentInfo | None) -> None:
    allowed = kinds.BY_SUB_TYPE[sub_type].parent
    if allowed is None:
        if parent is not None:
            raise fail(
                f"a {sub_type} block has no parent_block_id",
                "parent_block_id",
                "message_has_no_parent",
            )
        return
    if parent is None:
        raise fail(
            f"a {sub_type} block needs a parent_block_id naming a {allowed} of the same trace",
            "parent_block_id",
            "required",
        )
    if parent.sub_type != allowed:
        raise ParentSubtypeMismatch(
            f"a {sub_type} block must hang under a {allowed}, not a {parent.sub_type}",
            {
                "field": "parent_block_id",
                "sub_type": sub_type,
                "parent_sub_type": parent.sub_type,
                "allowed_parent_sub_type": allowed,
                "parent_block_id": parent.id,
            },
        )


def validate_block(
    *,
    sub_type: Any,
    payload: Any,
    parent: ParentInfo | None,
    limits: Limits,
    block_type: Any = None,
    ctx: Context | None = None,
    strict: bool = True,
    depth_checked: bool = False,
) -> ValidBlock:
    """Validate one block; raise a TraceStoreError naming the field and rule.

    The lane and the parent follow the kind's row (traces/kinds.py), and its `check` says
    what the payload must hold. `strict` is the blocks API (spec/004 exactly); file
    imports (chat logs and block arrays alike) pass strict=False, which keeps other roles,
    empty turns and unparsed tool arguments (DESIGN.md, "Decision, roles", "what a model
    produced is never refused" and "imports keep real logs whole"): what this product
    stores from a log imports back from its own export.
    `depth_checked`: the caller knows that the payload nests within jsontext.MAX_DEPTH.
    """
    sub_type, block_type = block_type_for(sub_type, block_type)
    if not isinstance(payload, dict):
        raise fail("payload must be an object", "payload", "type")
    if not depth_checked:
        check_json_depth(payload, "payload")
    check_parent(sub_type, parent)
    check = kinds.BY_SUB_TYPE[sub_type].check
    return check(payload, CheckInput(limits, ctx or Context(), strict, parent))


IMMUTABLE_BLOCK_FIELDS = (
    "id",
    "trace_id",
    "block_type",
    "sub_type",
    "payload",
    "parent_block_id",
    "metadata",
    "raw",
    "created_at",
    "updated_at",
)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- Rewards: one rule for every way in (models.REWARD_LIMIT says why) -------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def number_in_range(number: int | float) -> bool:
    """Whether a number may count as a reward or a metric (an accuracy...): finite and
    within ±REWARD_LIMIT. False for NaN too (every comparison with NaN is false)."""
    return -REWARD_LIMIT <= number <= REWARD_LIMIT


def reward_of(value: Any) -> float | None:
    """The number a reward counts as in the reward column: booleans as 1/0, numbers within
    the range as they are. Anything else (a string, an object, or a number out of range
    stored before the rule) counts as no reward."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if _is_number(value) and number_in_range(value):
        return float(value)
    return None


def check_reward(value: Any, *, field_name: str = "reward") -> None:
    """Refuse a reward that is a number but not a finite one within ±REWARD_LIMIT.
    Other values (null, booleans, strings, objects) are annotations the reward column
    does not count, and are kept as given."""
    if _is_number(value) and not number_in_range(value):
        limit = f"{REWARD_LIMIT:.0e}".replace("e+", "e")
        raise ValidationFailed(
            f"{field_name} must be a finite number from -{limit} to {limit}, not {value:.6g}",
            {"field": field_name, "rule": "reward_range", "limit": REWARD_LIMIT},
        )


def check_rewards(container: Any, *, field_name: str) -> None:
    """`check_reward` on the `reward` key of an extra or metadata object (or of a merge
    patch of one), named `<field_name>.reward` in the error."""
    if isinstance(container, dict) and "reward" in container:
        check_reward(container["reward"], field_name=f"{field_name}.reward")


def check_accuracy(metadata: Any, *, field_name: str = "metadata") -> None:
    """The same rule for the `accuracy` a dataset's metadata reports (the dataset page
    shows it beside the accuracy computed from rewards)."""
    if isinstance(metadata, dict) and "accuracy" in metadata:
        check_reward(metadata["accuracy"], field_name=f"{field_name}.accuracy")
