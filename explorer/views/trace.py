"""The trace page: spec/004's stitched tree in three lanes, MESSAGE | ACT | OBSERVE.

One request reads the trace's tree once and renders only the rows it shows: the first
chunk on the page, the next chunks through `/more` (htmx, or a plain link). Long
payloads are folded to a preview; `/b/<block>/full` renders one block whole. Rewards
are written through the services (`trace_patch`, `block_extra_patch`).
"""

import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from explorer import rendering as r
from traces import jsontext
from traces.errors import NotFound
from traces.ingest.images import referenced_images
from traces.models import Block, Image, Trace
from traces.selectors.access import can_annotate, trace_for_user
from traces.selectors.blocks import trace_tree_get
from traces.services.annotations import block_extra_patch
from traces.services.traces import trace_patch

TEMPLATE = "explorer/trace.html"
CHUNK_ROWS = 150
# A chunk also ends once its rendered payload passes this many characters, so that a
# trace of large blocks still opens with a page of a few hundred kilobytes.
CHUNK_CHARS = 450_000
BLOCK_OVERHEAD = 1_400  # the HTML around one block's payload, roughly
RAW_INLINE_CHARS = 1_500  # raw bigger than this is loaded on demand
META_VALUE_CHARS = 4_000  # a trace metadata value shows at most this much
ROLE_CLASSES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
ROLE_CLASSES.update({"tool": "tool", "function": "tool", "ipython": "tool"})
_BLOCK_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


# --- Access ----------------------------------------------------------------------------


def _trace(request, trace_id: str) -> Trace:
    try:
        return trace_for_user(user=request.user, trace_id=trace_id)
    except NotFound:
        raise Http404("no such trace") from None


def _block(trace: Trace, block_id: str) -> Block:
    found = Block.objects.filter(trace=trace, id=block_id).first()
    if found is None:
        raise Http404("no such block")
    return found


# --- View models -----------------------------------------------------------------------


@dataclass
class RewardView:
    url: str
    dom_id: str
    value: Any  # extra.reward as stored (any JSON)
    can_edit: bool
    error: str = ""
    entered: str = ""  # what the person typed, shown back with an error
    target: str = "block"

    @property
    def number(self) -> float | None:
        value = self.value
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
        return None

    @property
    def is_set(self) -> bool:
        return self.value is not None

    @property
    def is_up(self) -> bool:
        return self.number == 1.0

    @property
    def is_down(self) -> bool:
        return self.number == 0.0

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


def _number_text(number: float) -> str:
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6g}"


@dataclass
class BlockView:
    id: str
    sub_type: str
    kind: str  # message / think / call / result
    body: Any  # SafeString
    folded: bool
    size: str
    badges: list[str]
    warnings: list[tuple[str, str]]  # (label, title)
    metadata: Any
    extra: Any
    raw: Any  # SafeString (inline), or None when loaded on demand
    raw_size: str
    has_raw: bool
    reward: RewardView
    role: str = ""
    role_class: str = ""
    tone: str = ""  # one of a few colours for free-text roles (agents of a team)
    name: str = ""
    tool_name: str = ""
    call_id: str = ""
    seq: Any = None
    is_delta: bool = False
    cost: int = 0


@dataclass
class ActView:
    block: BlockView
    results: list[BlockView] = field(default_factory=list)


@dataclass
class RowView:
    index: int
    message: BlockView
    acts: list[ActView]

    @property
    def number(self) -> int:
        return self.index + 1


