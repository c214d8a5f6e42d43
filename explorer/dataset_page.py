"""What a dataset page shows, as view models: the filters of its trace list, metadata
items, the reward histogram's bars, the rewards-per-group table and the trace rows."""

import math
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import QueryDict
from django.urls import reverse

from explorer.render.snippet import highlighted, snippet
from explorer.templatetags.numbers import cost_text, duration_text, metadata_number, tokens_text
from explorer.templatetags.numbers import grouped as _grouped
from traces import jsontext
from traces.models import Trace
from traces.rewards import rate_tone, reward_tone
from traces.selectors.annotations import trace_label_names
from traces.selectors.datasets import dataset_trace_rows
from traces.selectors.search import (
    search_hits,
    search_words,
    traces_being_indexed,
)
from traces.selectors.stats import (
    Histogram,
    UsageSummary,
    default_group_key,
    group_sort_known,
    message_text,
    metadata_keys,
    rewards_by_key,
    tools_used,
)
from traces.selectors.trace_filters import (
    TraceFilter,
    sort_known,
    traces_filtered,
    traces_sorted,
)
from traces.validation import number_in_range

PAGE_SIZE = 50
FIRST_MESSAGE_CHARS = 120
LONG_VALUE_CHARS = 100
# The metadata panel shows the first keys, each value up to META_VALUE_CHARS characters;
# the whole metadata is a link away (the /v1 resource), harden F3.
META_PANEL_KEYS = 50
META_VALUE_CHARS = 4_000
META_KEY_CHARS = 200
REWARD_CHOICES = (
    ("", "any"),
    ("1", "1 (success)"),
    ("0", "0 (failure)"),
    ("none", "none"),
    ("gte", "in a range…"),
)
ANNOTATED_CHOICES = (("", "any"), ("yes", "annotated"), ("no", "not annotated"))
TOOL_ERROR_CHOICES = (("", "any"), ("yes", "has a tool error"), ("no", "no tool error"))
# The columns of the trace list that sort, in the order the table shows them: (sort, label,
# whether the first click sorts descending, as for figures where the biggest matter).
SORT_COLUMNS = (
    ("index", "#", False),
    ("name", "Name", False),
    ("task", "Task", False),
    ("trial", "Trial", False),
    ("turns", "Blocks", True),
    ("errors", "Errors", True),
    ("reward", "Reward", True),
    ("tokens", "Tokens", True),
    ("cost", "Cost", True),
    ("duration", "Duration", True),
)
USAGE_SORTS = ("tokens", "cost", "duration")
META_FILTERS = 5  # key=value filters at once


