"""What a trace page shows, as view models: rows of the stitched tree with their
blocks rendered safely and folded, chunked so that a long trace opens fast."""

import hashlib
import itertools
import math
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import version as library_version
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from django.template import Context as TemplateContext
from django.template.loader import get_template
from django.templatetags.static import static
from django.urls import reverse

from explorer.access import actor
from explorer.render.content import arguments_html, content_html, output_html, safe
from explorer.render.context import Context
from explorer.render.effort import Effort
from explorer.render.fold import Budget
from explorer.render.json import json_html, pretty_json
from explorer.render.markdown import markdown_block
from explorer.render.snippet import highlighted, snippet
from explorer.render.text import size_label, visible_text
from explorer.templatetags.numbers import cost_text, duration_text, metadata_number, tokens_text
from explorer.trace_html import BODY, PageBlock, article_entry
from traces import jsontext, kinds
from traces.ingest.images import referenced_images
from traces.models import Annotation, Trace
from traces.order import ORPHANS
from traces.policy import Action, allows
from traces.rewards import reward_tone
from traces.selectors.annotations import block_label_names
from traces.selectors.blocks import (
    Item,
    StoredJson,
    trace_items_from,
    trace_orphans,
    turn_acts,
)
from traces.selectors.images import trace_image_types
from traces.selectors.search import search_words
from traces.services.block_renders import block_renders_save
from traces.validation import reward_of

CHUNK_ROWS = 150
# A chunk also ends once its rendered payload passes this many characters, so that a
# trace of large blocks still opens with a page of a few hundred kilobytes.
CHUNK_CHARS = 450_000
# ... and after this many blocks, even inside a row: a turn that made thousands of tool
# calls is shown in parts (each block costs about a millisecond to render).
CHUNK_BLOCKS = 500
BLOCK_OVERHEAD = 1_400  # the HTML around one block's payload, roughly
RAW_INLINE_CHARS = 1_500  # raw bigger than this is loaded on demand
META_VALUE_CHARS = 4_000  # a trace metadata value shows at most this much
META_PANEL_KEYS = 50  # ... and the panel its first keys (the rest: the /v1 resource)
ROLE_CLASSES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
ROLE_CLASSES.update({"tool": "tool", "function": "tool", "ipython": "tool"})


def _render_version() -> str:
    """The version of what the render cache holds (Block.rendered): a digest of the code
    and template that draw a block, and of the versions of the libraries they call, so
    that a deployment that changes how a block is drawn draws each block again."""
    here = Path(__file__).resolve().parent
    sources = [
        Path(__file__),
        *sorted((here / "render").glob("*.py")),
        here / "templatetags" / "names.py",
        here / "trace_html.py",  # the markup of the article the cache keeps
        here.parent / "templates" / "explorer" / "trace.html",
        Path(kinds.__file__),
        Path(jsontext.__file__),
    ]
    digest = hashlib.blake2b(digest_size=8)
    for path in sources:
        digest.update(path.read_bytes())
    for library in ("markdown-it-py", "mdurl", "nh3", "pygments", "orjson", "django"):
        digest.update(f"{library} {library_version(library)}".encode())
    return digest.hexdigest()


RENDER_VERSION = _render_version()  # 16 hex digits, how Block.rendered begins
_MARK_KEYS = re.compile(r'"(?:not_in_log|failure)"')  # the metadata `marks` reads


# --- View models -----------------------------------------------------------------------


@dataclass(slots=True)
class RewardView:
    url: str
    dom_id: str
    value: Any  # extra.reward as stored (any JSON)
    can_edit: bool
    error: str = ""
    entered: str = ""  # what the person typed, shown back with an error
    target: str = "block"
    # The thumbs' icon URLs: a page gives those it looked up once for all its controls.
    up_icon: str = ""
    down_icon: str = ""

    # The value as a number (None if it is none): made once, read by each state below.
    number: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not self.up_icon:
            self.up_icon, self.down_icon = static(THUMB_UP), static(THUMB_DOWN)
        value = self.value
        if value is None:  # most blocks' (a page makes one a block)
            return
        if isinstance(value, bool):
            self.number = 1.0 if value else 0.0
        elif isinstance(value, int | float) and math.isfinite(value):
            self.number = float(value)

    @property
    def is_set(self) -> bool:
        return self.value is not None

    @property
    def is_up(self) -> bool:
        return self.number == 1.0

    @property
    def is_down(self) -> bool:
        return self.number == 0.0

    # What the control's markup says of its state, each one lookup for the template
    # (a page draws this control on every block).

    @property
    def form_class(self) -> str:
        return (
            f"reward reward-{self.target}{' is-set' if self.is_set else ''}"
            f"{' has-error' if self.error else ''}"
        )

    @property
    def placeholder(self) -> str:
        return "number" if self.target == "trace" else "value"

    @property
    def display(self) -> str:
        if self.value is None:
            return ""
        number = self.number
        if number is None:
            return jsontext.dumps(self.value)[:40]
        return _number_text(number)

    @property
    def field_value(self) -> str:
        if self.error:
            return self.entered
        number = self.number
        if number is None:
            return ""
        return _number_text(number) if number == int(number) else repr(number)


THUMB_UP, THUMB_DOWN = "icons/thumb-up.svg", "icons/thumb-down.svg"


def _number_text(number: float) -> str:
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6g}"


