"""A large file of independent lines (JSON Lines) cut into parts that separate processes
read at once (`_read_parts` in traces/services/imports.py): each part is whole lines, from a byte
offset to the next part's."""

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import BinaryIO

from traces.ingest.lines import SCAN


@dataclass
class Part:
    """Bytes [start, end) of a file, `first_line` the number of the line at `start` (1
    for the first part). The reader counts in `traces` the traces it read, so that the
    next part's traces are numbered on from them."""

    start: int
    end: int
    first_line: int = 1
    traces: int = 0


def file_size(stream: BinaryIO) -> int | None:
    """The size of the stream's file, if another process can read it too (see `reopen`):
    a real file, or a stream whose position lives in the process's memory (an upload
    read with pread: explorer/upload_files.py). None for anything else."""
    try:
        if not stream.seekable():
            return None
        fd = _fileno(stream)
        if fd is not None and not os.path.exists(f"/proc/self/fd/{fd}"):
            return None  # no /proc (not Linux): the file cannot be opened again
        position = stream.tell()
        size = stream.seek(0, os.SEEK_END)
        stream.seek(position)
        return size
    except (AttributeError, OSError, ValueError):
        return None


def _fileno(stream: BinaryIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def cut(stream: BinaryIO, *, size: int, parts: int) -> list[Part]:
    """`parts` parts of about the same size, each ending after a newline (fewer when the
    lines are long). Moves the stream back to its start. `first_line` of every part but
    the first is left for its reader to count (`count_lines_before`): that is a read of
    everything before it."""
    found: list[Part] = []
    start = 0
    for n in range(1, parts):
        target = max(size * n // parts, start)
        stream.seek(target)
        end = _next_line_start(stream, target)
        if end is None or end >= size:
            break
        if end > start:
            found.append(Part(start, end))
            start = end
    found.append(Part(start, size))
    stream.seek(0)
    return found


def _next_line_start(stream: BinaryIO, position: int) -> int | None:
    """The offset just after the first newline at or after `position`."""
    while chunk := stream.read(SCAN):
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)
    return None


def reopen(stream: BinaryIO) -> AbstractContextManager[BinaryIO]:
    """The stream for a forked reader of a part. A real file is opened again, with a
    position of its own (parent and child share the open file's); that works for an
    unlinked temporary file too. Any other stream is the child's own copy already: its
    position is in the process's memory."""
    fd = _fileno(stream)
    if fd is None:
        return nullcontext(stream)
    return open(f"/proc/self/fd/{fd}", "rb")


def count_lines_before(stream: BinaryIO, offset: int) -> int:
    """The number of the line at `offset` (1-based). Moves the stream."""
    stream.seek(0)
    lines, left = 1, offset
    while left and (chunk := stream.read(min(SCAN, left))):
        lines += chunk.count(b"\n")
        left -= len(chunk)
    return lines
