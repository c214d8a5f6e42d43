"""Lines of a binary file found without holding them: a megabyte read at a time; and
reads paced for ijson."""

from typing import Any, BinaryIO

SCAN = 1 << 20

# ijson (yajl2_c) parses a read whole before it gives the first of its values: the
# values of one read are in memory at once, ~25x the read for small events. So reads are
# paced by what the last one held (`Paced`): small (READ_MIN) where strings are many,
# growing to READ_MAX where a long string runs on. yajl scans a string again from its
# start at each read that ends inside it: reads that grow keep that linear.
READ_MIN = 64 << 10
READ_MAX = 4 << 20
STRINGS_A_READ = 1000  # about this many strings a read: ~200 KB of values at once


def line_end(stream: BinaryIO) -> int | None:
    """How many bytes from the stream's position to its next newline, or None if no
    newline follows. Moves the stream."""
    offset = 0
    while chunk := stream.read(SCAN):
        found = chunk.find(b"\n")
        if found >= 0:
            return offset + found
        offset += len(chunk)
    return None


def more_after(stream: BinaryIO) -> bool:
    """Whether anything but white space follows the stream's position. Moves the stream."""
    while chunk := stream.read(SCAN):
        if not chunk.isspace():
            return True
    return False


class Bounded:
    """The next `size` bytes of a stream, as a stream of their own."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self.stream, self.left = stream, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.stream.read(n)
        self.left -= len(data)
        return data


class Paced:
    """A stream for ijson that reads as much at a time as keeps ijson's values of a read
    small (see READ_MIN), whatever size ijson asks for: pass buf_size=READ_MAX."""

    def __init__(self, source: Any) -> None:
        """`source`: anything with read(n) -> bytes (a file, `Bounded`)."""
        self.source = source
        self.next_size = READ_MIN

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson's read(0) asks whether the stream gives bytes or text
            return b""
        data = self.source.read(self.next_size)
        # String delimiters, roughly (an escaped backslash before a quote is rare).
        quotes = data.count(b'"') - data.count(b'\\"')
        wanted = len(data) * STRINGS_A_READ * 2 // max(quotes, 1)
        self.next_size = min(max(wanted, READ_MIN), READ_MAX)
        return data
