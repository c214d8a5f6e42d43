"""explorer/trace_html.py's reward control: the form of a reward not set is made once a
response and filled for each block; it must be the form the general case draws."""

import pytest

from explorer import trace_html
from explorer.trace_page import RewardView

CSRF = '<input type="hidden" name="csrfmiddlewaretoken" value="tok">'


@pytest.mark.parametrize("target", ["block", "trace"])
@pytest.mark.parametrize(
    "block_id",
    ["tb_01ABC", 'odd"&<id>', "x" * 64],  # ours are plain; escaped either way
)
def test_an_unset_reward_is_the_form_the_general_case_draws(target, block_id):
    reward = RewardView(
        url=f"/t/tr_1/b/{block_id}/reward", dom_id=f"reward-{block_id}", value=None,
        can_edit=True, target=target,
    )  # fmt: skip
    for csrf in (CSRF, ""):
        drawn = trace_html.reward_html(reward, csrf)
        assert drawn == trace_html._form(reward, csrf)
        assert "\x00" not in drawn


def test_each_response_fills_its_own_csrf_field():
    reward = RewardView(
        url="/t/tr_1/b/tb_1/reward", dom_id="reward-tb_1", value=None, can_edit=True
    )
    first = trace_html.reward_html(reward, CSRF)
    other = trace_html.reward_html(reward, CSRF.replace("tok", "other"))
    assert 'value="tok"' in first and 'value="other"' in other and 'value="tok"' not in other


def test_a_set_or_refused_reward_is_drawn_in_full():
    for value, error in ((0.5, ""), (None, "not a number")):
        reward = RewardView(
            url="/t/tr_1/b/tb_1/reward", dom_id="reward-tb_1", value=value, can_edit=True,
            error=error, entered="abc" if error else "",
        )  # fmt: skip
        assert trace_html.reward_html(reward, CSRF) == trace_html._form(reward, CSRF)
