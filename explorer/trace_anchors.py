"""What the trace page shows of notes anchored to text (issue 13 item 3): each addressed
annotation with where it lands (traces/selectors/anchors.py), for the list of notes
(server-drawn, the no-JS view) and for the page's data island (static/js/anchors.js
highlights each quote in its block and writes the note beside it).

The island is JSON in an attribute (escaped as any attribute; not a json_script, as htmx
swaps in no <script>: base.html's allowScriptTags): the script reads the notes as data and
builds text nodes from them, so nothing of a comment, an address or extra_metadata is
ever HTML."""

from typing import Any

import orjson
from django.urls import reverse

from traces.models import Annotation, Trace
from traces.selectors.anchors import AnchoredNote, anchored_notes
from traces.selectors.annotations import annotation_author
from traces.selectors.traces import trace_has_events


def anchors_context(trace: Trace, annotations: list[Annotation], *, can_edit: bool) -> dict:
    """`anchor_island_json`, the script's data: the notes, whether and where a selection may
    become one. Each addressed annotation gets its AnchoredNote as `.anchor`, for the
    list."""
    notes: list[AnchoredNote] = anchored_notes(annotations=annotations, trace=trace)
    for note in notes:  # the list draws each annotation's place from here
        note.annotation.anchor = note
    island: dict[str, Any] = {
        # Only editors may comment, on a trace kept as its events (no query for others).
        "can_comment": can_edit and trace_has_events(trace=trace),
        "url": reverse("trace-anchor", args=[trace.pk]),
        "notes": [note.island(author=annotation_author(note.annotation)) for note in notes],
    }
    return {
        "anchor_island_json": orjson.dumps(island).decode(),
        "anchor_trace_url": reverse("trace", args=[trace.pk]),  # once, not once a note
    }
