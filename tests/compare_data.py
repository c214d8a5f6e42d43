"""Real tau2-bench runs for the comparison tests, split into datasets, and the figures a
comparison must give, computed here from the raw files with scipy (never from the
selector under test)."""

import io
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA
from traces.models import Dataset
from traces.services.imports import trace_import

GPT41 = SHARED_DATA / "tau2-bench" / "gpt-4.1_telecom_no-user_4trials_5tasks.json"
GROK3 = SHARED_DATA / "tau2-bench-fork" / "telecom-workflow_grok-3.json"


def raw(path: Path) -> dict:
    if not path.is_file():
        pytest.skip(f"{path} is absent: the real benchmark files are not here")
    return json.loads(path.read_bytes())


def import_runs(org, name: str, top: dict, keep=lambda sim: True) -> Dataset:
    """The file's simulations that `keep` accepts, imported as dataset `name`."""
    part = {**top, "simulations": [s for s in top["simulations"] if keep(s)]}
    data = json.dumps(part).encode()
    result = trace_import(
        organization=org, dataset_name=name, files=[(f"{name}.json", io.BytesIO(data))]
    )
    return result.dataset


def expected(sims_a: list[dict], sims_b: list[dict]) -> dict:
    """Every figure of comparing A with B, from the simulations themselves."""
    from scipy import stats  # here, not at the top: collecting imports every test module

    def per_task(sims):
        out = defaultdict(list)
        for s in sims:
            out[s["task_id"]].append(s["reward_info"]["reward"] == 1.0)
        return out

    ta, tb = per_task(sims_a), per_task(sims_b)
    shared = sorted(set(ta) & set(tb))
    diffs = [sum(tb[t]) / len(tb[t]) - sum(ta[t]) / len(ta[t]) for t in shared]
    wins_a = sum(s["reward_info"]["reward"] == 1.0 for s in sims_a)
    wins_b = sum(s["reward_info"]["reward"] == 1.0 for s in sims_b)
    out = {
        "tasks": {
            t: (len(ta[t]), len(tb[t]), sum(ta[t]) / len(ta[t]), sum(tb[t]) / len(tb[t]))
            for t in shared
        },
        "shared_tasks": len(shared),
        "accuracy_a": wins_a / len(sims_a),
        "accuracy_b": wins_b / len(sims_b),
        "accuracy_a_ci": list(stats.binomtest(wins_a, len(sims_a)).proportion_ci(method="wilson")),
        "mean_difference": sum(diffs) / len(diffs) if diffs else None,
        "flipped": sorted(
            t for t in shared if (any(ta[t]) and not any(tb[t])) or (any(tb[t]) and not any(ta[t]))
        ),
    }
    if len(diffs) >= 2 and len(set(diffs)) > 1:
        ci = stats.t.interval(
            0.95, len(diffs) - 1, loc=sum(diffs) / len(diffs), scale=stats.sem(diffs)
        )
        out["ci"] = [max(-1.0, ci[0]), min(1.0, ci[1])]  # where a difference of shares lies
    if any(d != 0 for d in diffs):
        p = stats.wilcoxon(diffs).pvalue
        out["p_value"] = None if math.isnan(p) else float(p)
    else:
        out["p_value"] = None
    return out
