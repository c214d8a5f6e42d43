"""How much formatting work one response may do, so that no trace content, however
crafted, makes a page take more than a second of CPU (issue 8).

The formatters trace content meets are regex-driven Python: Pygments lexers, the Markdown
parser, our JSON colouring. Measured on crafted input (tests/explorer/pathological.py),
each has a worst case far beyond its usual speed: some lexers backtrack exponentially (a
62-byte code block took 21 s; those lexers are not used, see explorer/render/code.py),
the allowed ones are mostly quadratic on some input (1,500 crafted characters of C take
0.36 s), markdown-it spends up to ~30 µs per character of a paragraph of brackets and
asterisks (against ~1 µs for prose) and ~10 µs per character of some block structures,
and colouring JSON up to ~1.5 µs per character. Three bounds keep the total small:

1. Each call is small enough that its worst case is about 0.1 s: code is highlighted up
   to its language's size (at most HIGHLIGHT_MAX_CHARS), a Markdown text is parsed up to
   MARKDOWN_MAX_CHARS and each of its paragraphs (inline runs) up to
   MARKDOWN_INLINE_MAX_CHARS, JSON is coloured up to JSON_RICH_MAX_CHARS, and a string that
   holds JSON text (a tool's output) is parsed to be shown as JSON only up to
   JSON_PARSE_MAX_CHARS (parsing allocates: up to ~0.4 µs a character, so a 2 MB output of
   `[[],[],...]` took 0.8 s). Anything larger is shown as plain preformatted text (a long
   paragraph as plain text in its place).
2. A response highlights at most HIGHLIGHT_PAGE_CHARS characters of code in all.
3. A response may spend RICH_SECONDS of its thread's CPU time before the rest of what it
   formats is shown as plain text, and before it stops decoding blocks larger than
   DECODE_FREE_CHARS (their stored JSON; such a block is then a link to its own view).
   Ordinary content does not meet this bound (a page of 150 rows of prose and code
   formats in a few tens of milliseconds); crafted content
   meets it after a few blocks, and the page still opens, plainly.

Plain text (escaping, control characters made visible) runs at C speed and is not
bounded. tests/explorer/render/test_effort.py holds a page of the worst content found to
under a second of CPU.
"""

import time
from dataclasses import dataclass, field

HIGHLIGHT_MAX_CHARS = 1_500
HIGHLIGHT_PAGE_CHARS = 60_000
MARKDOWN_MAX_CHARS = 20_000
MARKDOWN_INLINE_MAX_CHARS = 4_000
JSON_RICH_MAX_CHARS = 100_000
JSON_PARSE_MAX_CHARS = 100_000
# A block's stored JSON up to this size is always decoded for a page (~1 ms at worst);
# larger only while the response has time left (a 2 MB payload may take 0.3 s).
DECODE_FREE_CHARS = 2_000
# What decoding a larger one may cost, at worst, a character (`[[],[],...]` measured at
# 0.12 µs; twice that for a loaded machine): it is decoded only when the time left covers
# it, so that one decode begun just before the allowance ran out cannot overrun it.
DECODE_SECONDS_PER_CHAR = 0.25e-6
RICH_SECONDS = 0.3


@dataclass
class Effort:
    """The formatting one response may still do: CPU time and highlighted characters."""

    seconds: float = RICH_SECONDS
    highlight_chars: int = HIGHLIGHT_PAGE_CHARS
    started: float = field(default_factory=time.thread_time)
    # How many times the response's allowance (its time, its highlighted characters)
    # made some formatting plainer than the content alone would: a block formatted while
    # this grew is not what another response would draw, and is not kept (the trace
    # page's cache); one formatted whole after it (a huge block refused, time left) is.
    limits: int = 0

    def left(self) -> bool:
        """Whether there is still time for rich formatting. Thread time, not process
        time: a threaded server's other requests do not count."""
        if time.thread_time() - self.started < self.seconds:
            return True
        self.limits += 1
        return False

    def may_highlight(self, code: str) -> bool:
        """Whether `code` may be highlighted; if so, its characters are counted."""
        n = len(code)
        if n > HIGHLIGHT_MAX_CHARS:
            return False
        if n > self.highlight_chars:
            self.limits += 1
            return False
        if not self.left():
            return False
        self.highlight_chars -= n
        return True

    def may_parse_markdown(self, text: str) -> bool:
        return len(text) <= MARKDOWN_MAX_CHARS and self.left()

    def may_parse_inline(self, text: str) -> bool:
        return len(text) <= MARKDOWN_INLINE_MAX_CHARS and self.left()

    def may_colour_json(self, text: str) -> bool:
        return len(text) <= JSON_RICH_MAX_CHARS and self.left()

    def may_decode(self, text: str) -> bool:
        """Whether a block's stored JSON may be decoded to be shown."""
        if len(text) <= DECODE_FREE_CHARS:
            return True
        left = self.seconds - (time.thread_time() - self.started)
        if len(text) * DECODE_SECONDS_PER_CHAR <= left:
            return True
        self.limits += 1
        return False

    def may_parse_json(self, text: str) -> bool:
        """Whether JSON text may be parsed to be shown as JSON (else it is plain text)."""
        return len(text) <= JSON_PARSE_MAX_CHARS and self.left()
