"""Every input format, in the order detection tries them: specific shapes first."""

from traces.ingest.formats import json_array, jsonl
from traces.ingest.types import Format

FORMATS: list[Format] = []


def _optional(module_name: str) -> None:
    import importlib

    try:
        module = importlib.import_module(f"traces.ingest.formats.{module_name}")
    except ModuleNotFoundError:
        return
    FORMATS.append(module.FORMAT)


for _name in ("tau2", "swe_agent", "toolbench", "inspect_ai", "who_and_when"):
    _optional(_name)
FORMATS += [jsonl.FORMAT, json_array.FORMAT]