class PageRenderer:
    """Turns tree nodes into view models for one request."""

    def __init__(self, request, trace: Trace, *, fold: bool = True, as_text: bool = False):
        self.trace = trace
        self.fold = fold
        self.can_edit = can_annotate(user=request.user, organization=trace.organization)
        self.ctx = r.Context(image_url=self.image_url, as_text=as_text)

    def image_url(self, sha: str) -> str:
        return reverse("trace-image", args=[self.trace.pk, sha])

    def load_image_types(self, nodes: list[dict[str, Any]]) -> None:
        """One query for the types of the images these blocks show."""
        shas: set[str] = set()
        for node in nodes:
            shas |= referenced_images(node.get("payload"))
        shas -= set(self.ctx.image_types)
        if shas:
            rows = Image.objects.filter(sha256__in=shas).values_list("sha256", "mime_type")
            self.ctx.image_types.update(rows)

    def budget(self) -> r.Budget:
        return r.Budget() if self.fold else r.Budget.unlimited()

    def reward(self, node: dict[str, Any]) -> RewardView:
        extra = node.get("extra")
        value = extra.get("reward") if isinstance(extra, dict) else None
        return RewardView(
            url=reverse("block-reward", args=[self.trace.pk, node["id"]]),
            dom_id=f"reward-{node['id']}",
            value=value,
            can_edit=self.can_edit,
        )

    def block(self, node: dict[str, Any]) -> BlockView:
        payload = node.get("payload")
        payload = payload if isinstance(payload, dict) else {"value": payload}
        metadata = node.get("metadata") if isinstance(node.get("metadata"), dict) else {}
        sub_type = node["sub_type"]
        budget = self.budget()
        badges: list[str] = []
        warnings: list[tuple[str, str]] = []
        fields: dict[str, Any] = {}
        view: dict[str, Any] = {}
        if sub_type == "MESSAGE":
            role = payload.get("role")
            role_text = role if isinstance(role, str) else jsontext.dumps(role)
            name = payload.get("name")
            view.update(
                kind="message",
                role=role_text,
                role_class=ROLE_CLASSES.get(role_text.lower(), "other"),
                tone=_tone(role_text) if role_text.lower() not in ROLE_CLASSES else "",
                name=name if isinstance(name, str) else "",
            )
            content = payload.get("content")
            body = r.content_html(content, budget, self.ctx)
            size_of = content
            known = ("role", "content", "name")
        elif sub_type == "THINK":
            view.update(kind="think")
            text = payload.get("text")
            body = (
                r.markdown_block(text, budget, self.ctx)
                if isinstance(text, str)
                else r.json_html(text, budget)
            )
            size_of = text
            known = ("text",)
        elif sub_type == "TOOL_CALL":
            name = payload.get("name")
            view.update(
                kind="call",
                tool_name=name if isinstance(name, str) else jsontext.dumps(name),
                call_id=str(payload.get("call_id", "")),
            )
            arguments = payload.get("arguments")
            if "arguments_unparsed" in metadata or not isinstance(arguments, dict):
                reason = metadata.get("arguments_unparsed")
                warnings.append(
                    ("arguments are not JSON", reason if isinstance(reason, str) else "")
                )
            if metadata.get("arguments_missing"):
                warnings.append(("no arguments given", ""))
            body = r.arguments_html(arguments, budget)
            size_of = arguments
            known = ("call_id", "name", "arguments")
        else:
            is_delta = "delta" in payload and "output" not in payload
            value = payload.get("delta") if is_delta else payload.get("output")
            seq = payload.get("seq")
            view.update(
                kind="result",
                call_id=str(payload.get("call_id", "")),
                seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
                is_delta=is_delta,
            )
            body, badges = r.output_html(value, budget, self.ctx)
            size_of = value
            known = ("call_id", "output", "delta", "seq")
        fields = {k: v for k, v in payload.items() if k not in known}
        if fields:
            body += '<div class="more-fields"><span class="lane-note">other fields</span>'
            body += r.json_html(fields, budget) + "</div>"
        raw = node.get("raw")
        raw_html, raw_size, has_raw = None, "", raw is not None
        if has_raw:
            raw_text_len = len(jsontext.dumps(raw))
            raw_size = r.size_label(raw_text_len)
            if not self.fold or raw_text_len <= RAW_INLINE_CHARS:
                raw_html = r.safe(r.json_html(raw, r.Budget.unlimited(), css="drawer-json"))
        meta_html = r.json_html(metadata, self.budget(), css="drawer-json")
        extra = node.get("extra") if node.get("extra") is not None else {}
        extra_html = r.json_html(extra, self.budget(), css="drawer-json")
        size = r.size_label(jsontext.byte_size(size_of)) if size_of is not None else "0 B"
        return BlockView(
            id=node["id"],
            sub_type=sub_type,
            body=r.safe(body),
            folded=budget.folded,
            size=size,
            badges=badges,
            warnings=warnings,
            metadata=r.safe(meta_html),
            extra=r.safe(extra_html),
            raw=raw_html,
            raw_size=raw_size,
            has_raw=has_raw,
            reward=self.reward(node),
            cost=len(body) + len(meta_html) + len(extra_html) + BLOCK_OVERHEAD,
            **view,
        )

    def row(self, index: int, node: dict[str, Any]) -> RowView:
        acts = []
        for child in node.get("children", []):
            act = ActView(self.block(child))
            act.results = [self.block(result) for result in child.get("children", [])]
            acts.append(act)
        return RowView(index=index, message=self.block(node), acts=acts)

    def rows(
        self, messages: list[dict[str, Any]], start: int, at_least: int = 0
    ) -> tuple[list[RowView], int]:
        """Rows from `start`, until a chunk's size; the index after the last one."""
        out: list[RowView] = []
        spent = 0
        index = start
        while index < len(messages):
            if index >= start + at_least and (
                len(out) >= CHUNK_ROWS or (out and spent >= CHUNK_CHARS)
            ):
                break
            node = messages[index]
            self.load_image_types([node, *_descendants(node)])
            row = self.row(index, node)
            spent += row.message.cost + sum(
                a.block.cost + sum(res.cost for res in a.results) for a in row.acts
            )
            out.append(row)
            index += 1
        return out, index