@dataclass
class Filters:
    q: str = ""
    reward: str = ""
    reward_min: str = ""
    reward_max: str = ""
    meta: list[str] = field(default_factory=list)
    annotated: str = ""
    label: str = ""
    errors: str = ""
    sort: str = "index"
    group: str = ""
    gsort: str = "value"  # the order of the rewards-per-group table

    @classmethod
    def from_request(cls, request) -> "Filters":
        return cls.from_query(request.GET)

    @classmethod
    def from_query(cls, get: QueryDict) -> "Filters":
        reward = get.get("reward", "")
        reward_min = get.get("reward_min", "").strip()[:40]
        reward_max = get.get("reward_max", "").strip()[:40]
        if (reward_min or reward_max) and not reward:
            reward = "gte"
        metas = [m.strip()[:1000] for m in get.getlist("meta")[:META_FILTERS]]
        sort = get.get("sort", "index")
        return cls(
            q=get.get("q", "").strip()[:500],
            reward=reward if reward in dict(REWARD_CHOICES) else "",
            reward_min=reward_min,
            reward_max=reward_max,
            meta=[m for m in metas if m],
            annotated=get.get("annotated", "") if get.get("annotated") in ("yes", "no") else "",
            label=get.get("label", "").strip()[:100],
            errors=get.get("errors", "") if get.get("errors") in ("yes", "no") else "",
            sort=sort if sort_known(sort) else "index",
            group=get.get("group", "")[:500],
            gsort=get.get("gsort", "") if group_sort_known(get.get("gsort", "")) else "value",
        )

    def params(self, **changes: Any) -> dict[str, Any]:
        """The non-default values, as GET parameters (`meta` may be a list)."""
        ranged = self.reward == "gte"
        values = {
            "q": self.q,
            "reward": self.reward,
            "reward_min": self.reward_min if ranged else "",
            "reward_max": self.reward_max if ranged else "",
            "meta": self.meta,
            "annotated": self.annotated,
            "label": self.label,
            "errors": self.errors,
            "sort": "" if self.sort == "index" else self.sort,
            "group": self.group,
            "gsort": "" if self.gsort == "value" else self.gsort,
            **changes,
        }
        return {k: v for k, v in values.items() if v not in ("", None, [])}

    def query(self, **changes: Any) -> str:
        return urlencode(self.params(**changes), doseq=True)

    def list_query(self) -> str:
        """The list's filter and sort alone (no page, no grouping): what a trace link
        carries so that the trace page's previous/next walk the same list."""
        return self.query(group="", gsort="", page="")

    @property
    def active(self) -> bool:
        return bool(
            self.q or self.reward or self.meta or self.annotated or self.label or self.errors
        )

    def _reward_bound(self, text: str, errors: list[str]) -> float | None:
        try:
            bound = float(text)
            if not math.isfinite(bound):
                raise ValueError
            return bound
        except ValueError:
            errors.append(f"“{text}” is not a number: that reward bound is off.")
            return None

    def trace_filter(self) -> tuple[TraceFilter, list[str]]:
        """The form as the filter the trace list applies, and what could not be
        understood (that part of the filter is off)."""
        found = TraceFilter(text=self.q)
        errors: list[str] = []
        if self.reward in ("1", "0"):
            found.reward = float(self.reward)
        elif self.reward == "none":
            found.no_reward = True
        elif self.reward == "gte":
            if not self.reward_min and not self.reward_max:
                errors.append(
                    "Give the lowest or highest reward to keep: the reward filter is off."
                )
            if self.reward_min:
                found.reward_min = self._reward_bound(self.reward_min, errors)
            if self.reward_max:
                found.reward_max = self._reward_bound(self.reward_max, errors)
        for meta in self.meta:
            key, sep, value = meta.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                errors.append("Write the metadata filter as key=value, e.g. task_id=7.")
            else:
                found.metadata[key] = value
        if self.annotated:
            found.annotated = self.annotated == "yes"
        if self.errors:
            found.tool_error = self.errors == "yes"
        found.label = self.label
        return found, errors


def filtered(traces, filters: Filters) -> tuple[Any, list[str]]:
    """The traces that pass the filters (in no order), and what could not be understood."""
    trace_filter, errors = filters.trace_filter()
    return traces_filtered(traces=traces, filters=trace_filter), errors


def sort_columns(request, filters: Filters) -> dict[str, dict[str, Any]]:
    """The trace list's sortable headers: each a link (a real href; htmx swaps the table)
    to the list sorted by it, the other way round when it is the sort already."""
    columns = {}
    for sort, label, descending_first in SORT_COLUMNS:
        if filters.sort == sort:
            current, target = "ascending", f"-{sort}"
        elif filters.sort == f"-{sort}":
            current, target = "descending", sort
        else:
            current, target = "", f"-{sort}" if descending_first else sort
        href = f"{request.path}?{filters.query(sort='' if target == 'index' else target)}"
        columns[sort] = {
            "sort": sort,
            "label": label,
            "href": href,
            "current": current,
            "numeric": sort not in ("name", "task"),
        }
    return columns


# --- presentation helpers ------------------------------------------------------------