# Slots: a page makes one of each a block it shows, and reads their fields as it draws.
@dataclass(slots=True)
class BlockView:
    id: str
    sub_type: str
    kind: str  # the kind's `view` (traces/kinds.py): CSS class k-<kind>, partial kind-<kind>
    label: str
    icon: str  # a path under static/
    head: dict[str, str]  # the kind's payload fields besides its body, as text
    body_key: str  # the payload key shown as the body ("delta" for a result's delta)
    body: Any  # SafeString
    folded: bool
    size: str
    badges: list[str]
    warnings: list[tuple[str, str]]  # (label, title), of its payload and metadata
    metadata: Any
    extra: Any
    raw: Any  # SafeString (inline), or None when loaded on demand
    raw_size: str
    has_raw: bool
    reward: RewardView
    has_text_view: bool = False  # its body is Markdown: it may be shown as plain text
    awaits_children: bool = False  # other kinds hang under it ("no result" when none do)
    role_class: str = ""
    tone: str = ""  # one of a few colours for free-text roles (agents of a team)
    cost: int = 0
    number: int | None = None  # the how-manieth block of the trace (Block.number)
    marks: list[tuple[str, str]] = field(default_factory=list)  # warnings of this response's
    labels: list[str] = field(default_factory=list)  # names of its failure labels
    without_text: bool = False  # a message with no text (a turn that only calls tools)
    is_error: bool = False  # a tool result its log flags as a tool error
    same_as: str = ""  # a call's tool and whole arguments, to group repeats (not its preview)
    # Its trace's page URL and its icon's, each looked up once a response (reverse and
    # static cost ~20 µs a call: several a block made a page's blocks cost twice as much).
    trace_url: str = ""
    icon_url: str = ""
    head_html: Any = ""  # SafeString: its kind's head partial, drawn (PageRenderer.head_html)
    # Whether the metadata, raw and extra drawer's contents are here; else the page loads
    # them when the drawer opens (the `drawer_body` partial of the block's view).
    drawer: bool = True
    in_url: str = ""  # its id as a path segment or query value (_in_url), if made already

    @property
    def kind_classes(self) -> str:
        """The classes of its <article> but "has-reward" (trace_html.HAS_REWARD)."""
        out = f"block k-{self.kind}"
        if self.role_class:
            out += f" role-{self.role_class}"
        return f"{out} {self.tone}" if self.tone else out

    @property
    def full_url(self) -> str:
        """The block's own view (`block-full`)."""
        return f"{self.trace_url}b/{self.in_url or _in_url(self.id)}/full"

    @property
    def permalink(self) -> str:
        """The trace page opened at this block."""
        return f"{self.trace_url}?focus={self.in_url or _in_url(self.id)}#{self.id}"


@dataclass
class ActView:
    block: BlockView
    results: list[BlockView] = field(default_factory=list)


@dataclass
class RowView:
    index: int
    message: BlockView | None  # None: the rest of a row begun in an earlier chunk
    acts: list[ActView]
    acts_from: int = 0  # the index of the first act shown
    acts_total: int = 0
    repeats: list["RowView"] = field(default_factory=list)  # the same call again, folded

    @property
    def repeat_errors(self) -> int:
        """How many of the folded repeats' results are tool errors (said on the fold)."""
        return sum(res.is_error for row in self.repeats for act in row.acts for res in act.results)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def acts_to(self) -> int:
        return self.acts_from + len(self.acts)

    @property
    def dom_id(self) -> str:
        if self.message is None:
            return f"row-{self.index}-{self.acts_from}"
        return f"row-{self.index}"


@dataclass
class Chunk:
    rows: list[RowView]
    end: int | None  # the row the next chunk starts at; None: the trace ends here
    end_act: int  # ... and the act of that row (0: its message)


# --- How each kind's body is drawn (traces/kinds.py names one per kind: `render`) -------

Body = tuple[str, list[str], list[tuple[str, str]]]  # HTML, badges, warnings (label, title)


def _content_body(value: Any, budget: Budget, ctx: Context, metadata: dict) -> Body:
    return content_html(value, budget, ctx), [], []


def _markdown_body(value: Any, budget: Budget, ctx: Context, metadata: dict) -> Body:
    if isinstance(value, str):
        return markdown_block(value, budget, ctx), [], []
    return json_html(value, budget), [], []


def _arguments_body(value: Any, budget: Budget, ctx: Context, metadata: dict) -> Body:
    warnings = []
    if "arguments_unparsed" in metadata or not isinstance(value, dict):
        reason = metadata.get("arguments_unparsed")
        warnings.append(("arguments are not JSON", reason if isinstance(reason, str) else ""))
    if metadata.get("arguments_missing") and "not_in_log" not in metadata:  # said once
        warnings.append(("no arguments given", ""))
    return arguments_html(value, budget), [], warnings


def _output_body(value: Any, budget: Budget, ctx: Context, metadata: dict) -> Body:
    html, badges = output_html(value, budget, ctx)
    return html, badges, []


BODY_RENDERERS: dict[str, Callable[[Any, Budget, Context, dict], Body]] = {
    "content": _content_body,
    "markdown": _markdown_body,
    "arguments": _arguments_body,
    "output": _output_body,
}
MARKDOWN_RENDERERS = frozenset({"content", "markdown"})  # bodies with a plain-text view