def _tone(role: str) -> str:
    """A stable colour for a free-text role, so each agent of a team keeps its own.
    The agent's name comes first ("Orchestrator (thought)" goes with "Orchestrator")."""
    agent = re.split(r"[\s(:]", role.strip(), maxsplit=1)[0].lower()
    return f"tone-{zlib.crc32(agent.encode()) % 6}"


def _descendants(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for child in node.get("children", []):
        out.append(child)
        out.extend(child.get("children", []))
    return out


def _node(block: Block) -> dict[str, Any]:
    return {
        "id": block.pk,
        "sub_type": block.sub_type,
        "block_type": block.block_type,
        "parent_block_id": block.parent_id,
        "payload": block.payload,
        "metadata": block.metadata,
        "raw": block.raw,
        "extra": block.extra,
        "created_at": block.created_at,
    }


def _orphans(tree: dict[str, Any]) -> list[dict[str, Any]]:
    found = tree["orphans"]
    return [*found["thinks"], *found["tool_calls"], *found["tool_results"]]


def _row_of(tree: dict[str, Any], block_id: str) -> int | None:
    for i, message in enumerate(tree["messages"]):
        if message["id"] == block_id:
            return i
        for child in message.get("children", []):
            if child["id"] == block_id:
                return i
            if any(res["id"] == block_id for res in child.get("children", [])):
                return i
    if any(o["id"] == block_id for o in _orphans(tree)):
        return len(tree["messages"])
    return None


def _int_param(request, name: str) -> int:
    try:
        return max(0, int(request.GET.get(name, "0")))
    except ValueError:
        return 0


def _chunk_context(
    renderer: PageRenderer, tree: dict[str, Any], start: int, chunk: tuple | None = None
) -> dict[str, Any]:
    messages = tree["messages"]
    rows, end = chunk if chunk is not None else renderer.rows(messages, start)
    done = end >= len(messages)
    orphans = []
    if done:
        nodes = _orphans(tree)
        renderer.load_image_types(nodes)
        orphans = [renderer.block(node) for node in nodes]
    trace = renderer.trace
    return {
        "rows": rows,
        "next_after": None if done else end,
        "more_url": f"{reverse('trace-more', args=[trace.pk])}?after={end}",
        "next_page_url": f"{reverse('trace', args=[trace.pk])}?after={end}#row-{end}",
        "row_total": len(messages),
        "next_last": min(len(messages), end + CHUNK_ROWS),
        "orphans": orphans,
        "done": done,
    }


# --- Pages -----------------------------------------------------------------------------


def _neighbours(trace: Trace) -> tuple[Trace | None, Trace | None]:
    if trace.dataset_id is None:
        return None, None
    siblings = Trace.objects.filter(dataset_id=trace.dataset_id).only("id", "index", "name")
    prev = siblings.filter(index__lt=trace.index).order_by("-index").first()
    nxt = siblings.filter(index__gt=trace.index).order_by("index").first()
    return prev, nxt


def _counts(tree: dict[str, Any]) -> dict[str, int]:
    counts = {"MESSAGE": 0, "THINK": 0, "TOOL_CALL": 0, "TOOL_RESULT": 0}
    for message in tree["messages"]:
        counts["MESSAGE"] += 1
        for child in message.get("children", []):
            counts[child["sub_type"]] += 1
            counts["TOOL_RESULT"] += len(child.get("children", []))
    return counts


@dataclass
class MetaItem:
    key: str
    text: str
    long: bool


def _meta_items(metadata: Any) -> list[MetaItem]:
    if not isinstance(metadata, dict):
        return [MetaItem("value", jsontext.dumps(metadata), True)] if metadata else []
    items = []
    for key, value in metadata.items():
        text = value if isinstance(value, str) else jsontext.dumps(value)
        if len(text) > META_VALUE_CHARS:
            text = text[:META_VALUE_CHARS] + f"… ({r.size_label(len(text.encode()))} in all)"
        items.append(MetaItem(str(key)[:200], r.visible_text(text), len(text) > 80))
    return items


def _trace_reward(trace: Trace, can_edit: bool, **more) -> RewardView:
    extra = trace.extra if isinstance(trace.extra, dict) else {}
    return RewardView(
        url=reverse("trace-reward", args=[trace.pk]),
        dom_id="reward-trace",
        value=extra.get("reward"),
        can_edit=can_edit,
        target="trace",
        **more,
    )


def _reward_summary(trace: Trace) -> dict[str, str]:
    """The trace's reward column as the header shows it, and where it comes from."""
    if trace.reward is None:
        return {"reward_text": "", "reward_tone": "", "reward_source": ""}
    extra = trace.extra if isinstance(trace.extra, dict) else {}
    reward = trace.reward
    return {
        "reward_text": _number_text(reward),
        "reward_tone": "good" if reward >= 1 else "bad" if reward <= 0 else "warn",
        "reward_source": "annotation" if extra.get("reward") is not None else "metadata",
    }


def _trace_title(trace: Trace) -> str:
    return trace.name or f"Trace #{trace.index}"


@require_safe
@login_required
def trace_page(request, trace_id: str):
    trace = _trace(request, trace_id)
    tree = trace_tree_get(trace=trace, decode=True)
    renderer = PageRenderer(request, trace)
    messages = tree["messages"]
    start = min(_int_param(request, "after"), len(messages))
    chunk = None
    focus = request.GET.get("focus", "")
    row = _row_of(tree, focus) if _BLOCK_ID.match(focus) else None
    if row is not None:
        # The first chunk, if it reaches the block; else a window that starts just
        # before it (earlier rows are a link away).
        chunk = renderer.rows(messages, 0)
        start = 0
        if chunk[1] <= row:
            start = max(0, row - 2)
            chunk = renderer.rows(messages, start, at_least=row - start + 1)
    chunk_context = _chunk_context(renderer, tree, start, chunk)
    prev, nxt = _neighbours(trace)
    counts = _counts(tree)
    context = {
        "trace": trace,
        "title": _trace_title(trace),
        "dataset": trace.dataset,
        "prev": prev,
        "next": nxt,
        "counts": counts,
        "block_total": sum(counts.values()) + len(_orphans(tree)),
        "orphan_total": len(_orphans(tree)),
        "meta_items": _meta_items(trace.metadata),
        "extra_items": _meta_items(trace.extra),
        "trace_reward": _trace_reward(trace, renderer.can_edit),
        **_reward_summary(trace),
        "can_edit": renderer.can_edit,
        "start": start,
        "start_url": reverse("trace", args=[trace.pk]),
        "nav": "datasets",
        **chunk_context,
    }
    return render(request, TEMPLATE, context)


@require_safe
@login_required
def trace_more(request, trace_id: str):
    trace = _trace(request, trace_id)
    start = _int_param(request, "after")
    if not request.htmx:
        url = reverse("trace", args=[trace.pk])
        return HttpResponseRedirect(f"{url}?{urlencode({'after': start})}#row-{start}")
    tree = trace_tree_get(trace=trace, decode=True)
    renderer = PageRenderer(request, trace)
    start = min(start, len(tree["messages"]))
    context = {"trace": trace, **_chunk_context(renderer, tree, start)}
    return render(request, f"{TEMPLATE}#chunk", context)


@require_safe
@login_required
def block_full(request, trace_id: str, block_id: str):
    trace = _trace(request, trace_id)
    block = _block(trace, block_id)
    as_text = request.GET.get("as") == "text"
    renderer = PageRenderer(request, trace, fold=False, as_text=as_text)
    node = _node(block)
    renderer.load_image_types([node])
    view = renderer.block(node)
    part = request.GET.get("part", "body")
    if request.htmx:
        name = "raw" if part == "raw" else "block_body"
        return render(request, f"{TEMPLATE}#{name}", {"trace": trace, "b": view})
    context = {
        "trace": trace,
        "title": _trace_title(trace),
        "dataset": trace.dataset,
        "b": view,
        "payload_html": r.safe(r.json_html(block.payload, r.Budget.unlimited())),
        "back_url": _block_anchor_url(trace, block.pk),
        "nav": "datasets",
        "page_mode": "block",
        "as_text": as_text,
    }
    return render(request, TEMPLATE, context)


# --- Rewards ---------------------------------------------------------------------------


class RewardInputError(ValueError):
    pass


def _reward_from_post(post) -> Any:
    """The reward a form asks for: 1, 0, None (clear) or the number typed."""
    action = post.get("action", "")
    if action == "up":
        return 1
    if action == "down":
        return 0
    if action == "clear":
        return None
    text = post.get("value", "").strip()
    if not text:
        raise RewardInputError("Enter a number.")
    try:
        if re.fullmatch(r"[+-]?\d{1,15}", text):
            return int(text)
        number = float(text)
    except ValueError:
        raise RewardInputError(f"“{text[:40]}” is not a number.") from None
    if not math.isfinite(number):
        raise RewardInputError("The reward must be a finite number.")
    return int(number) if number.is_integer() and abs(number) < 1e15 else number


def _block_anchor_url(trace: Trace, block_id: str) -> str:
    url = reverse("trace", args=[trace.pk])
    return f"{url}?{urlencode({'focus': block_id})}#{block_id}"


def _reward_response(request, reward: RewardView, status: int, oob: str = "") -> HttpResponse:
    html = render_to_string(f"{TEMPLATE}#reward", {"reward": reward}, request=request)
    return HttpResponse(html + oob, status=status)


@require_POST
@login_required
def trace_reward(request, trace_id: str):
    trace = _trace(request, trace_id)
    if not can_annotate(user=request.user, organization=trace.organization):
        raise Http404("no such trace")
    try:
        value = _reward_from_post(request.POST)
    except RewardInputError as exc:
        if not request.htmx:
            return _no_js_error(request, trace, str(exc))
        reward = _trace_reward(
            trace, True, error=str(exc), entered=request.POST.get("value", "")[:40]
        )
        return _reward_response(request, reward, 422)
    trace = trace_patch(trace=trace, extra={"reward": value})
    if not request.htmx:
        return HttpResponseRedirect(reverse("trace", args=[trace.pk]))
    summary = render_to_string(
        f"{TEMPLATE}#trace_reward_summary",
        {"trace": trace, **_reward_summary(trace), "oob": True},
        request=request,
    )
    return _reward_response(request, _trace_reward(trace, True), 200, summary)


@require_POST
@login_required
def block_reward(request, trace_id: str, block_id: str):
    trace = _trace(request, trace_id)
    if not can_annotate(user=request.user, organization=trace.organization):
        raise Http404("no such trace")
    block = _block(trace, block_id)
    try:
        value = _reward_from_post(request.POST)
    except RewardInputError as exc:
        if not request.htmx:
            return _no_js_error(request, trace, str(exc), block.pk)
        reward = PageRenderer(request, trace).reward(_node(block))
        reward.error, reward.entered = str(exc), request.POST.get("value", "")[:40]
        return _reward_response(request, reward, 422)
    block = block_extra_patch(block=block, patch={"reward": value})
    if not request.htmx:
        return HttpResponseRedirect(_block_anchor_url(trace, block.pk))
    return _reward_response(request, PageRenderer(request, trace).reward(_node(block)), 200)


def _no_js_error(request, trace: Trace, message: str, block_id: str | None = None):
    context = {
        "trace": trace,
        "title": _trace_title(trace),
        "dataset": trace.dataset,
        "message": message,
        "back_url": _block_anchor_url(trace, block_id)
        if block_id
        else reverse("trace", args=[trace.pk]),
        "nav": "datasets",
        "page_mode": "reward_error",
    }
    return render(request, TEMPLATE, context, status=422)
