"""Querysets compiled once and run again with other values.

Every page asks the same few questions (the trace by id with its dataset and
organization, the person's roles, a dataset's labels, a trace's annotations). The ORM
compiles each queryset to SQL anew: 0.5-2 ms a query on these machines, against 0.05-0.2
ms to run it, so that a trace page's ten queries cost more to write than to answer.
`Prepared` compiles a queryset made by a function once per database connection, with a
marker in place of each argument, and then runs that SQL with the arguments, turning rows
into model instances (its `select_related` included) or tuples as the queryset would.

Only what is checked when it compiles is prepared: each argument must reach the SQL
unchanged, as one parameter (a lookup that rewrites its value, such as `iexact`, is
refused), and the queryset must yield model instances or `values_list` tuples, without
prefetching.
"""

import secrets
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, ValuesListIterable, get_related_populators

T = TypeVar("T")


def _marker(kind: type, position: int, salt: int) -> Any:
    """What stands for an argument while its queryset compiles: a value its SQL's other
    parameters are unlikely to hold (if one does, `_compile` tries another)."""
    if kind is str:
        return f"\x00prepared-{salt:x}-{position}\x00"
    if kind is int:
        # In the range of every integer column (SmallIntegerField's, unsigned too): a
        # lookup out of its column's range compiles to no SQL at all.
        return 32_767 - salt % 2_000 * 8 - position
    raise TypeError(f"a prepared argument is a str or an int, not {kind.__name__}")


@dataclass(frozen=True)
class _Compiled:
    sql: str
    slots: tuple[int | None, ...]  # each parameter: the argument it takes, or None
    constants: tuple[Any, ...]  # each parameter as compiled (a constant where slot is None)
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]  # (column, converters, expr)
    make_row: Callable[[list[Any]], Any]


class Prepared(Generic[T]):
    """`make(*arguments)` as a list, compiled once a connection: `make` returns the same
    queryset for every argument of the types `kinds` (str or int)."""

    def __init__(self, make: Callable[..., QuerySet], *kinds: type) -> None:
        self.make, self.kinds = make, kinds
        self._alias: str | None = None  # the database its queryset reads, once known
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, *arguments: Any) -> list[T]:
        if len(arguments) != len(self.kinds):
            raise TypeError(f"{len(self.kinds)} arguments expected, {len(arguments)} given")
        values = [kind(value) for kind, value in zip(self.kinds, arguments, strict=True)]
        if self._alias is None:  # (making a queryset costs a few filters' building)
            self._alias = self.make(*values).db
        connection = connections[self._alias]
        compiled = self._compiled.get(connection)
        if compiled is None:
            compiled = self._compiled[connection] = self._compile()
        params = [
            value if slot is None else values[slot]
            for slot, value in zip(compiled.slots, compiled.constants, strict=True)
        ]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        return [compiled.make_row(row) for row in _converted(rows, compiled, connection)]

    def _compile(self) -> _Compiled:
        for _ in range(3):  # markers of another salt if a constant was equal to one
            markers = [_marker(k, n, secrets.randbits(40)) for n, k in enumerate(self.kinds)]
            queryset = self.make(*markers)
            compiler = queryset.query.get_compiler(using=queryset.db)
            sql, constants = compiler.as_sql()
            found = [sum(1 for p in constants if p == marker) for marker in markers]
            if all(count == 1 for count in found):
                break
        else:
            n = next(n for n, count in enumerate(found) if count != 1)
            raise ValueError(f"argument {n} does not reach the SQL as one parameter as is")
        if queryset._prefetch_related_lookups or queryset._known_related_objects:
            raise ValueError("a prepared queryset does not prefetch")
        slots = tuple(markers.index(p) if p in markers else None for p in constants)
        columns = [column for column, *_ in compiler.select[: compiler.col_count]]
        converters = tuple(
            (position, tuple(found), column)
            for position, (found, column) in compiler.get_converters(columns).items()
        )
        return _Compiled(sql, slots, tuple(constants), converters, _row_maker(queryset, compiler))


def _converted(rows: Iterable[tuple], compiled: _Compiled, connection) -> Iterable[list[Any]]:
    """Each row with its values converted as the ORM converts them (dates on SQLite,
    JSON...)."""
    for row in rows:
        row = list(row)
        for position, converters, expression in compiled.converters:
            value = row[position]
            for convert in converters:
                value = convert(value, expression, connection)
            row[position] = value
        yield row


def _row_maker(queryset: QuerySet, compiler) -> Callable[[list[Any]], Any]:
    """What a row becomes: as ModelIterable (an instance, and those it selects with it)
    or ValuesListIterable (a tuple) makes it."""
    if queryset._iterable_class is ValuesListIterable:
        return tuple
    if queryset._iterable_class is not ModelIterable:
        raise ValueError("a prepared queryset yields model instances or values_list tuples")
    db, select, klass_info = queryset.db, compiler.select, compiler.klass_info
    if compiler.annotation_col_map:
        raise ValueError("a prepared queryset of instances has no annotations")
    model = klass_info["model"]
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    names = [column[0].target.attname for column in select[start:end]]
    related = get_related_populators(klass_info, select, db)

    def make(row: list[Any]) -> Any:
        obj = model.from_db(db, names, row[start:end])
        for populator in related:
            populator.populate(row, obj)
        return obj

    return make
