"""Explorer's rewriting of pushed events (spec invariant-explorer-api.md 2.1-2.3), pure:
inline images out into the store's images and back, tool arguments parsed, timestamps
normalised, the append's merge, and GET's truncation."""

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from traces.image_types import sniff_image_type

IMAGE_PREFIXES = ("base64_img: ", "local_base64_img: ")
LINK_PREFIX = "local_img_link: "
DATA_URI = "data:"


@dataclass(frozen=True)
class FoundImage:
    sha256: str
    mime_type: str
    data: bytes


def _decoded(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.strip(), validate=False)
    except (binascii.Error, ValueError):
        return None


def _image(data: bytes | None, images: dict[str, FoundImage]) -> str | None:
    if not data:
        return None
    sha = hashlib.sha256(data).hexdigest()
    images.setdefault(sha, FoundImage(sha, sniff_image_type(data), data))
    return sha


def _url_image(url: Any, images: dict[str, FoundImage]) -> str | None:
    """The sha of the image a part's `url` holds inline (a data URI or bare base64)."""
    if not isinstance(url, str) or url.startswith(("http://", "https://", "/")):
        return None
    if url.startswith(DATA_URI):
        head, comma, body = url.partition(",")
        return _image(_decoded(body), images) if comma and head.endswith(";base64") else None
    return _image(_decoded(url), images)


def _arguments_parsed(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        parsed = json.loads(function["arguments"])
    except ValueError:
        return call  # unparseable text is kept
    return {**call, "function": {**function, "arguments": parsed}}


def event_rewritten(
    event: Any, images: dict[str, FoundImage] | None, link: Callable[[str], str] | None = None
) -> Any:
    """The event as Explorer stores it: an inline image (string content `base64_img: ...`,
    an `image_url` part holding a data URI or bare base64) put in `images` and replaced by
    `link(sha)`; an assistant's tool call arguments given as text parsed as JSON when they
    are JSON. Anything else, roles and unknown keys included, is kept as given. Without
    `images`, images are left inline (what the block converter reads)."""
    if not isinstance(event, dict):
        return event
    out = event
    content = event.get("content")
    if images is None or link is None:
        pass
    elif isinstance(content, str) and content.startswith(IMAGE_PREFIXES):
        sha = _image(_decoded(content.partition(": ")[2]), images)
        if sha is not None:
            out = {**out, "content": LINK_PREFIX + link(sha)}
    elif isinstance(content, list):
        parts = []
        for part in content:
            url = part.get("image_url") if isinstance(part, dict) else None
            inline = url.get("url") if isinstance(url, dict) else url
            sha = _url_image(inline, images) if part is not None else None
            if sha is not None:
                new_url = {**url, "url": link(sha)} if isinstance(url, dict) else link(sha)
                part = {**part, "image_url": new_url}
            parts.append(part)
        out = {**out, "content": parts}
    if event.get("role") == "assistant" and isinstance(event.get("tool_calls"), list):
        out = {**out, "tool_calls": [_arguments_parsed(c) for c in event["tool_calls"]]}
    return out


def event_inlined(event: Any, images: dict[str, bytes], sha_of: Callable[[str], str | None]):
    """The stored event with its images inline again, as the download writes them:
    `local_base64_img: <b64>` in string content, a PNG data URI in `image_url` parts.
    `sha_of` reads the image's sha from a link (None: not one of ours, left as it is)."""
    if not isinstance(event, dict):
        return event
    content = event.get("content")
    if isinstance(content, str) and content.startswith(LINK_PREFIX):
        data = images.get(sha_of(content[len(LINK_PREFIX) :]) or "")
        if data is not None:
            return {**event, "content": "local_base64_img: " + base64.b64encode(data).decode()}
    elif isinstance(content, list):
        parts = []
        for part in content:
            url = part.get("image_url") if isinstance(part, dict) else None
            link = url.get("url") if isinstance(url, dict) else url
            data = images.get(sha_of(link) or "") if isinstance(link, str) else None
            if data is not None:
                uri = "data:image/png;base64," + base64.b64encode(data).decode()
                part = {**part, "image_url": {**url, "url": uri} if isinstance(url, dict) else uri}
            parts.append(part)
        return {**event, "content": parts}
    return event


class BadTimestamp(ValueError):
    pass


def timestamp_parsed(value: Any) -> datetime:
    """An ISO-8601 timestamp as a UTC instant (naive counts as UTC; a trailing Z is
    taken); BadTimestamp otherwise."""
    if not isinstance(value, str):
        raise BadTimestamp(f"timestamp {value!r} is not an ISO-8601 string")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadTimestamp(f"timestamp {value[:60]!r} is not ISO-8601") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def merged_order(old: Sequence[datetime], new: Sequence[datetime]) -> list[tuple[bool, int]]:
    """The merge step of merge sort over the stored events' instants (`old`) and the new
    ones' (`new`), each list kept in its own order: an old event goes first only if it is
    strictly earlier (a tie puts the new one first). (is_new, index in its list) each."""
    out: list[tuple[bool, int]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        if old[i] < new[j]:
            out.append((False, i))
            i += 1
        else:
            out.append((True, j))
            j += 1
    out.extend((False, k) for k in range(i, len(old)))
    out.extend((True, k) for k in range(j, len(new)))
    return out


def _cut(text: str, most: int) -> str:
    if len(text) <= most:
        return text
    excess = len(text) - most
    half = most // 2
    return f"{text[:half]}<...truncated {excess} characters...>{text[len(text) - (most - half) :]}"


def event_truncated(event: Any, most: int) -> Any:
    """GET's max_length: a string `content`, and each string value of object arguments,
    longer than `most` becomes its head, a note of how much was left out, and its tail."""
    if not isinstance(event, dict):
        return event
    out = event
    if isinstance(event.get("content"), str) and len(event["content"]) > most:
        out = {**out, "content": _cut(event["content"], most)}
    calls = event.get("tool_calls")
    if isinstance(calls, list):
        new_calls = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            args = function.get("arguments") if isinstance(function, dict) else None
            if isinstance(args, dict) and any(
                isinstance(v, str) and len(v) > most for v in args.values()
            ):
                args = {k: _cut(v, most) if isinstance(v, str) else v for k, v in args.items()}
                call = {**call, "function": {**function, "arguments": args}}
            new_calls.append(call)
        out = {**out, "tool_calls": new_calls}
    return out