def reward_badge(reward: float | None) -> tuple[str, str]:
    if reward is None:
        return "", "—"
    text = "1" if reward == 1 else "0" if reward == 0 else f"{reward:.3g}"
    return reward_tone(reward), text


def _first_line(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > FIRST_MESSAGE_CHARS:
        return flat[: FIRST_MESSAGE_CHARS - 1].rstrip() + "…"
    return flat


@dataclass(frozen=True)
class MetaItem:
    key: str
    text: str
    kind: str  # "string", "number", "bool", "null", "json"
    long: bool
    exact: str = ""  # a number's value as stored, when the page shows it rounded

    @property
    def short(self) -> str:
        return self.text[:LONG_VALUE_CHARS].rstrip() + "…" if self.long else self.text


def _format_value(value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if value is None:
        return "null", "null"
    if isinstance(value, int | float):  # as stored: metadata_items shows it rounded
        return jsontext.dumps(value), "number"
    if isinstance(value, str):
        return value, "string"
    return jsontext.dumps(value), "json"


def _cut(text: str, limit: int) -> str:
    return text[:limit] + "…" if len(text) > limit else text


def metadata_items(metadata: Any, skip: tuple[str, ...] = ("accuracy",)) -> list[MetaItem]:
    """The first META_PANEL_KEYS keys of the metadata, keys and values cut to a readable
    length (with an ellipsis)."""
    if not isinstance(metadata, dict):
        text = _cut(jsontext.dumps(metadata), META_VALUE_CHARS)
        return [MetaItem("(metadata)", text, "json", len(text) > LONG_VALUE_CHARS)]
    items = []
    for key, value in metadata.items():
        if key in skip:
            continue
        if len(items) == META_PANEL_KEYS:
            break
        text, kind = _format_value(value)
        shown = metadata_number(key, value)
        exact = text if shown is not None and shown != text else ""
        text = _cut(text if shown is None else shown, META_VALUE_CHARS)
        long = len(text) > LONG_VALUE_CHARS or "\n" in text
        items.append(MetaItem(_cut(key, META_KEY_CHARS), text, kind, long, exact))
    return items


def metadata_hidden(metadata: Any, skip: tuple[str, ...] = ("accuracy",)) -> int:
    """How many keys the panel does not show."""
    if not isinstance(metadata, dict):
        return 0
    return max(0, len([k for k in metadata if k not in skip]) - META_PANEL_KEYS)


def reported_accuracy(metadata: Any) -> tuple[float | None, Any]:
    """The `accuracy` the dataset's metadata reports: a number (finite, within the range
    of traces.validation.number_in_range), or the raw value if any."""
    if not isinstance(metadata, dict) or "accuracy" not in metadata:
        return None, None
    value = metadata["accuracy"]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (float(value) if number_in_range(value) else None), value
    if isinstance(value, str):
        text = value.strip().rstrip("%")
        try:
            number = float(text)
        except ValueError:
            return None, value
        if value.strip().endswith("%"):
            number /= 100
        return (number if number_in_range(number) else None), value
    return None, value


# The histogram, drawn by the server: SVG geometry in user units (the CSS sizes it).
CHART_W, CHART_H = 560, 210
PAD_L, PAD_R, PAD_T, PAD_B = 40, 12, 22, 34


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    count: int
    title: str
    cx: float
    count_y: float
    tone: str


def histogram_bars(histogram: Histogram) -> dict[str, Any]:
    bins = histogram.bins
    plot_w, plot_h = CHART_W - PAD_L - PAD_R, CHART_H - PAD_T - PAD_B
    tallest = max(histogram.tallest, 1)
    slot = plot_w / max(len(bins), 1)
    gap = min(slot * 0.2, 18) if len(bins) > 3 else slot * 0.3
    bars = []
    for i, b in enumerate(bins):
        height = round(plot_h * b.count / tallest, 2)
        x = round(PAD_L + i * slot + gap / 2, 2)
        width = round(slot - gap, 2)
        y = round(PAD_T + plot_h - height, 2)
        tone = reward_tone(b.low) if histogram.kind == "binary" else ""
        bars.append(
            Bar(
                x=x, y=y, width=width, height=max(height, 0), label=b.label, count=b.count,
                title=b.title, cx=round(x + width / 2, 2), count_y=round(y - 6, 2), tone=tone,
            )
        )  # fmt: skip
    ticks = []
    for fraction in (0, 0.5, 1):
        value = tallest * fraction
        if fraction and value != int(value):
            continue
        ticks.append({"y": round(PAD_T + plot_h - plot_h * fraction, 2), "label": int(value)})
    return {
        "width": CHART_W,
        "height": CHART_H,
        "bars": bars,
        "ticks": ticks,
        "axis_y": PAD_T + plot_h,
        "axis_x1": PAD_L,
        "axis_x2": CHART_W - PAD_R,
        "label_y": PAD_T + plot_h + 18,
        "tick_x": PAD_L - 8,
    }


# --- the page ------------------------------------------------------------------------


def usage_view(usage: UsageSummary) -> dict[str, Any]:
    """The dataset's usage figures as its head shows them."""
    tokens = None
    if usage.with_tokens:
        total = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        tokens = {
            "total": _grouped(total),
            "input": _grouped(usage.input_tokens or 0),
            "output": _grouped(usage.output_tokens or 0),
            "mean": _grouped(round(total / usage.with_tokens)),
        }
    return {
        "summary": usage,
        "tokens": tokens,
        "cost": cost_text(usage.cost),
        "mean_cost": cost_text(usage.mean_cost),
        "mean_duration": duration_text(usage.mean_duration),
        "duration": duration_text(usage.duration),
    }


def _trace_rows(page_traces: list[Trace], filters: Filters) -> list[dict[str, Any]]:
    ids = [t.pk for t in page_traces]
    tools = tools_used(trace_ids=ids)
    labels = trace_label_names(trace_ids=ids)
    hits = search_hits(trace_ids=ids, text=filters.q) if filters.q else {}
    being_indexed = traces_being_indexed(trace_ids=ids)
    words = search_words(filters.q)
    # The trace link carries the list (its filter and sort): J/K walk what the reader sees.
    carried = filters.list_query()
    suffix = f"?{urlencode({'list': carried})}" if carried else ""
    rows = []
    for trace in page_traces:
        tone, text = reward_badge(trace.reward)
        href = reverse("trace", args=[trace.pk]) + suffix
        hit = hits.get(trace.pk)
        hit_view = None
        if hit is not None:
            focus = urlencode({"focus": hit.block_id, **({"list": carried} if carried else {})})
            hit_view = {
                "href": f"{reverse('trace', args=[trace.pk])}?{focus}#{hit.block_id}",
                "snippet": highlighted(snippet(hit), words),
                "kind": hit.sub_type.lower().replace("_", " "),
            }
        tokens, tokens_title = tokens_text(trace)
        rows.append(
            {
                "trace": trace,
                "href": href,
                "tokens": tokens,
                "tokens_title": tokens_title,
                "cost": cost_text(trace.cost_usd),
                "duration": duration_text(trace.duration_seconds),
                "hit": hit_view,
                "being_indexed": trace.pk in being_indexed,
                "first_message": _first_line(message_text(trace.first_user_payload)),
                "tools": tools.get(trace.pk, []),
                "labels": labels.get(trace.pk, []),
                "reward_tone": tone,
                "reward_text": text,
            }
        )
    return rows


def group_columns(request, filters: Filters, ks: list[int]) -> dict[str, Any]:
    """The groups table's headers: each a link to the table sorted by that column (the
    other way round when it is the sort already; figures first biggest)."""
    names = ["value", "count", "mean", *(f"pass{k}" for k in ks), *(f"hat{k}" for k in ks)]
    columns: dict[str, Any] = {}
    for name in names:
        if filters.gsort == name:
            current, target = "ascending", f"-{name}"
        elif filters.gsort == f"-{name}":
            current, target = "descending", name
        else:
            current, target = "", name if name == "value" else f"-{name}"
        query = filters.query(gsort="" if target == "value" else target, page="")
        columns[name] = {"href": f"{request.path}?{query}", "current": current}
    columns["pass"] = [{"k": k, **columns[f"pass{k}"]} for k in ks]
    columns["hat"] = [{"k": k, **columns[f"hat{k}"]} for k in ks]
    return columns


def groups_context(request, filters: Filters, all_traces, listed) -> dict[str, Any]:
    """The rewards per group of `listed` (the traces the list's filter keeps), by a key
    of the dataset's traces (`all_traces`)."""
    keys = metadata_keys(traces=all_traces)
    key = filters.group if filters.group in keys else default_group_key(keys)
    table = rewards_by_key(traces=listed, key=key, sort=filters.gsort) if key else None
    rows = []
    # With one trial per group, pass@1 and pass^1 only repeat the mean reward.
    show_pass = table is not None and len(table.ks) > 1
    if table is not None:
        for group in table.rows:
            href = None
            if not group.missing and not group.cut:
                href = "?" + urlencode({"meta": f"{key}={group.filter_value}", "group": key})
            cells = [*group.pass_at, *group.pass_hat] if show_pass else []
            rows.append(
                {
                    "group": group,
                    "href": href,
                    "mean_heat": rate_tone(group.mean),
                    "cells": [(v, rate_tone(v)) for v in cells],
                }
            )
    totals = [*table.pass_at, *table.pass_hat] if show_pass else []
    return {
        "group_columns": group_columns(request, filters, table.ks if show_pass else []),
        "keys": keys,
        "group_key": key,
        "groups": table,
        "group_rows": rows,
        "show_pass": show_pass,
        "total_cells": totals,
    }


class _CountedPaginator(Paginator):
    """A paginator told its count, when the page already has it (no second COUNT)."""

    def __init__(self, object_list, per_page, count: int) -> None:
        super().__init__(object_list, per_page)
        self.__dict__["count"] = count


def traces_context(request, listed, filters: Filters, count: int | None = None):
    """The page of the list: `listed` are the traces that pass the filters."""
    traces = dataset_trace_rows(traces=traces_sorted(traces=listed, sort=filters.sort))
    if count is None:
        paginator = Paginator(traces, PAGE_SIZE)
    else:
        paginator = _CountedPaginator(traces, PAGE_SIZE, count)
    page = paginator.get_page(request.GET.get("page"))
    rows = _trace_rows(list(page.object_list), filters)

    def link(number: int) -> str:
        return f"{request.path}?{filters.query(page=number if number > 1 else '')}"

    numbers = []
    if paginator.num_pages > 1:
        for n in paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1):
            numbers.append({"n": n, "href": link(n) if isinstance(n, int) else None})
    return {
        "page": page,
        "paginator": paginator,
        "rows": rows,
        "columns": sort_columns(request, filters),
        "list_query": filters.list_query(),
        "page_numbers": numbers,
        "prev_href": link(page.previous_page_number()) if page.has_previous() else None,
        "next_href": link(page.next_page_number()) if page.has_next() else None,
    }


@dataclass(frozen=True)
class ListState:
    """The trace list a trace page was opened from (its `list` parameter: the list's own
    query string), so that its previous/next walk that list: its filter, its sort, and
    the suffix its links carry on."""

    filter: TraceFilter | None
    sort: str
    suffix: str  # "?list=..." or ""


def list_state(request) -> ListState:
    carried = request.GET.get("list", "")[:4000]
    if not carried:
        return ListState(None, "index", "")
    filters = Filters.from_query(QueryDict(carried))
    trace_filter, _ = filters.trace_filter()
    query = filters.list_query()
    return ListState(trace_filter, filters.sort, f"?{urlencode({'list': query})}" if query else "")