class PageRenderer:
    """Turns tree nodes into view models for one request."""

    def __init__(
        self, request, trace: Trace, *, fold: bool = True, as_text: bool = False,
        drawers: bool = True, annotations: list[Annotation] | None = None,
    ):  # fmt: skip
        """`drawers`: render each block's metadata, raw and extra (else the page loads
        them when a drawer opens). `annotations`: all of the trace's, if the caller read
        them (the blocks' labels are taken from them, not read again)."""
        self.trace = trace
        self.fold = fold
        self.drawers = drawers
        self.trace_url = reverse("trace", args=[trace.pk])
        self._static: dict[str, str] = {}
        self._heads: dict[str, Any] = {}
        # The context the kind partials render in, bound to the page's template (whose
        # engine says how a missing variable shows).
        self._head_context = TemplateContext(autoescape=True)
        self._head_context.template = get_template("explorer/trace.html").template
        self.can_edit = allows(actor(request), Action.WRITE, trace)
        self.ctx = Context(image_url=self.image_url, as_text=as_text)
        self.effort = Effort()  # one for the whole response (explorer/render/effort.py)
        self._renders: list[tuple[str, str]] = []  # (block id, Block.rendered) to keep
        self._prefixes: dict[str, str] = {}  # sub type -> _cache_prefix
        self._kinds: dict[str, tuple[bool, str]] = {}  # sub type -> _kind_facts
        self._thumbs = (self.static(THUMB_UP), self.static(THUMB_DOWN))
        self._annotations = annotations

    @cached_property
    def block_labels(self) -> dict[str, list[str]]:
        """Block id -> the names of its labels: one query a request."""
        return block_label_names(trace=self.trace, annotations=self._annotations)

    def image_url(self, sha: str) -> str:
        return reverse("trace-image", args=[self.trace.pk, sha])

    def head_html(self, view: BlockView) -> Any:
        """The block's head: the partial of its kind's `view`
        (explorer/trace.html#kind-<view>), looked up once a response."""
        partial = self._heads.get(view.kind)
        if partial is None:
            name = f"explorer/trace.html#kind-{view.kind}"
            partial = self._heads[view.kind] = get_template(name).template
        with self._head_context.push(b=view):
            return safe(partial.render(self._head_context))

    def static(self, path: str) -> str:
        """The URL of a static file, looked up once a response."""
        url = self._static.get(path)
        if url is None:
            url = self._static[path] = static(path)
        return url

    def load_image_types(self, nodes: list[dict[str, Any]]) -> None:
        """One query for the types of the images these blocks show."""
        shas: set[str] = set()
        for node in nodes:
            if self._cached(node) is not None:
                continue  # the cache holds no block that shows a stored image
            payload = node.get("payload")
            # A stored payload's references are found in its text, without decoding it.
            shas |= referenced_images(payload.text if isinstance(payload, StoredJson) else payload)
        if shas:  # (most calls: none, for every block is kept or shows no image)
            shas.difference_update(self.ctx.image_types)
        if shas:
            self.ctx.image_types.update(trace_image_types(trace=self.trace, shas=shas))

    def budget(self) -> Budget:
        return Budget(effort=self.effort) if self.fold else self.unlimited()

    def unlimited(self) -> Budget:
        return Budget.unlimited(self.effort)

    def reward(self, node: dict[str, Any]) -> RewardView:
        return self._reward(node["id"], _in_url(node["id"]), node.get("extra"))

    def _reward(self, block_id: str, in_url: str, extra: Any) -> RewardView:
        """`reward` of a block whose id in a URL (`_in_url`) is made already."""
        value = extra.get("reward") if isinstance(extra, dict) else None
        return RewardView(
            url=f"{self.trace_url}b/{in_url}/reward",
            dom_id=f"reward-{block_id}",
            value=value,
            can_edit=self.can_edit,
            up_icon=self._thumbs[0],
            down_icon=self._thumbs[1],
        )

    def decoded(self, stored: Any) -> tuple[Any, bool]:
        """A field of a block as the page needs it (decoded from its stored text if the
        response may still decode it: explorer/render/effort.py); False if it may not."""
        if not isinstance(stored, StoredJson):
            return stored, True
        if not self.effort.may_decode(stored.text):
            return None, False
        return stored.decode(), True

    def too_large(self, node: dict[str, Any]) -> BlockView:
        """A block too large to decode once the response has spent its formatting time:
        its size, and a link to it alone."""
        kind = kinds.BY_SUB_TYPE[node["sub_type"]]
        # Its size: of its payload, or of what was too large when the payload was not read.
        stored = [node.get(name) for name in ("payload", "metadata", "extra")]
        chars = max((len(v.text) for v in stored if isinstance(v, StoredJson)), default=0)
        size = size_label(chars) if chars else ""
        url = f"{self.trace_url}b/{_in_url(node['id'])}/full"
        body = (
            f'<p class="no-text">A large block ({size}): '
            f'<a href="{url}">open it alone</a> to see it.</p>'
        )
        view = BlockView(
            id=node["id"], sub_type=kind.sub_type, kind=kind.view, label=kind.label,
            icon=kind.icon, head={}, body_key=kind.body[0], body=safe(body), folded=True,
            size=size, badges=[], warnings=[], metadata=safe(""), extra=safe(""), raw=None,
            raw_size="", has_raw=False, reward=self.reward({"id": node["id"]}),
            awaits_children=bool(kinds.children_of(kind.sub_type)), cost=len(body),
            number=node.get("number"), trace_url=self.trace_url,
            icon_url=self.static(kind.icon), drawer=self.drawers,
        )  # fmt: skip
        view.head_html = self.head_html(view)
        return view

    @property
    def caching(self) -> bool:
        """Whether this response draws blocks as the trace page does by default (folded,
        Markdown as Markdown): what the render cache holds."""
        return self.fold and not self.ctx.as_text

    def block(self, node: dict[str, Any]) -> BlockView:
        """The block's view: what does not depend on the reader from the render cache
        when it holds it (Block.rendered, read with the page's rows), else drawn now (and
        kept for the next page: `save_renders`); the rest (reward, labels, warnings
        about the trace, links, drawer) drawn for this response."""
        cached = self._cached(node)
        if cached is not None:
            if not self.drawers:  # the trace page: the block's article, as kept
                found = self._page_block(node, cached)
                if found is not None:
                    return found
            # None: its metadata or extra is too large to decode now.
            return self._from_cache(node, cached) or self.too_large(node)
        limits = self.effort.limits
        fields = {}
        for name in ("payload", "metadata", "extra"):
            fields[name], ok = self.decoded(node.get(name))
            if not ok:
                return self.too_large(node)
        payload = fields["payload"]
        payload = payload if isinstance(payload, dict) else {"value": payload}
        kind = kinds.BY_SUB_TYPE[node["sub_type"]]
        metadata = fields["metadata"] if isinstance(fields["metadata"], dict) else {}
        drawn = self._drawn(payload, metadata, kind)
        view = self._view(node, drawn, metadata, fields["extra"])
        view.head_html = drawn["head_html"] = self.head_html(view)
        if "rendered" in node and self.caching and self.effort.limits == limits:
            # Drawn as any response would draw it (the effort allowance did not make it
            # plainer), and showing no stored image (whose type a later upload may give).
            payload_text = node["payload"].text if isinstance(node["payload"], StoredJson) else ""
            if payload_text and not referenced_images(payload_text):
                self._renders.append((node["id"], self._entry(kind, view, drawn)))
        return view

    def _entry(self, kind: kinds.BlockKind, view: BlockView, drawn: dict[str, Any]) -> str:
        """The render cache's entry of a block, three parts: what the trace page reads of it
        (`_facts`) as JSON, a line break; its fields as JSON (what the other ways of drawing
        a block read: `_from_cache`), a line break; and its <article> on the trace page with
        its body in it (no JSON escapes to write or read in the largest part), less what
        the response adds (trace_html.article_entry)."""
        article, cuts = article_entry(view)
        fields = {k: v for k, v in drawn.items() if k != "body"}
        facts = {
            "cuts": cuts,
            # What the article took from the block and the site besides its fields (a
            # trace renumbered, a site moved): a page draws anew from the fields if they
            # differ.
            "number": view.number,
            "at": view.trace_url,
            "icon": view.icon_url,
            "without_text": drawn["without_text"],
            "same_as": drawn["same_as"],
        }
        dumps = jsontext.dumps
        return f"{self._cache_prefix(kind)}{dumps(facts)}\n{dumps(fields)}\n{article}"

    def draws(self, node: dict[str, Any]) -> bool:
        """Whether the response draws the block from its payload (the cache does not
        hold it)."""
        return self._cached(node) is None

    def _cached(self, node: dict[str, Any]) -> str | None:
        """The render cache's entry of the block (its JSON), if it is of this version
        (looked at once a node)."""
        if "cached" in node:
            return node["cached"]
        cached = node.get("rendered")
        if cached and self.caching:
            prefix = self._cache_prefix(kinds.BY_SUB_TYPE[node["sub_type"]])
            cached = cached[len(prefix) :] if cached.startswith(prefix) else None
        else:
            cached = None
        node["cached"] = cached
        return cached

    def _cache_prefix(self, kind: kinds.BlockKind) -> str:
        """What a render cache entry of a block of this kind begins with: RENDER_VERSION,
        and a digest of what its kind's row says of its drawing (the table is data)."""
        found = self._prefixes.get(kind.sub_type)
        if found is None:
            row = (kind.sub_type, kind.label, kind.icon, kind.view, kind.body, kind.render)
            digest = zlib.crc32(repr((*row, kind.fields)).encode())
            found = self._prefixes[kind.sub_type] = f"{RENDER_VERSION}{digest:08x}"
        return found

    def _from_cache(self, node: dict[str, Any], cached: str) -> BlockView | None:
        """The view of a block the render cache holds; None if its metadata or extra is
        too large to decode now."""
        facts, fields, article = _entry_parts(cached)
        drawn = orjson.loads(fields)
        cuts = facts["cuts"]
        drawn["body"] = article[cuts[BODY] : cuts[BODY + 1]]
        metadata, extra = self._reader_fields(node)
        if metadata is False:
            return None
        view = self._view(node, drawn, metadata, extra)
        view.head_html = safe(drawn["head_html"])
        if "number" in node and not self._kept_here(facts, view.number, view.icon_url):
            # Its article was kept for another number or address: kept again as drawn now.
            kind = kinds.BY_SUB_TYPE[node["sub_type"]]
            self._renders.append((node["id"], self._entry(kind, view, drawn)))
        return view

    def _page_block(self, node: dict[str, Any], cached: str) -> PageBlock | None:
        """The block as the trace page draws it from its kept article, and what this
        response adds; None if the article is not of this page (a trace renumbered, a
        site moved) or the block's metadata or extra is too large to decode now."""
        facts, _, article = _entry_parts(cached)
        kind = kinds.BY_SUB_TYPE[node["sub_type"]]
        awaits_children, icon_url = self._kind_facts(kind)
        number = node.get("number")
        if not self._kept_here(facts, number, icon_url):
            return None
        metadata, extra = self._reader_fields(node)
        if metadata is False:
            return None
        cuts = facts["cuts"]
        block_id = node["id"]
        return PageBlock(
            id=block_id,
            sub_type=kind.sub_type,
            number=number,
            html=article,
            cuts=cuts,
            reward=self._reward(block_id, _in_url(block_id), extra),
            marks=self.marks(node, metadata),
            labels=self.block_labels.get(block_id, []),
            cost=_cost(node, cuts[BODY + 1] - cuts[BODY]),
            trace_url=self.trace_url,
            without_text=facts["without_text"],
            same_as=facts["same_as"],
            awaits_children=awaits_children,
            is_error=bool(node.get("is_error")),
        )

    def _kept_here(self, facts: dict[str, Any], number: int | None, icon_url: str) -> bool:
        """Whether a kept article was drawn for this block number, this trace's address
        and this icon's (`_entry`)."""
        return (facts["number"], facts["at"], facts["icon"]) == (number, self.trace_url, icon_url)

    def _reader_fields(self, node: dict[str, Any]) -> tuple[Any, Any]:
        """The block's metadata and extra as far as what a response adds to a kept block
        reads them (the marks' metadata keys, the extra's reward), decoded only if it
        does; (False, None) if they are too large to decode now."""
        metadata, extra = node.get("metadata"), node.get("extra")
        if isinstance(metadata, StoredJson) and not _MARK_KEYS.search(metadata.text):
            metadata = None
        if isinstance(extra, StoredJson) and '"reward"' not in extra.text:
            extra = None
        metadata, ok = self.decoded(metadata)
        extra, ok_extra = self.decoded(extra) if ok else (None, False)
        if not ok_extra:
            return False, None
        return (metadata if isinstance(metadata, dict) else {}), extra

    def _drawn(
        self, payload: dict[str, Any], metadata: dict[str, Any], kind: kinds.BlockKind
    ) -> dict[str, Any]:
        """What the page draws of a block from its payload and metadata alone, which are
        written once (the render cache's entry, as JSON)."""
        budget = self.budget()
        body_key = next((key for key in kind.body if key in payload), kind.body[0])
        value = payload.get(body_key)
        body, badges, warnings = BODY_RENDERERS[kind.render](value, budget, self.ctx, metadata)
        head = {
            key: v if isinstance(v, str) else jsontext.dumps(v)
            for key, v in payload.items()
            if key in kind.fields and key not in kind.body and v is not None
        }
        role = head.get("role", "")
        whose = role  # whose colour the block takes: its role's, or its thinker's
        thought_of = metadata.get("thought_of")  # a user simulator's reasoning, say
        if isinstance(thought_of, str) and thought_of:
            head["thought_of"] = whose = thought_of
        if role == "system" and self.fold and value:
            # A system prompt is read once: folded, a click away (issue 11 item 4).
            body = (
                f'<details class="system-fold"><summary>system prompt '
                f"({size_label(jsontext.byte_size(value))})</summary>{body}</details>"
            )
        fields = {k: v for k, v in payload.items() if k not in kind.fields}
        if fields:
            body += '<div class="more-fields"><span class="lane-note">other fields</span>'
            body += json_html(fields, budget) + "</div>"
        return {
            "body": body,
            "folded": budget.folded,
            "size": size_label(jsontext.byte_size(value)) if value is not None else "0 B",
            "badges": badges,
            "warnings": warnings,
            "head": head,
            "body_key": body_key,
            "role_class": ROLE_CLASSES.get(whose.lower(), "other") if whose else "",
            "tone": _tone(whose) if whose and whose.lower() not in ROLE_CLASSES else "",
            "without_text": kind.render == "content" and value in (None, ""),
            "same_as": _call_key(head.get("name"), value) if kind.sub_type == "TOOL_CALL" else "",
        }

    def _view(
        self, node: dict[str, Any], drawn: dict[str, Any], metadata: Any, extra: Any
    ) -> BlockView:
        """The BlockView of what `_drawn` drew and of what this response adds."""
        kind = kinds.BY_SUB_TYPE[node["sub_type"]]
        metadata = metadata if isinstance(metadata, dict) else {}
        extra = extra if extra is not None else {}
        drawer = self._drawer(metadata, extra, node.get("raw")) if self.drawers else None
        awaits_children, icon_url = self._kind_facts(kind)
        block_id = node["id"]
        in_url = _in_url(block_id)  # once: the reward's URL, the block's and its permalink
        return BlockView(
            id=block_id,
            sub_type=kind.sub_type,
            kind=kind.view,
            label=kind.label,
            icon=kind.icon,
            head=drawn["head"],
            body_key=drawn["body_key"],
            body=safe(drawn["body"]),
            folded=drawn["folded"],
            size=drawn["size"],
            badges=drawn["badges"],
            warnings=[*map(tuple, drawn["warnings"])],
            marks=self.marks(node, metadata),
            **(drawer or _NO_DRAWER),
            reward=self._reward(block_id, in_url, extra),
            labels=self.block_labels.get(block_id, []),
            has_text_view=kind.render in MARKDOWN_RENDERERS,
            awaits_children=awaits_children,
            role_class=drawn["role_class"],
            tone=drawn["tone"],
            cost=_cost(node, len(drawn["body"])),
            number=node.get("number"),
            without_text=drawn["without_text"],
            is_error=bool(node.get("is_error")),
            same_as=drawn["same_as"],
            trace_url=self.trace_url,
            icon_url=icon_url,
            drawer=drawer is not None,
            in_url=in_url,
        )

    def _kind_facts(self, kind: kinds.BlockKind) -> tuple[bool, str]:
        """Whether other kinds hang under blocks of this kind, and its icon's URL: once
        a response."""
        found = self._kinds.get(kind.sub_type)
        if found is None:
            awaits = bool(kinds.children_of(kind.sub_type))
            found = self._kinds[kind.sub_type] = (awaits, self.static(kind.icon))
        return found

    def save_renders(self) -> None:
        """Keep what this response drew for the next (the render cache)."""
        renders, self._renders = self._renders, []
        block_renders_save(trace=self.trace, renders=renders)

    def marks(self, node: dict[str, Any], metadata: dict) -> list[tuple[str, str]]:
        """Warnings the format gave this block: a stand-in for what the log lost (an
        adapter's), a tool error (Block.is_error), the step a failure attribution names
        (traces/ingest/failure.py; its reason as the title)."""
        out = []
        if isinstance(metadata.get("not_in_log"), str):
            out.append(("not in the log", visible_text(metadata["not_in_log"][:500])))
        if node.get("is_error"):
            out.append(("tool error", "the tool reported an error (as the log says)"))
        if metadata.get("failure") is True:
            failure = (
                self.trace.metadata.get("failure")
                if isinstance(self.trace.metadata, dict)
                else None
            )
            failure = failure if isinstance(failure, dict) else {}
            agent, reason = failure.get("agent"), failure.get("reason")
            why = visible_text(" - ".join(str(x) for x in (agent, reason) if x)[:500])
            if isinstance(failure.get("step"), int):  # the log counts from 0, rows from 1
                why = f"the log's step {failure['step']} (counted from 0). {why}".strip()
            out.append(("failure starts here", why or "the log names this step as the failure's"))
        return out

    def _drawer(self, metadata: Any, extra: Any, stored_raw: Any) -> dict[str, Any]:
        """The BlockView fields of the metadata, raw and extra drawer."""
        raw_html, raw_size, has_raw = None, "", stored_raw is not None
        if has_raw:
            if isinstance(stored_raw, StoredJson):
                raw_text_len = len(stored_raw.text)
            else:
                raw_text_len = len(jsontext.dumps(stored_raw))
            raw_size = size_label(raw_text_len)
            if not self.fold or raw_text_len <= RAW_INLINE_CHARS:
                raw, ok = self.decoded(stored_raw)
                if ok:
                    raw_html = safe(json_html(raw, self.unlimited(), css="drawer-json"))
        return {
            "metadata": safe(json_html(metadata, self.budget(), css="drawer-json")),
            "extra": safe(json_html(extra, self.budget(), css="drawer-json")),
            "raw": raw_html,
            "raw_size": raw_size,
            "has_raw": has_raw,
        }

    def act(self, node: dict[str, Any]) -> ActView:
        self.load_image_types([node, *node.get("children", [])])
        act = ActView(self.block(node))
        act.results = [self.block(result) for result in node.get("children", [])]
        return act

    def rows(self, items: Iterator[Item], start: int, at_least: int = 0) -> Chunk:
        """Rows from the stream `items` (stitched order, from row `start` or from an act
        of it) until a chunk's size; where the next chunk starts. Reads only as many
        items as it shows, and one more."""
        chunk = Chunk([], None, 0)
        spent = blocks = 0
        row: RowView | None = None
        for turn, act, node in items:
            full = spent >= CHUNK_CHARS or blocks >= CHUNK_BLOCKS
            if act == 0:  # a message: a new row
                if turn >= start + at_least and (
                    len(chunk.rows) >= CHUNK_ROWS or (chunk.rows and full)
                ):
                    chunk.end, chunk.end_act = turn, 0
                    break
                self.load_image_types([node])
                message = self.block(node)
                row = RowView(turn, message, [])
                chunk.rows.append(row)
                spent, blocks = spent + message.cost, blocks + 1
                continue
            if row is None or row.index != turn:  # the rest of a row begun before
                row = RowView(turn, None, [], act - 1)
                chunk.rows.append(row)
            elif row.acts and full:
                chunk.end, chunk.end_act = turn, act - 1  # the chunk ends inside this row
                break
            shown = self.act(node)
            if not row.acts and row.message is not None and row.message.without_text:
                row.message.body = safe("")  # a turn that only calls tools shows its calls
            row.acts.append(shown)
            spent += shown.block.cost + sum(res.cost for res in shown.results)
            blocks += 1 + len(shown.results)
        for shown_row in chunk.rows:
            shown_row.acts_total = shown_row.acts_to
        chunk.rows = group_repeats(chunk.rows)
        return chunk


