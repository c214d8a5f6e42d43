"""An OpenTelemetry trace in the browser (issue 14): the GenAI agent loop of
tests/otel/agent.py sent by the stock OTLP/HTTP exporter to the live server, read in
lanes; a refresh after the next batches shows the blocks they brought.

Screenshots go to a temporary folder, or to $E2E_SHOTS when set (to look at them)."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_trace_story import shots
from tests.otel.agent import ANSWER, QUESTION, genai_agent, otlp_exporter, provider_for
from traces.models import Trace
from traces.services.api_keys import api_key_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_otel_trace_in_lanes_grows_on_refresh(
    page: Page, live_server, org, member, sign_in, console_errors, tmp_path
):
    key = api_key_create(organization=org, name="agent").secret
    provider = provider_for({"service.name": "weather-agent"}, otlp_exporter(live_server.url, key))  # noqa: E501
    flushes = []
    sign_in(page, member.username)

    def flush():
        provider.force_flush(10_000)
        flushes.append(1)
        if len(flushes) == 2:  # the first chat and the tool have arrived: look now
            trace = Trace.objects.get()
            page.goto(f"{live_server.url}/t/{trace.pk}/")
            expect(page.locator(".k-call")).to_have_count(1)
            expect(page.locator(".k-result")).to_have_count(1)
            expect(page.locator(".k-message", has_text=ANSWER)).to_have_count(0)

    genai_agent(provider, flush)
    provider.shutdown()
    trace = Trace.objects.get()
    page.reload()
    rows = page.locator("#rows")
    expect(rows.locator(".k-message", has_text=QUESTION)).to_be_visible()
    expect(rows.locator(".k-message", has_text=ANSWER)).to_be_visible()
    expect(rows.locator(".cell-act .k-think")).to_contain_text("I should look the weather up.")
    expect(rows.locator(".cell-act .k-call")).to_contain_text("get_weather")
    expect(rows.locator(".cell-observe .k-result")).to_contain_text("sunny")
    expect(page.locator("body")).to_contain_text("invoke_agent weather-bot")
    assert trace.reward == 1.0
    page.screenshot(path=str(shots(tmp_path) / "otel-trace-lanes.png"), full_page=True)
    assert console_errors == []
