"""The trace page's block frames, rows and reward controls as HTML, built with plain
Python strings.

A first response draws about 250 blocks, each with a head, a reward control, a body and a
drawer. Through Django's template engine (a partial per block, a lookup per variable) that
cost ~0.5 ms a block: most of the page's time, several times the floor of its rows
(benchmark ui). Here a block costs a few string joins. The markup is the one the
`block`, `block_body`, `drawer_body`, `raw`, `reward` and `chunk` partials of
templates/explorer/trace.html answer with (each partial calls the function below that
draws it: one markup, whether a page draws 250 blocks or htmx asks for one). A kind's
head stays a template partial (`kind-<view>`), rendered into BlockView.head_html when
the block is formatted (explorer/trace_page.py), which the render cache keeps.

Every value from a trace is escaped here (`_e`) unless it is HTML built by
explorer/render (BlockView.body, .metadata, .extra, .raw, .head_html), which escapes or
sanitizes it there.
"""

import dataclasses
import secrets
from dataclasses import dataclass
from html import escape
from typing import Any

from django.utils.html import format_html

from explorer.render.text import visible_text

# explorer/trace_page.py's view models (BlockView, RewardView, RowView): that module
# imports this one, so they are named here, not imported.
BlockView = RewardView = RowView = Any


def _e(value: Any) -> str:
    """`{{ value }}` of an autoescaping template (most values need no change: looked for
    first, five substring tests, which is faster than replacing, and than a regex)."""
    text = value if type(value) is str else str(value)
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return escape(text)
    return text


def _shown(value: Any) -> str:
    """`{{ value|shown }}`: control and bidi characters made visible, escaped."""
    return escape(visible_text("" if value is None else str(value)))


@dataclass(frozen=True)
class Frame:
    """What a block's frame takes from its response rather than from the block."""

    csrf_input: str  # the CSRF field of its reward form ("" when there is none)
    can_edit: bool
    block_page: bool = False  # the block's own page: its drawer open, no "block page" link
    unfolded: bool = False  # a body shown whole on demand: it offers to fold again


def csrf_field(token: Any) -> str:
    """What `{% csrf_token %}` writes for the context's `csrf_token`."""
    if not token:
        return ""
    if token == "NOTPROVIDED":
        return ""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token)


def frame_of(context: Any) -> Frame:
    """The Frame of a template context (the partials' entry point)."""
    return Frame(
        csrf_input=csrf_field(context.get("csrf_token")),
        can_edit=bool(context.get("can_edit")),
        block_page=context.get("page_mode") == "block",
        unfolded=bool(context.get("unfolded")),
    )


def reward_html(reward: RewardView, csrf_input: str) -> str:
    """A reward control: a form for who may edit, else the value (if set), read only."""
    if not reward.can_edit:
        if not reward.is_set:
            return ""
        return (
            f'<span class="reward reward-readonly" id="{_e(reward.dom_id)}" '
            f'title="reward (read only)">reward <b>{_e(reward.display)}</b></span>'
        )
    if reward.value is None and not reward.error:  # most blocks: one form, its ids aside
        before, between, again, after = _unset_form(reward, csrf_input)
        url = _e(reward.url)
        return f"{before}{_e(reward.dom_id)}{between}{url}{again}{url}{after}"
    return _form(reward, csrf_input)


_URL, _DOM_ID = "\x00url\x00", "\x00dom-id\x00"  # no content: each is an argument of ours
_unset_forms: dict[tuple[str, str, str, str], list[str]] = {}


def _unset_form(reward: RewardView, csrf_input: str) -> list[str]:
    """The form of a reward not set (`_form`) in four pieces, around its element id and
    its URL (twice): made once a response (its CSRF field is the response's), filled for
    each block."""
    key = (csrf_input, reward.target, reward.up_icon, reward.down_icon)
    found = _unset_forms.get(key)
    if found is None:
        if len(_unset_forms) >= 16:  # a response's forms are asked for together
            _unset_forms.clear()
        sample = dataclasses.replace(reward, url=_URL, dom_id=_DOM_ID)
        before, _, rest = _form(sample, csrf_input).partition(_DOM_ID)
        found = _unset_forms[key] = [before, *rest.split(_URL)]
    return found