def _entry_parts(cached: str) -> tuple[dict[str, Any], str, str]:
    """A render cache entry (`PageRenderer._entry`, its version's prefix cut): its facts
    (decoded), its fields (as JSON) and its article. (No JSON text holds a line break.)"""
    first = cached.index("\n")
    second = cached.index("\n", first + 1)
    return orjson.loads(cached[:first]), cached[first + 1 : second], cached[second + 1 :]


def group_repeats(rows: list[RowView]) -> list[RowView]:
    """Turns that only make the same call as the turn before (same tool, same arguments)
    fold under the first of them, which shows how many there are ("x 7")."""
    out: list[RowView] = []
    for row in rows:
        lead = out[-1] if out else None
        if lead is not None and _same_call(lead, row):
            lead.repeats.append(row)
        else:
            out.append(row)
    return out


def _same_call(lead: RowView, row: RowView) -> bool:
    if lead.message is None or row.message is None or len(lead.acts) != 1 or len(row.acts) != 1:
        return False
    if not (lead.message.without_text and row.message.without_text):
        return False
    a, b = lead.acts[0].block, row.acts[0].block
    return a.sub_type == b.sub_type == "TOOL_CALL" and a.same_as == b.same_as != ""


# A block whose drawer is loaded when it opens.
_NO_DRAWER = {"metadata": "", "extra": "", "raw": None, "raw_size": "", "has_raw": False}


