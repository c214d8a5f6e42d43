"""The trace page's partials that draw blocks, rows and reward controls: each calls
explorer/trace_html.py, which builds their markup in Python (a page draws hundreds)."""

from django import template
from django.utils.safestring import SafeString

from explorer import trace_html

register = template.Library()


def _safe(html: str) -> SafeString:
    return SafeString(html)  # trace_html escapes every value it takes from a trace


@register.simple_tag(takes_context=True)
def trace_rows(context, rows) -> SafeString:
    """A chunk's rows; left to the view's `deferred` (trace_html.Deferred) if it has one."""
    pieces = trace_html.rows_pieces(rows, trace_html.frame_of(context))
    deferred = context.get("deferred")
    return _safe(deferred.put(pieces) if deferred is not None else "".join(pieces))


@register.simple_tag(takes_context=True)
def trace_block(context, b) -> SafeString:
    return _safe(trace_html.block_html(b, trace_html.frame_of(context)))


@register.simple_tag(takes_context=True)
def trace_block_body(context, b) -> SafeString:
    return _safe(trace_html.body_html(b, trace_html.frame_of(context)))


@register.simple_tag(takes_context=True)
def trace_drawer_body(context, b) -> SafeString:
    return _safe(trace_html.drawer_body_html(b, trace_html.frame_of(context)))


@register.simple_tag
def trace_raw(b) -> SafeString:
    return _safe(trace_html.raw_slot_html(b))


@register.simple_tag(takes_context=True)
def trace_reward(context, reward) -> SafeString:
    return _safe(trace_html.reward_html(reward, trace_html.frame_of(context).csrf_input))