def _form(reward: RewardView, csrf_input: str) -> str:
    """The reward control of who may edit."""
    url = _e(reward.url)
    # Each of the control's states read once (a page draws this control on every block).
    error, is_set, is_up, is_down = reward.error, reward.is_set, reward.is_up, reward.is_down
    # What the field shows: a number as text, or what was typed when it was refused.
    value = _e(reward.field_value) if error else reward.field_value
    invalid = ' aria-invalid="true"' if error else ""
    clear = (
        '\n<button class="reward-clear" name="action" value="clear" '
        'title="Clear the reward">clear</button>'
        if is_set
        else ""
    )
    error_html = f'\n<span class="reward-error" role="alert">{_e(error)}</span>' if error else ""
    return (
        f'<form class="{reward.form_class}" id="{_e(reward.dom_id)}" method="post" '
        f'action="{url}" hx-post="{url}" hx-swap="outerHTML">{csrf_input}'
        f'<input class="reward-num" type="number" step="any" name="value" '
        f'value="{value}" placeholder="{reward.placeholder}" '
        f'aria-label="Reward (any number)"{invalid}>\n'
        '<button class="reward-set" name="action" value="set" title="Set this number">'
        "Set</button>\n"
        f'<button class="thumb thumb-up{" is-on" if is_up else ""}" name="action" value="up" '
        f'aria-pressed="{"true" if is_up else "false"}" title="Reward 1">'
        f'<img src="{_e(reward.up_icon)}" alt="Reward 1" width="16" height="16"></button>\n'
        f'<button class="thumb thumb-down{" is-on" if is_down else ""}" name="action" '
        f'value="down" aria-pressed="{"true" if is_down else "false"}" title="Reward 0">'
        f'<img src="{_e(reward.down_icon)}" alt="Reward 0" width="16" height="16"></button>'
        f"{clear}{error_html}</form>"
    )


def body_html(b: BlockView, frame: Frame) -> str:
    """The block's body (the `block_body` partial): its preview and "Show all", or the
    whole of it and "Fold"."""
    return _filled(_body_parts(b, frame), {BODY: b.body})


def _body_parts(b: BlockView, frame: Frame) -> list[str | int]:
    bid, full = _e(b.id), _e(b.full_url)
    if b.folded:
        more = (
            f'<a class="show-all" href="{full}" hx-get="{full}" hx-target="#body-{bid}" '
            f'hx-swap="outerHTML">Show all ({_e(b.size)})</a></div>'
        )
    elif frame.unfolded:
        more = (
            f'<a class="show-all fold-again" href="{_e(b.permalink)}" '
            f'hx-get="{full}?fold=1" hx-target="#body-{bid}" hx-swap="outerHTML">Fold</a></div>'
        )
    else:
        more = "</div>"
    folded = " is-folded" if b.folded else ""
    return [f'<div class="block-body{folded}" id="body-{bid}">', BODY, more]


def raw_slot_html(b: BlockView) -> str:
    """The drawer's raw (the `raw` partial): inline, a button that loads it, or none."""
    bid = _e(b.id)
    if not b.has_raw:
        inner = '<p class="faint small">none</p>'
    elif b.raw:
        inner = str(b.raw)
    else:
        full = _e(b.full_url)
        inner = (
            f'<a class="load-raw button small" href="{full}" hx-get="{full}" '
            f'hx-target="#raw-{bid}" hx-swap="outerHTML">Load raw ({_e(b.raw_size)})</a>'
        )
    return f'<div class="raw-slot" id="raw-{bid}">{inner}</div>'


def _drawer_foot(b: BlockView, frame: Frame, bid: str, full: str) -> list[str | int]:
    """The drawer's last line: the block's id, kind and links (the "label this block"
    link is the hole LABEL_THIS)."""
    out = f'<p class="drawer-foot small"><code>{bid}</code> &middot; {_e(b.sub_type)}'
    if b.has_text_view:
        out += (
            f' &middot; <a href="{full}?as=text" hx-get="{full}?as=text" hx-target="#body-{bid}" '
            'hx-swap="outerHTML" title="Show the text as written, not as Markdown">'
            "as plain text</a>"
        )
    if not frame.block_page:
        out += f' &middot; <a href="{full}">block page</a>'
    return [out, LABEL_THIS, "</p>"]