_URL_SAFE = re.compile(r"[A-Za-z0-9_.~-]+")


def _in_url(block_id: str) -> str:
    """A block id as a path segment or query value (ours need no quoting: looked at
    first, which costs a tenth of quoting)."""
    return block_id if _URL_SAFE.fullmatch(block_id) else quote(block_id, safe="")


def _cost(node: dict[str, Any], body_chars: int) -> int:
    """What a block counts for toward a chunk's CHUNK_CHARS: its body, its markup, and
    its drawer as its stored JSON (rendered here or not)."""
    return (
        body_chars
        + BLOCK_OVERHEAD
        + _stored_chars(node.get("metadata"))
        + _stored_chars(node.get("extra"))
    )


def _stored_chars(value: Any) -> int:
    if value is None:
        return 0
    return len(value.text) if isinstance(value, StoredJson) else len(jsontext.dumps(value))


def _call_key(name: Any, arguments: Any) -> str:
    """A digest of a call's tool and whole arguments (its call id aside): equal only for
    the same call, whatever its preview shows."""
    text = jsontext.dumps([name, arguments])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _tone(role: str) -> str:
    """A stable colour for a free-text role, so each agent of a team keeps its own.
    The agent's name comes first ("Orchestrator (thought)" goes with "Orchestrator")."""
    agent = re.split(r"[\s(:]", role.strip(), maxsplit=1)[0].lower()
    return f"tone-{zlib.crc32(agent.encode()) % 6}"


