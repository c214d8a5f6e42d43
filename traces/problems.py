"""Problems from an import as lines a person reads."""

from typing import Any

_ORDER = ("file", "line", "trace", "event", "block", "field")


def problem_line(found: dict[str, Any]) -> str:
    where = []
    for key in _ORDER:
        if found.get(key) is not None:
            where.append(f"{found[key]}" if key == "file" else f"{key} {found[key]}")
    place = ", ".join(where) or "file"
    rule = found.get("rule")
    code = found.get("code", "VALIDATION")
    return f"{place}: {found.get('message', '')} [{code}{'/' + rule if rule else ''}]"