def _label_this(b: Any, can_edit: bool) -> str:
    if not can_edit:
        return ""
    # The page it opens shows the block too (?focus): a reader deep in a long trace keeps
    # their place under the labels card.
    bid = _e(b.id)
    return (
        f' &middot; <a class="label-this" href="{_e(b.trace_url)}?annotate={bid}&amp;focus={bid}'
        '#annotations" title="Tag this block with a label or a comment">label this block</a>'
    )


def drawer_body_html(b: BlockView, frame: Frame) -> str:
    """The drawer's contents (the `drawer_body` partial): metadata, extra, raw."""
    parts = _drawer_parts(b, frame, _e(b.id), _e(b.full_url))
    return _filled(parts, {LABEL_THIS: _label_this(b, frame.can_edit)})


def _drawer_parts(b: BlockView, frame: Frame, bid: str, full: str) -> list[str | int]:
    size = f' <span class="faint">{_e(b.raw_size)}</span>' if b.raw_size else ""
    return [
        f'<div class="drawer-body" id="drawer-{bid}">\n'
        f"<h4>metadata</h4>{b.metadata}<h4>extra</h4>{b.extra}<h4>raw{size}</h4>\n"
        f"{raw_slot_html(b)}\n",
        *_drawer_foot(b, frame, bid, full),
        "</div>",
    ]


def block_html(b: BlockView, frame: Frame) -> str:
    """A block's <article> (the `block` partial): head, labels, body, drawer."""
    out: list[str] = []
    _block_into(out, b, frame)
    return "".join(out)


# What a block's <article> leaves to the response (`_article`), in the order it comes:
# whether the block has a reward (a class), the marks among its warnings, its reward
# control, its labels, its body (left out of a turn that only calls tools) and the
# "label this block" link. Each depends on the reader or may change after the block is
# written; the rest is the same for every reader of the trace page, and the render cache
# keeps it (`article_entry`).
HAS_REWARD, MARKS, REWARD, LABELS, BODY, LABEL_THIS = range(6)
# The trace page's frame: the one the render cache keeps a block's article for.
PAGE_FRAME = Frame(csrf_input="", can_edit=False)


def _article(b: BlockView, frame: Frame, lazy_drawer: bool) -> list[str | int]:
    """A block's <article> as pieces of markup, each hole (HAS_REWARD...) an int."""
    bid, full = _e(b.id), _e(b.full_url)
    parts: list[str | int] = [
        f'<article class="{b.kind_classes}',  # of a fixed vocabulary (BlockView.kind_classes)
        HAS_REWARD,
        f'" id="{bid}" data-block tabindex="-1">\n'
        f'<header class="block-head"><img class="kind-icon" src="{_e(b.icon_url)}" alt="" '
        f'width="14" height="14">{b.head_html}',
    ]
    for label, why in b.warnings:
        parts.append(_warning(label, why))
    parts.append(MARKS)
    for badge in b.badges:
        parts.append(f'<span class="badge">{_e(badge)}</span>')
    number = f" to block {b.number}" if b.number else ""  # an int
    parts += [
        '\n<span class="head-tools">',
        REWARD,
        f'<a class="permalink" href="{_e(b.permalink)}" title="Permalink{number}">'
        f"#{b.number if b.number else ''}</a></span></header>\n",
        # Always there, empty when the block has no label: tagging the block from the
        # labels card swaps its labels in (`block_labels_oob`).
        _labels_open(bid),
        LABELS,
        "</p>\n",
    ]
    parts += [*_body_parts(b, frame), "\n"]
    if lazy_drawer:  # its contents come when it opens: the drawer_body partial of its view
        parts += [
            f'<details class="drawer" hx-get="{full}" hx-trigger="toggle once" '
            f'hx-target="#drawer-{bid}" hx-swap="outerHTML"><summary title="Metadata, raw '
            f'and extra">details</summary><div class="drawer-body" id="drawer-{bid}">',
            *_drawer_foot(b, frame, bid, full),
            "</div></details>\n</article>",
        ]
    else:
        opened = " open" if frame.block_page else ""
        parts += [
            f'<details class="drawer"{opened}><summary title="Metadata, raw and extra">'
            "details</summary>",
            *_drawer_parts(b, frame, bid, full),
            "</details>\n</article>",
        ]
    return parts