def chunk_from(renderer: PageRenderer, start: int, acts_from: int = 0, at_least: int = 0) -> Chunk:
    """The chunk that starts at row `start`, act `acts_from` (0-based; 0: the message)."""
    items = trace_items_from(
        trace=renderer.trace,
        turn=start,
        act=acts_from + 1 if acts_from else 0,
        decode="lazy",
        numbered=True,
        # The page's read: a block's payload only if it is drawn anew (not in the cache).
        drawn=None if renderer.drawers else renderer.draws,
    )
    try:
        chunk = renderer.rows(items, start, at_least=at_least)
    finally:
        items.close()
    renderer.save_renders()
    return chunk


def chunk_around(renderer: PageRenderer, place: tuple[int, int]) -> tuple[Chunk, int, int]:
    """The chunk that shows the block at `place` (row, act), and where it starts: the
    first chunk if it reaches the block, else one that starts two rows before it (earlier
    rows are a link away), else, in a long row, two acts before it. Each try reads one
    chunk's blocks, never what lies before it."""
    row, act = place
    tries = [(max(0, row - 2), 0, min(row, 2) + 1), (row, max(0, act - 2), 1)]
    if row < CHUNK_ROWS:  # the first chunk may reach it: then the page opens as usual
        tries.insert(0, (0, 0, 0))
    for start, acts_from, at_least in dict.fromkeys(tries):
        chunk = chunk_from(renderer, start, acts_from, at_least=at_least)
        if chunk.end is None or (chunk.end, chunk.end_act) > (row, act):
            break
    return chunk, start, acts_from


