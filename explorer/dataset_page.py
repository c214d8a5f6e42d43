"""What a dataset page shows, as view models: the filters of its trace list, metadata
items, the reward histogram's bars, the rewards-per-group table and the trace rows."""

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Paginator

from traces import jsontext
from traces.models import Trace
from traces.rewards import rate_tone, reward_tone
from traces.selectors.annotations import trace_label_names
from traces.selectors.datasets import dataset_trace_rows
from traces.selectors.stats import (
    Histogram,
    default_group_key,
    message_text,
    metadata_keys,
    rewards_by_key,
    tools_used,
)
from traces.selectors.trace_filters import TraceFilter, traces_filtered
from traces.validation import number_in_range

PAGE_SIZE = 50
FIRST_MESSAGE_CHARS = 120
LONG_VALUE_CHARS = 100
# The metadata panel shows the first keys, each value up to META_VALUE_CHARS characters;
# the whole metadata is a link away (the /v1 resource), harden F3.
META_PANEL_KEYS = 50
META_VALUE_CHARS = 4_000
META_KEY_CHARS = 200
SORTS = {
    "index": ("index",),
    "-index": ("-index",),
    "reward": ("reward", "index"),
    "-reward": ("-reward", "index"),
}
REWARD_CHOICES = (
    ("", "any"),
    ("1", "1 (success)"),
    ("0", "0 (failure)"),
    ("none", "none"),
    ("gte", "≥ at least…"),
)
ANNOTATED_CHOICES = (("", "any"), ("yes", "annotated"), ("no", "not annotated"))


@dataclass
class Filters:
    q: str = ""
    reward: str = ""
    reward_min: str = ""
    meta: str = ""
    annotated: str = ""
    label: str = ""
    sort: str = "index"
    group: str = ""

    @classmethod
    def from_request(cls, request) -> "Filters":
        get = request.GET
        reward = get.get("reward", "")
        reward_min = get.get("reward_min", "").strip()
        if reward_min and not reward:
            reward = "gte"
        return cls(
            q=get.get("q", "").strip()[:500],
            reward=reward if reward in dict(REWARD_CHOICES) else "",
            reward_min=reward_min[:40],
            meta=get.get("meta", "").strip()[:1000],
            annotated=get.get("annotated", "") if get.get("annotated") in ("yes", "no") else "",
            label=get.get("label", "").strip()[:100],
            sort=get.get("sort", "index") if get.get("sort") in SORTS else "index",
            group=get.get("group", "")[:500],
        )

    def params(self, **changes: Any) -> dict[str, str]:
        """The non-default values, as GET parameters."""
        values = {
            "q": self.q,
            "reward": self.reward,
            "reward_min": self.reward_min if self.reward == "gte" else "",
            "meta": self.meta,
            "annotated": self.annotated,
            "label": self.label,
            "sort": "" if self.sort == "index" else self.sort,
            "group": self.group,
            **changes,
        }
        return {k: v for k, v in values.items() if v not in ("", None)}

    def query(self, **changes: Any) -> str:
        return urlencode(self.params(**changes))

    @property
    def active(self) -> bool:
        return bool(self.q or self.reward or self.meta or self.annotated or self.label)

    def trace_filter(self) -> tuple[TraceFilter, list[str]]:
        """The form as the filter the trace list applies, and what could not be
        understood (that part of the filter is off)."""
        found = TraceFilter(text=self.q)
        errors = []
        if self.reward in ("1", "0"):
            found.reward = float(self.reward)
        elif self.reward == "none":
            found.no_reward = True
        elif self.reward == "gte":
            try:
                bound = float(self.reward_min)
                if not math.isfinite(bound):
                    raise ValueError
                found.reward_min = bound
            except ValueError:
                if self.reward_min:
                    errors.append(f"“{self.reward_min}” is not a number: the reward filter is off.")
                else:
                    errors.append("Give the lowest reward to keep: the reward filter is off.")
        if self.meta:
            key, sep, value = self.meta.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                errors.append("Write the metadata filter as key=value, e.g. task_id=7.")
            else:
                found.metadata[key] = value
        if self.annotated:
            found.annotated = self.annotated == "yes"
        found.label = self.label
        return found, errors


def _apply(traces, filters: Filters) -> tuple[Any, list[str]]:
    """The traces that pass the filters, in the form's order, and what could not be
    understood."""
    trace_filter, errors = filters.trace_filter()
    traces = traces_filtered(traces=traces, filters=trace_filter)
    return traces.order_by(*SORTS[filters.sort]), errors


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

    @property
    def short(self) -> str:
        return self.text[:LONG_VALUE_CHARS].rstrip() + "…" if self.long else self.text


def _format_value(value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if value is None:
        return "null", "null"
    if isinstance(value, int):
        return f"{value:,}".replace(",", "\u2009") if abs(value) >= 10_000 else str(value), "number"
    if isinstance(value, float):
        return f"{value:.6g}", "number"
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
        text = _cut(text, META_VALUE_CHARS)
        long = len(text) > LONG_VALUE_CHARS or "\n" in text
        items.append(MetaItem(_cut(key, META_KEY_CHARS), text, kind, long))
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


def _trace_rows(page_traces: list[Trace]) -> list[dict[str, Any]]:
    tools = tools_used(trace_ids=[t.pk for t in page_traces])
    labels = trace_label_names(trace_ids=[t.pk for t in page_traces])
    rows = []
    for trace in page_traces:
        tone, text = reward_badge(trace.reward)
        rows.append(
            {
                "trace": trace,
                "first_message": _first_line(message_text(trace.first_user_payload)),
                "tools": tools.get(trace.pk, []),
                "labels": labels.get(trace.pk, []),
                "reward_tone": tone,
                "reward_text": text,
            }
        )
    return rows


def groups_context(filters: Filters, all_traces) -> dict[str, Any]:
    keys = metadata_keys(traces=all_traces)
    key = filters.group if filters.group in keys else default_group_key(keys)
    table = rewards_by_key(traces=all_traces, key=key) if key else None
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


def traces_context(request, all_traces, filters: Filters, count: int | None = None):
    traces, errors = _apply(all_traces, filters)
    traces = dataset_trace_rows(traces=traces)
    if count is None:
        paginator = Paginator(traces, PAGE_SIZE)
    else:
        paginator = _CountedPaginator(traces, PAGE_SIZE, count)
    page = paginator.get_page(request.GET.get("page"))
    rows = _trace_rows(list(page.object_list))

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
        "filter_errors": errors,
        "page_numbers": numbers,
        "prev_href": link(page.previous_page_number()) if page.has_previous() else None,
        "next_href": link(page.next_page_number()) if page.has_next() else None,
    }