def _warning(label: str, why: str) -> str:
    title = f' title="{_e(why)}"' if why else ""
    return f'<span class="badge warn"{title}>{_e(label)}</span>'


def _holes(b: BlockView, frame: Frame) -> tuple[str, str, str, str, Any, str]:
    """What a BlockView's holes hold in this response (a PageBlock's: `_block_into`)."""
    return (
        " has-reward" if b.reward.is_set else "",
        "".join(_warning(label, why) for label, why in b.marks),
        reward_html(b.reward, frame.csrf_input),
        label_tags(b.labels) if b.labels else "",
        b.body,
        _label_this(b, frame.can_edit),
    )


def label_tags(names: list[str]) -> str:
    """A block's labels, inside its `block-labels` paragraph."""
    return "".join(
        f'<a class="label-tag small" href="#annotations" title="label">{_shown(name)}</a> '
        for name in names
    )


def _labels_open(bid: str, more: str = "") -> str:
    """The start of a block's `block-labels` paragraph (`bid` escaped)."""
    return f'<p class="block-labels" id="labels-{bid}"{more}>'


def block_labels_oob(block_id: str, names: list[str]) -> str:
    """A block's labels paragraph as htmx swaps it in out of band, wherever the page
    shows the block (explorer/views/labels.py, after its labels changed)."""
    opening = _labels_open(_e(block_id), ' hx-swap-oob="true"')
    return f"{opening}{label_tags(names)}</p>"


def _fill(out: list[str], parts: list[str | int], holes: Any) -> None:
    """`parts` appended to `out`, each hole (an int) as `holes` holds it."""
    for part in parts:
        out.append(holes[part] if type(part) is int else part)


def _filled(parts: list[str | int], holes: Any) -> str:
    out: list[str] = []
    _fill(out, parts, holes)
    return "".join(out)


def _block_into(out: list[str], b: Any, frame: Frame) -> None:
    """`block_html`, appended to `out` in pieces (a page's rows are joined once: its
    bodies are most of its bytes, and each join copies them)."""
    if type(b) is not PageBlock:
        _fill(out, _article(b, frame, lazy_drawer=not b.drawer), _holes(b, frame))
        return
    # The kept article between the holes this response fills: an empty hole (most are)
    # adds no piece, so its neighbours go as one slice (each piece is encoded alone).
    html, (c0, c1, c2, c3, c4, c5, c6) = b.html, b.cuts
    at = 0
    if b.reward.is_set:
        out += (html[:c0], " has-reward")
        at = c0
    if b.marks:
        out += (html[at:c1], "".join(_warning(label, why) for label, why in b.marks))
        at = c1
    out += (html[at:c2], reward_html(b.reward, frame.csrf_input))
    at = c2
    if b.labels:
        out += (html[at:c3], label_tags(b.labels))
        at = c3
    if b.body is not None:  # left out
        out += (html[at:c4], b.body)
        at = c5
    if frame.can_edit:
        out += (html[at:c6], _label_this(b, True))
        at = c6
    out.append(html[at:])


def article_entry(b: BlockView) -> tuple[str, list[int]]:
    """The block's <article> on the trace page, without what `_holes` puts in it (its
    body aside, which it holds), and where each hole goes: the render cache's entry
    (PageBlock)."""
    out: list[str] = []
    cuts: list[int] = []
    at = 0
    for part in _article(b, PAGE_FRAME, lazy_drawer=True):
        if type(part) is int:
            cuts.append(at)
            if part == BODY:
                out.append(b.body)
                at += len(b.body)
                cuts.append(at)
            continue
        out.append(part)
        at += len(part)
    return "".join(out), cuts