def chunk_context(
    renderer: PageRenderer, row_total: int, start: int, chunk: Chunk | None = None,
    acts_from: int = 0,
) -> dict[str, Any]:  # fmt: skip
    if chunk is None:
        chunk = chunk_from(renderer, start, acts_from)
    trace = renderer.trace
    done = chunk.end is None
    end, end_act = (row_total, 0) if done else (chunk.end, chunk.end_act)
    for row in chunk.rows:  # a row the chunk shows in part: how many acts it has in all
        if row.message is None or (not done and row is chunk.rows[-1] and end == row.index):
            row.acts_total = turn_acts(trace=trace, turn=row.index)
    orphans = []
    if done:
        nodes = trace_orphans(trace=trace, decode="lazy")
        renderer.load_image_types(nodes)
        orphans = [renderer.block(node) for node in nodes]
    # The next chunk is the page from where this one ends: htmx asks for its `chunk`
    # partial, a browser without JavaScript opens it at the first row it shows.
    next_url = f"{reverse('trace', args=[trace.pk])}?after={end}"
    next_url += f"&acts={end_act}" if end_act else ""
    anchor = f"row-{end}" + (f"-{end_act}" if end_act else "")
    next_acts_total = 0
    if end_act:
        last = chunk.rows[-1] if chunk.rows else None
        next_acts_total = last.acts_total if last and last.index == end else 0
    return {
        "rows": chunk.rows,
        "next_after": None if done else end,
        "next_acts": end_act,
        "next_acts_total": next_acts_total,
        "more_url": next_url,
        "next_page_url": f"{next_url}#{anchor}",
        "row_total": row_total,
        "next_last": min(row_total, end + CHUNK_ROWS),
        "orphans": orphans,
        "done": done,
    }


# --- The outline: the whole trace a page of turns at a time, and search hits ---------

OUTLINE_TURNS = 200  # turns an outline page lists
HITS = 100  # search hits listed
_ROLE = re.compile(r'"role":"((?:[^"\\]|\\.){0,80})"')
_NAME = re.compile(r'"name":"((?:[^"\\]|\\.){0,128})"')
_TEXT = re.compile(r'"(?:content|text|output|delta)":"((?:[^"\\]|\\.)*)')
PREVIEW_CHARS = 90


def _json_string(fragment: str) -> str:
    """The text of a JSON string cut anywhere (the start of a stored payload)."""
    for cut in range(len(fragment), max(-1, len(fragment) - 7), -1):
        try:
            return jsontext.loads(f'"{fragment[:cut]}"')
        except (jsontext.JsonError, ValueError):
            continue
    return ""


@dataclass
class OutlineRow:
    index: int
    block_id: str
    number: int | None
    role: str
    preview: str
    tools: list[str] = field(default_factory=list)
    thinks: int = 0
    results: int = 0
    errors: int = 0
    rewards: list[str] = field(default_factory=list)

    @property
    def row_number(self) -> int:
        return self.index + 1


