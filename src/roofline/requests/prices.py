"""`prices infer` (what an API's prices reveal) and `tiers` (memory tiers vs rematerialisation for one
cached token): the requests and the functions returning their --json dicts (docs/pricing.md)."""

from __future__ import annotations

from typing import Any, Optional

from . import resolve, rules
from .base import OptReal, OptText, Price, Real, Request, describe

#: KV bytes per token when none is given (the lecture's 2,048: one shared KV layer x 2 x 128 x 8 heads, fp8)
DEFAULT_KV_BYTES = 2048.0


def _ids(name: str, value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise rules.InputError(f"{name} must be a list of ids, got {rules._shown(value)}; e.g. [\"h100-sxm\"]")
    return list(value)


def _numbers(name: str, value, **bounds) -> list[float]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        value = [value]
    return [rules.number(name, v, **bounds) for v in value]


class PricesRequest(Request):
    """Price lists to read (default: all), the accelerators and active-parameter counts that bound the
    inferences, the KV bytes per token for the cache inferences, and the remat accelerator."""

    ids: Any = None
    accelerator: Any = None
    active_params: Any = None
    kv_bytes: Real(gt=0, le=1e9, fix="KV bytes per token, e.g. 2048") = DEFAULT_KV_BYTES
    remat_accelerator: str = "h100-sxm"
    remat_active_params: Real(gt=0, le=1e16, fix="active parameters, e.g. 1e11") = 1e11
    tier: Any = None
    plot: OptText = None
    sparse_attention: Optional[str] = None

    def check(self) -> None:
        from ..catalog import get_catalog
        from ..catalog.prices import memory_tier, memory_tiers, price_list, price_lists

        f = self.flag
        ids = _ids(f("ids"), self.ids)
        self._prices = [price_list(i) for i in ids] if ids else list(price_lists().values())
        cat = get_catalog()
        accs = _ids(f("accelerator"), self.accelerator)
        self._accelerators = [cat.accelerator(i) for i in accs] if accs else list(cat.accelerators.values())
        tiers = _ids(f("tier"), self.tier)
        self._tiers = [memory_tier(i) for i in tiers] if tiers else list(memory_tiers().values())
        self._active = tuple(_numbers(f("active_params"), self.active_params, gt=0, le=1e16))
        self._remat_acc = cat.accelerator(self.remat_accelerator)
        self._sparse = resolve.sparse_attention(self.sparse_attention)
        if self.plot is not None:
            rules.output_path(f("plot"), self.plot, (".png", ".svg", ".pdf"))


def run_prices(req: PricesRequest) -> dict:
    """The `roofline prices infer --json` dict: every inference each price list supports, with ranges
    (`plot` names the figure the CLI draws; the request layer writes no files)."""
    from .. import pricing
    from ..tiers import remat_cost_on

    remat = remat_cost_on(req._remat_acc, active_params=req.remat_active_params)
    ap = req._active or pricing.ACTIVE_PARAMS_RANGE
    results = {p.id: pricing.infer_all(p, req._accelerators, req._tiers, kv_bytes=req.kv_bytes, remat_usd=remat,
                                       active_params=ap, sparse=req._sparse) for p in req._prices}
    d = {"remat_usd_per_token": remat, "kv_bytes_per_token": req.kv_bytes,
         "accelerators": [a.id for a in req._accelerators], "tiers": [t.id for t in req._tiers],
         "inferences": {k: [i.to_dict() for i in v] for k, v in results.items()},
         **({"plot": req.plot} if req.plot else {})}
    return rules.finite(d, describe(req))


class TiersRequest(Request):
    """One cached token of `kv_bytes` (default 2,048; or `model`'s KV in `kv_dtype`, which also sets the
    remat's active parameters, default 1e11) held for `hold` seconds in each
    memory tier, against rematerialising it on `remat_accelerator`."""

    kv_bytes: OptReal(gt=0, le=1e9, fix="KV bytes per token, e.g. 2048") = None
    model: Optional[Any] = None
    kv_dtype: str = "bf16"
    hold: Any = None
    tier: Any = None
    remat_accelerator: str = "h100-sxm"
    remat_active_params: OptReal(gt=0, le=1e16, fix="active parameters, e.g. 1e11") = None
    usd_per_gpu_hour: Price = None
    plot: OptText = None

    def check(self) -> None:
        from .. import model as M
        from ..catalog import get_catalog
        from ..catalog.prices import memory_tier, memory_tiers
        from . import resolve

        f = self.flag
        if self.model is not None:
            given = [f(k) for k in ("kv_bytes", "remat_active_params") if getattr(self, k) is not None]
            if given:
                raise rules.UsageError(f"{f('model')} sets the KV bytes per token and the active parameters; drop "
                                       f"{' and '.join(given)} or {f('model')}")
            self._model = resolve.model(self.model, f("model"))
            kv_dtype = rules.dtype(f("kv_dtype"), self.kv_dtype)
            self._kv = float(M.kv_bytes_per_token(self._model, kv_dtype))
            self._active = float(M.params_active(self._model))
        else:
            if self.changed("kv_dtype"):
                raise rules.UsageError(f"{f('kv_dtype')} applies with {f('model')}; give {f('kv_bytes')} in that "
                                       f"format's bytes instead")
            self._kv = DEFAULT_KV_BYTES if self.kv_bytes is None else self.kv_bytes
            self._active = 1e11 if self.remat_active_params is None else self.remat_active_params
        holds = _numbers(f("hold"), self.hold, gt=0, le=3.2e9)
        self._holds = holds or [0.02, 300.0, 3600.0]
        tiers = _ids(f("tier"), self.tier)
        self._tiers = [memory_tier(i) for i in tiers] if tiers else list(memory_tiers().values())
        self._acc = get_catalog().accelerator(self.remat_accelerator)
        if self.plot is not None:
            rules.output_path(f("plot"), self.plot, (".png", ".svg", ".pdf"))


def tier_options(req: TiersRequest):
    """(tiers.options for the request's token and tiers, remat cost per token): what run_tiers prices and
    what `roofline tiers --plot` draws."""
    from .. import tiers as T

    remat = T.remat_cost_on(req._acc, active_params=req._active, usd_per_gpu_hour=req.usd_per_gpu_hour)
    return T.options(req._kv, req._tiers, remat), remat


def run_tiers(req: TiersRequest) -> dict:
    """The `roofline tiers --json` dict: tiers with their retrieve and hold costs, the cheapest option by
    hold time (bands), priced holds with the drain-time rule's tier, and HBM vs remat break-even."""
    import numpy as np

    from .. import tiers as T

    tl, kv = req._tiers, req._kv
    holds = np.asarray(req._holds, dtype=float)
    opts, remat = tier_options(req)
    bands = T.bands(opts)
    costs = opts.cost(holds)
    best = T.cheapest(opts, holds)
    rule = T.tier_for_hold(holds, tl)
    hbm = [t for t in tl if t.medium == "hbm"]
    t_be = float(T.break_even_s(0.0, T.hold_cost_usd_per_s(kv, hbm[0]), remat, 0.0)) if hbm else None
    d = {
        "kv_bytes_per_token": kv, "remat_usd_per_token": remat, "remat_active_params": req._active,
        "tiers": [{"id": t.id, "medium": t.medium, "capacity_bytes": t.capacity_bytes,
                   "bytes_per_s": t.bytes_per_s, "drain_time_s": t.drain_time_s,
                   "usd_per_gb_month": t.usd_per_gb_month, "retrieve_usd_per_token": float(opts.retrieve_usd[i]),
                   "hold_usd_per_token_s": float(opts.hold_usd_per_s[i]), "source": t.source,
                   "cost_source": t.cost_source} for i, t in enumerate(tl)],
        "bands": [{"option": n, "from_s": a, "to_s": b if np.isfinite(b) else None} for n, a, b in bands],
        "holds": [{"hold_s": float(h), "tier": tl[int(r)].id, "tier_drain_time_s": tl[int(r)].drain_time_s,
                   "cheapest": opts.names[int(b)], "cost_usd_per_token": float(costs[int(b), k])}
                  for k, (h, b, r) in enumerate(zip(holds, best, rule))],
        "break_even_hbm_vs_remat_s": t_be, **({"plot": req.plot} if req.plot else {})}
    return rules.finite(d, describe(req))