@dataclass(slots=True)
class PageBlock:
    """A block the trace page draws from the render cache's article (`article_entry`),
    with what `rows` and `_holes` read of it."""

    id: str
    sub_type: str
    number: int | None
    html: str
    cuts: list[int]  # where the holes go: HAS_REWARD, MARKS, REWARD, LABELS, the body's
    # start and end, LABEL_THIS
    reward: RewardView
    marks: list[tuple[str, str]]
    labels: list[str]
    cost: int
    trace_url: str
    without_text: bool = False
    same_as: str = ""
    awaits_children: bool = False
    is_error: bool = False
    body: Any = None  # None: the article's own; "" leaves it out


def _row_into(out: list[str], row: RowView, frame: Frame) -> None:
    """One row of the lanes: its gutter, its message (or where it continues), its acts
    with their results."""
    dom_id = _e(row.dom_id)
    anchor = _e(row.message.id) if row.message is not None else dom_id
    out.append(
        f'\n      <div class="row" id="{dom_id}">\n        <div class="gutter">'
        f'<a class="row-num" href="#{anchor}" title="Row {row.number}">{row.number}</a>'
    )
    if row.repeats:
        times = len(row.repeats) + 1
        out.append(
            f'<span class="repeat-count" title="the same call {times} times in a row">'
            f"&times;{times}</span>"
        )
    out.append('</div>\n        <div class="cell cell-message">')
    if row.message is not None:
        _block_into(out, row.message, frame)
    else:
        out.append(
            f'<p class="row-continued faint">Row {row.number} continued: acts '
            f"{row.acts_from + 1}&ndash;{row.acts_to} of {row.acts_total}</p>"
        )
    out.append('</div>\n        <div class="acts">')
    for act in row.acts:
        out.append('\n          <div class="pair">\n            <div class="cell cell-act">')
        _block_into(out, act.block, frame)
        out.append('</div>\n            <div class="cell cell-observe">\n              ')
        for result in act.results:
            _block_into(out, result, frame)
        if not act.results and act.block.awaits_children:
            out.append('<p class="no-result">no result</p>')
        out.append("\n            </div>\n          </div>")
    out.append("\n        </div>\n      </div>")


def rows_pieces(rows: list[RowView], frame: Frame) -> list[str]:
    """A chunk's rows, as pieces of HTML (Deferred.put takes them); turns folded under a
    repeated call after their first."""
    out: list[str] = []
    for row in rows:
        _row_into(out, row, frame)
        if row.repeats:
            last = row.repeats[-1]
            n = len(row.repeats)
            errors = row.repeat_errors
            badge = (
                f' <span class="badge warn">{errors} tool error{"s" if errors != 1 else ""}</span>'
                if errors
                else ""
            )
            out.append(
                f'\n      <details class="repeats"><summary>the same call {n} more '
                f"time{'s' if n != 1 else ''} (rows {row.repeats[0].number}&ndash;"
                f"{last.number}){badge}</summary>\n      "
            )
            for repeat in row.repeats:
                _row_into(out, repeat, frame)
            out.append("\n      </details>")
    return out


class Deferred:
    """HTML kept out of the template engine's strings: a tag leaves a marker in its place
    (`put`), and the view puts the HTML into the response's bytes (`fill`). A chunk's
    rows are most of a page (~0.8 MB): each level of template that holds them copied them
    again, and content in wide characters (CJK, emoji) widened the whole page before it
    was encoded."""

    def __init__(self) -> None:
        self.parts: dict[bytes, list[str]] = {}

    def put(self, pieces: list[str]) -> str:
        """A marker for the HTML `pieces` make, joined."""
        # Content cannot forge a marker: it is escaped, and the marker is random.
        marker = f"<!--deferred-{secrets.token_hex(8)}-->"
        self.parts[marker.encode()] = pieces
        return marker

    def fill(self, response: Any) -> Any:
        content = response.content
        for marker, pieces in self.parts.items():
            before, found, after = content.partition(marker)
            if found:
                # Each piece encoded alone: joined first, one wide character (CJK, an
                # emoji) in a body made the whole chunk a wide string, slower to encode.
                content = b"".join((before, *[piece.encode() for piece in pieces], after))
        response.content = content
        return response
