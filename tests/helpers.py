"""Shared test helpers: the engine's pass of one replica of a layout, pure or realistic; a workload with prefixes;
sequential prefixed runs under Hypothesis."""

import dataclasses

import numpy as np
from hypothesis import strategies as st

from roofline.engine import step
from roofline.layout import Layout


def layout_step(m, s, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains=1, cp=1, realistic=False, which="mid",
                attention="heads", weight_stationary="1d", **kw):
    """engine.step under Layout(tp, ep, pp, dp, domains, cp, attention, weight_stationary): the pure roofline, or the
    family's factors."""
    return step(m, s, batch, context, layout=Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains, cp=cp,
                                                    attention=attention, weight_stationary=weight_stationary),
                realistic=realistic,
                which=which, check=False, check_context=False, **kw)


#: a user-catalog accelerator with fp8 cores only (no 16-bit throughput)
TOY_ACCELERATOR_YAML = """accelerators:
  - id: toy-chip
    name: Toy chip
    vendor: toy
    dense_tflops: {fp8: 1000}
    hbm_gb: 100
    hbm_tb_per_s: 4
    scale_up_gb_per_s: 400
    scale_out_gb_per_s: 50
    tdp_w: 500
    usd_per_hour: 1.5
    price_source: test
    price_date: 2026-01
    source: test
    date: 2026-01
"""


def prefixed_workload(arrival, prompt, output, pid, shared, par=None, ptok=None):
    """make_workload with per-request prefix ids and shared tokens (scalars broadcast), and where given the prefixes'
    parents and the tokens at which each extends its parent (a tree of prefixes)."""
    from roofline.simulate import make_workload

    w = make_workload(arrival, prompt, output)
    full = lambda x: np.broadcast_to(np.asarray(x, float), w.arrival_s.shape).copy()  # noqa: E731
    w = dataclasses.replace(w, prefix_id=np.asarray(pid, dtype=np.int64), shared_prefix_tokens=full(shared))
    if par is None:
        return w
    return dataclasses.replace(w, parent_prefix_id=np.asarray(par, dtype=np.int64), parent_prefix_tokens=full(ptok))


@st.composite
def sequential_runs(draw):
    """(prefix ids, prompt lengths, block size, KV capacity) of 2-14 requests on 4 prefixes: prompts of 17-160 tokens
    whole as their prefixes, a pool with room for any one request but not for every prefix."""
    n = draw(st.integers(2, 14))
    prefixes = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    prompts = draw(st.lists(st.integers(17, 160), min_size=n, max_size=n))
    block = draw(st.sampled_from([1, 4, 16]))
    cap = draw(st.integers(170, 400))
    return prefixes, prompts, block, cap
