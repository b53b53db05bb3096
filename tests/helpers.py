"""Shared test helpers: the engine's pass of one replica of a layout, pure or realistic."""

from roofline.engine import step
from roofline.layout import Layout


def layout_step(m, s, batch, context, *, tp=1, ep=1, pp=1, dp=1, domains=1, realistic=False, which="mid", **kw):
    """engine.step under Layout(tp, ep, pp, dp, domains): the pure roofline, or the family's factors."""
    return step(m, s, batch, context, layout=Layout(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains), realistic=realistic,
                which=which, check=False, check_context=False, **kw)
