"""Benchmarks run by `python manage.py benchmark <name>`.

Each benchmark is one sibling module registered in BENCHMARKS; it provides
`HELP`, `add_arguments(parser)` and `run(options, log) -> str` (the report).
"""

import importlib
from argparse import ArgumentParser
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

BENCHMARKS: dict[str, str] = {
    "import": "benchmarks.import_bench",
    "api": "benchmarks.api_bench",
    "ui": "benchmarks.ui_bench",
    "compare": "benchmarks.compare_bench",
}


class Benchmark(Protocol):
    HELP: str

    def add_arguments(self, parser: ArgumentParser) -> None: ...

    def run(self, options: Mapping[str, Any], log: Callable[[str], None]) -> str: ...


def get(name: str) -> Benchmark:
    return cast(Benchmark, importlib.import_module(BENCHMARKS[name]))