def outline_rows(rows: list[tuple]) -> list[OutlineRow]:
    """One entry a turn, from trace_outline_rows: the message's role and first words,
    its tool calls, thinks, results, results that look like errors, and rewards."""
    out: list[OutlineRow] = []
    for block_id, turn, act, step, sub_type, number, head, extra, is_error in rows:
        head = head or ""
        if act == 0 and step == 0:
            role = _ROLE.search(head)
            text = _TEXT.search(head)
            preview = visible_text(_json_string(text[1]) if text else "")[:PREVIEW_CHARS]
            role_text = visible_text(_json_string(role[1])) if role else ""
            out.append(OutlineRow(turn, block_id, number, role_text, preview))
        if not out or out[-1].index != turn:
            continue
        entry = out[-1]
        if sub_type == "TOOL_CALL":
            name = _NAME.search(head)
            entry.tools.append(visible_text(_json_string(name[1])) if name else "?")
        elif sub_type == "THINK":
            entry.thinks += 1
        elif step:
            entry.results += 1
            entry.errors += is_error
        reward = extra.get("reward") if isinstance(extra, dict) else None
        if reward is not None:
            entry.rewards.append(jsontext.dumps(reward)[:12])
    return out


def usage_stats(trace: Trace) -> list[tuple[str, str, str]]:
    """The trace's usage figures for its head, as the trace list shows them: (value,
    what it is, its detail on hover), for those the trace has."""
    out = []
    tokens, detail = tokens_text(trace)
    if tokens:
        out.append((tokens, "tokens", detail))
    if trace.cost_usd is not None:
        out.append((cost_text(trace.cost_usd), "cost", f"{trace.cost_usd!r} USD"))
    if trace.duration_seconds is not None:
        seconds = trace.duration_seconds
        out.append((duration_text(seconds), "duration", f"{seconds!r} s"))
    return out


@dataclass
class Hit:
    block_id: str
    index: int
    sub_type: str
    number: int | None
    snippet: Any = ""  # SafeString: where the block matches, the words marked

    @property
    def row_number(self) -> int:
        return self.index + 1


def hits_of(found: list[tuple], text: str) -> list[Hit]:
    """find-in-trace's entries (traces.selectors.blocks.trace_block_hits), each with the
    piece of its block where it matches."""
    words = search_words(text)
    return [
        Hit(block_id, index, sub_type, number, highlighted(snippet(hit), words))
        for block_id, index, sub_type, number, hit in found
    ]


# --- Pages -----------------------------------------------------------------------------


class BlockCounts(dict):
    """How many blocks of each sub type the stitched tree holds (orphans aside)."""

    orphans: int = 0

    @property
    def by_kind(self) -> list[tuple[kinds.BlockKind, int]]:
        return [(kind, self[kind.sub_type]) for kind in kinds.KINDS]

    @property
    def lanes(self) -> dict[str, int]:
        found = dict.fromkeys(kinds.LANES, 0)
        for kind in kinds.KINDS:
            found[kind.lane] += self[kind.sub_type]
        return found


def block_counts(trace: Trace) -> BlockCounts:
    """The trace's counts per kind, as its writes keep them (traces/order.py)."""
    stored = trace.block_counts if isinstance(trace.block_counts, dict) else {}
    counts = BlockCounts.fromkeys(kinds.SUB_TYPES, 0)
    counts.update({k: v for k, v in stored.items() if k in counts and isinstance(v, int)})
    counts.orphans = stored.get(ORPHANS, 0) if isinstance(stored.get(ORPHANS), int) else 0
    return counts


@dataclass
class MetaItem:
    key: str
    text: str
    long: bool
    exact: str = ""  # a number's value as stored, when the chip shows it rounded


def meta_items(metadata: Any) -> list[MetaItem]:
    """The first META_PANEL_KEYS keys, values cut at META_VALUE_CHARS (harden F3: a trace
    with thousands of keys made a page of megabytes); the rest is a link away."""
    if not isinstance(metadata, dict):
        if not metadata:
            return []
        text = jsontext.dumps(metadata)
        if len(text) > META_VALUE_CHARS:
            text = text[:META_VALUE_CHARS] + f"… ({size_label(len(text.encode()))} in all)"
        return [MetaItem("value", visible_text(text), True)]
    items = []
    for key, value in itertools.islice(metadata.items(), META_PANEL_KEYS):
        text = value if isinstance(value, str) else jsontext.dumps(value)
        shown = metadata_number(key, value)  # $0.1304, 3 min 50 s: the exact value on hover
        if shown is not None and shown != text:
            items.append(MetaItem(visible_text(str(key)[:200]), shown, False, text))
            continue
        if len(text) > 80 and isinstance(value, dict | list):
            text = pretty_json(value)  # folded under its first words, indented when opened
        if len(text) > META_VALUE_CHARS:
            text = text[:META_VALUE_CHARS] + f"… ({size_label(len(text.encode()))} in all)"
        items.append(MetaItem(visible_text(str(key)[:200]), visible_text(text), len(text) > 80))
    return items


def meta_hidden(metadata: Any) -> int:
    """How many keys `meta_items` does not show."""
    return max(0, len(metadata) - META_PANEL_KEYS) if isinstance(metadata, dict) else 0


def trace_reward(trace: Trace, can_edit: bool, **more) -> RewardView:
    extra = trace.extra if isinstance(trace.extra, dict) else {}
    return RewardView(
        url=reverse("trace-reward", args=[trace.pk]),
        dom_id="reward-trace",
        value=extra.get("reward"),
        can_edit=can_edit,
        target="trace",
        **more,
    )


def reward_summary(trace: Trace) -> dict[str, str]:
    """The trace's reward column as the header shows it, and where it comes from."""
    if trace.reward is None:
        return {"reward_text": "", "reward_tone": "", "reward_source": ""}
    extra = trace.extra if isinstance(trace.extra, dict) else {}
    reward = trace.reward
    return {
        "reward_text": _number_text(reward),
        "reward_tone": reward_tone(reward),
        # The column takes extra.reward only when it counts as a number (reward_of).
        "reward_source": "annotation" if reward_of(extra.get("reward")) is not None else "metadata",
    }


def trace_title(trace: Trace) -> str:
    return trace.name or f"Trace #{trace.index}"
