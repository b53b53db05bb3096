"""Parse and validate the `prices:` and `tiers:` catalog sections into frozen SI records.

The catalog loader keeps these rows unparsed (`get_catalog().raw["prices"]`, `.raw["tiers"]`, as
(where, row) pairs); this module turns them into `PriceList`, `GpuRental` and `MemoryTier` records.
Formats are documented in the headers of catalog/data/prices.yaml and tiers.yaml. Prices are stored
in USD per token (the YAML's USD per million tokens / 1e6), times in seconds, sizes in bytes.
Unknown keys and impossible values (negative prices, a tier at or below zero context, a cache hit
dearer than a miss, a tier without a cost) raise CatalogError with one line naming the row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CatalogError, UnknownEntryError
from ..units import GIGA, MEGA, SECONDS_PER_DAY, SECONDS_PER_HOUR
from .schema import check_row

#: Memory hierarchy, fastest first (lecture §5.4 [S 01:49:26]); CXL sits between host DDR and flash.
MEDIA = ("hbm", "ddr", "cxl", "flash", "disk")
#: Seconds in an average month (365.25/12 days), for $/GB-month prices and amortisation.
SECONDS_PER_MONTH = 365.25 / 12 * SECONDS_PER_DAY

_PRICE_KEYS = ("input_usd_per_mtok", "output_usd_per_mtok", "cache_hit_usd_per_mtok", "usd_per_mtok",
               "cache_storage_usd_per_mtok_hour", "usd_per_gpu_hour")

API_SPEC = {
    "id": ("str", True), "kind": ("str", True), "name": ("str", True), "provider": ("str", True),
    "model": ("str", True), "aliases": ("strs", False),
    "input_usd_per_mtok": ("nonneg", True), "output_usd_per_mtok": ("nonneg", True),
    "cache_hit_usd_per_mtok": ("nonneg", False), "cache_writes": ("any", False),
    "cache_storage_usd_per_mtok_hour": ("nonneg", False), "context_tiers": ("any", False),
    "variants": ("any", False), "source": ("str", True), "date": ("str", True), "notes": ("str", False),
}
TIER_PRICE_SPEC = {
    "above_tokens": ("pos", True), "input_usd_per_mtok": ("nonneg", True),
    "output_usd_per_mtok": ("nonneg", True), "cache_hit_usd_per_mtok": ("nonneg", False),
}
WRITE_SPEC = {"hold_s": ("pos", True), "usd_per_mtok": ("nonneg", True)}
VARIANT_SPEC = {
    "name": ("str", True), "input_usd_per_mtok": ("nonneg", True), "output_usd_per_mtok": ("nonneg", True),
    "cache_hit_usd_per_mtok": ("nonneg", False), "speedup": ("pos", False), "notes": ("str", False),
}
RENTAL_SPEC = {
    "id": ("str", True), "kind": ("str", True), "accelerator": ("str", True),
    "usd_per_gpu_hour": ("pos", True), "provider": ("str", True), "source": ("str", True),
    "date": ("str", True), "notes": ("str", False),
}
MEMORY_TIER_SPEC = {
    "id": ("str", True), "name": ("str", True), "medium": ("str", True), "accelerator": ("str", False),
    "capacity_gb": ("pos", False), "read_gb_per_s": ("pos", False), "usd_per_hour": ("pos", False),
    "usd_per_gb_month": ("pos", False), "capex_usd_per_gb": ("pos", False),
    "amortization_months": ("pos", False), "server_usd_per_hour": ("pos", False),
    "share_of_server": ("pos", False), "cost_source": ("str", False), "source": ("str", True),
    "date": ("str", True), "notes": ("str", False),
}


@dataclass(frozen=True)
class ContextTier:
    """Prices that apply to prompts longer than `above_tokens` (USD per token)."""

    above_tokens: float
    input_usd_per_token: float
    output_usd_per_token: float
    cache_hit_usd_per_token: float | None = None


@dataclass(frozen=True)
class CacheWrite:
    """Writing one token to a prompt cache that holds it `hold_s` seconds (USD per token)."""

    hold_s: float
    usd_per_token: float


@dataclass(frozen=True)
class Variant:
    """The same model sold another way (fast, priority, flex, off-peak); speedup None if unstated."""

    name: str
    input_usd_per_token: float
    output_usd_per_token: float
    cache_hit_usd_per_token: float | None = None
    speedup: float | None = None
    notes: str = ""


@dataclass(frozen=True)
class PriceList:
    """One model's API price list, USD per token."""

    id: str
    name: str
    provider: str
    model: str
    input_usd_per_token: float
    output_usd_per_token: float
    cache_hit_usd_per_token: float | None
    cache_writes: tuple[CacheWrite, ...]
    cache_storage_usd_per_token_s: float | None
    context_tiers: tuple[ContextTier, ...]
    variants: tuple[Variant, ...]
    source: str
    date: str
    notes: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def output_over_input(self) -> float:
        return self.output_usd_per_token / self.input_usd_per_token if self.input_usd_per_token else float("inf")


@dataclass(frozen=True)
class GpuRental:
    id: str
    accelerator: str
    usd_per_gpu_hour: float
    provider: str
    source: str
    date: str
    notes: str = ""


@dataclass(frozen=True)
class MemoryTier:
    """One storage unit of a tier: capacity, bandwidth into HBM, and its cost per second (SI)."""

    id: str
    name: str
    medium: str
    capacity_bytes: float
    bytes_per_s: float
    usd_per_s: float  # the whole unit
    cost_source: str
    source: str
    date: str
    notes: str = ""

    @property
    def drain_time_s(self) -> float:
        """C/BW: the time to read the whole unit once (lecture §5.4 drain-time rule [S 02:00:37])."""
        return self.capacity_bytes / self.bytes_per_s

    @property
    def usd_per_byte_s(self) -> float:
        return self.usd_per_s / self.capacity_bytes

    @property
    def usd_per_gb_month(self) -> float:
        return self.usd_per_byte_s * GIGA * SECONDS_PER_MONTH


def _label(where: str, row) -> str:
    rid = row.get("id") if isinstance(row, dict) else None
    return f"{where} (id {rid!r})" if rid is not None else where


def _no_negative_prices(row, label: str) -> None:
    """Reject a negative price with a message that says so (before the generic schema check)."""
    if not isinstance(row, dict):
        return
    for key in _PRICE_KEYS:
        v = row.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            raise CatalogError(f"{label}: {key} is {v:g}; a price cannot be negative - use 0 for free")


def _rows(value, label: str, key: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CatalogError(f"{label}: {key} must be a list of rows, got {type(value).__name__}")
    return value


def parse_price_row(row, where: str, accelerators=None) -> PriceList | GpuRental:
    """One `prices:` row -> PriceList (kind api) or GpuRental (kind gpu_rental)."""
    if not isinstance(row, dict):
        raise CatalogError(f"{where}: expected a mapping of key: value, got {type(row).__name__}")
    label = _label(where, row)
    kind = row.get("kind")
    _no_negative_prices(row, label)
    if kind == "gpu_rental":
        r = check_row(row, RENTAL_SPEC, where)
        acc = r["accelerator"].lower()
        if accelerators is not None and acc not in accelerators:
            raise CatalogError(f"{label}: accelerator {acc!r} is not in the catalog; add it under accelerators or fix the id")
        return GpuRental(id=r["id"].lower(), accelerator=acc, usd_per_gpu_hour=r["usd_per_gpu_hour"],
                         provider=r["provider"], source=r["source"], date=r["date"], notes=r.get("notes", ""))
    if kind != "api":
        raise CatalogError(f"{label}: kind must be 'api' or 'gpu_rental', got {kind!r}")
    r = check_row(row, API_SPEC, where)
    per_tok = 1.0 / MEGA
    miss = r["input_usd_per_mtok"]
    hit = r.get("cache_hit_usd_per_mtok")
    if hit is not None and hit > miss:
        raise CatalogError(f"{label}: cache_hit_usd_per_mtok {hit:g} is dearer than a miss "
                           f"(input_usd_per_mtok {miss:g}); a cache hit must cost at most the base input price")
    tiers, writes, variants = [], [], []
    last = 0.0
    for i, t in enumerate(_rows(r.get("context_tiers"), label, "context_tiers")):
        tl = f"{label}: context_tiers[{i}]"
        _no_negative_prices(t, tl)
        if isinstance(t, dict) and isinstance(t.get("above_tokens"), (int, float)) and t["above_tokens"] <= 0:
            raise CatalogError(f"{tl}: above_tokens is {t['above_tokens']:g}; a context tier must start above "
                               f"0 tokens - give the prompt length where the higher price begins")
        c = check_row(t, TIER_PRICE_SPEC, tl)
        if c["above_tokens"] <= last:
            raise CatalogError(f"{tl}: above_tokens {c['above_tokens']:g} must exceed the previous tier's "
                               f"{last:g}; list context tiers in increasing order")
        last = c["above_tokens"]
        if c.get("cache_hit_usd_per_mtok") is not None and c["cache_hit_usd_per_mtok"] > c["input_usd_per_mtok"]:
            raise CatalogError(f"{tl}: cache_hit_usd_per_mtok {c['cache_hit_usd_per_mtok']:g} is dearer than a "
                               f"miss ({c['input_usd_per_mtok']:g}); a cache hit must cost at most the input price")
        tiers.append(ContextTier(c["above_tokens"], c["input_usd_per_mtok"] * per_tok,
                                 c["output_usd_per_mtok"] * per_tok,
                                 None if c.get("cache_hit_usd_per_mtok") is None else c["cache_hit_usd_per_mtok"] * per_tok))
    for i, w in enumerate(_rows(r.get("cache_writes"), label, "cache_writes")):
        wl = f"{label}: cache_writes[{i}]"
        _no_negative_prices(w, wl)
        c = check_row(w, WRITE_SPEC, wl)
        writes.append(CacheWrite(c["hold_s"], c["usd_per_mtok"] * per_tok))
    for i, v in enumerate(_rows(r.get("variants"), label, "variants")):
        vl = f"{label}: variants[{i}]"
        _no_negative_prices(v, vl)
        c = check_row(v, VARIANT_SPEC, vl)
        vh = c.get("cache_hit_usd_per_mtok")
        if vh is not None and vh > c["input_usd_per_mtok"]:
            raise CatalogError(f"{vl}: cache_hit_usd_per_mtok {vh:g} is dearer than a miss "
                               f"({c['input_usd_per_mtok']:g}); a cache hit must cost at most the input price")
        variants.append(Variant(c["name"], c["input_usd_per_mtok"] * per_tok, c["output_usd_per_mtok"] * per_tok,
                                None if vh is None else vh * per_tok, c.get("speedup"), c.get("notes", "")))
    storage = r.get("cache_storage_usd_per_mtok_hour")
    return PriceList(
        id=r["id"].lower(), name=r["name"], provider=r["provider"], model=r["model"],
        input_usd_per_token=miss * per_tok, output_usd_per_token=r["output_usd_per_mtok"] * per_tok,
        cache_hit_usd_per_token=None if hit is None else hit * per_tok,
        cache_writes=tuple(sorted(writes, key=lambda w: w.hold_s)),
        cache_storage_usd_per_token_s=None if storage is None else storage * per_tok / SECONDS_PER_HOUR,
        context_tiers=tuple(tiers), variants=tuple(variants), source=r["source"], date=r["date"],
        notes=r.get("notes", ""), aliases=r.get("aliases", ()),
    )


def parse_tier_row(row, where: str, accelerators=None) -> MemoryTier:
    """One `tiers:` row -> MemoryTier (capacity, bandwidth and $/s of the whole unit, SI)."""
    r = check_row(row, MEMORY_TIER_SPEC, where)
    label = _label(where, row)
    medium = r["medium"].lower()
    if medium not in MEDIA:
        raise CatalogError(f"{label}: medium {medium!r} is not one of {', '.join(MEDIA)}")
    if "accelerator" in r:
        acc_id = r["accelerator"].lower()
        if accelerators is None or acc_id not in accelerators:
            raise CatalogError(f"{label}: accelerator {acc_id!r} is not in the catalog; add it or give "
                               f"capacity_gb, read_gb_per_s and a cost instead")
        acc = accelerators[acc_id]
        cap = r.get("capacity_gb", acc.hbm_bytes / GIGA) * GIGA
        bw = r.get("read_gb_per_s", acc.hbm_bytes_per_s / GIGA) * GIGA
        default_cost = ("usd_per_hour", acc.usd_per_hour, f"{acc.id} rental: {acc.price_source} ({acc.price_date})")
    else:
        for key in ("capacity_gb", "read_gb_per_s"):
            if key not in r:
                raise CatalogError(f"{label}: missing required key {key!r} (a number > 0); add it or name an accelerator")
        cap, bw = r["capacity_gb"] * GIGA, r["read_gb_per_s"] * GIGA
        default_cost = None
    forms = [k for k in ("usd_per_hour", "usd_per_gb_month", "capex_usd_per_gb", "server_usd_per_hour") if k in r]
    if len(forms) > 1:
        raise CatalogError(f"{label}: give exactly one cost ({', '.join(forms)} all given)")
    if not forms and default_cost is None:
        raise CatalogError(f"{label}: no cost; give usd_per_hour, usd_per_gb_month, capex_usd_per_gb with "
                           f"amortization_months, or server_usd_per_hour with share_of_server")
    if forms:
        form = forms[0]
    else:
        assert default_cost is not None  # checked above
        form = default_cost[0]
    if form == "usd_per_hour":
        usd_per_s = r.get("usd_per_hour", default_cost[1] if default_cost else 0.0) / SECONDS_PER_HOUR
    elif form == "usd_per_gb_month":
        usd_per_s = r["usd_per_gb_month"] * cap / GIGA / SECONDS_PER_MONTH
    elif form == "capex_usd_per_gb":
        if "amortization_months" not in r:
            raise CatalogError(f"{label}: capex_usd_per_gb needs amortization_months (e.g. 48)")
        usd_per_s = r["capex_usd_per_gb"] * cap / GIGA / (r["amortization_months"] * SECONDS_PER_MONTH)
    else:
        share = r.get("share_of_server")
        if share is None or share > 1:
            raise CatalogError(f"{label}: server_usd_per_hour needs share_of_server in (0, 1], got {share}")
        usd_per_s = r["server_usd_per_hour"] * share / SECONDS_PER_HOUR
    cost_source = r.get("cost_source") or (default_cost[2] if default_cost and not forms else "")
    if not cost_source:
        raise CatalogError(f"{label}: missing required key 'cost_source' (text); say where the cost comes from")
    return MemoryTier(id=r["id"].lower(), name=r["name"], medium=medium, capacity_bytes=cap, bytes_per_s=bw,
                      usd_per_s=usd_per_s, cost_source=cost_source, source=r["source"], date=r["date"],
                      notes=r.get("notes", ""))


def _dedupe(records):
    out = {}
    for rec in records:  # later rows (user files) replace packaged rows with the same id
        out[rec.id] = rec
    return out


def price_lists(catalog=None) -> dict[str, PriceList]:
    """All API price lists in the catalog (packaged + --catalog files), by id."""
    cat = catalog or _catalog()
    recs = [parse_price_row(row, where, cat.accelerators) for where, row in cat.raw["prices"]]
    return _dedupe(r for r in recs if isinstance(r, PriceList))


def gpu_rentals(catalog=None) -> dict[str, GpuRental]:
    cat = catalog or _catalog()
    recs = [parse_price_row(row, where, cat.accelerators) for where, row in cat.raw["prices"]]
    return _dedupe(r for r in recs if isinstance(r, GpuRental))


def memory_tiers(catalog=None) -> dict[str, MemoryTier]:
    """All memory tiers, ordered by medium (HBM first) then drain time."""
    cat = catalog or _catalog()
    recs = _dedupe(parse_tier_row(row, where, cat.accelerators) for where, row in cat.raw["tiers"])
    order = sorted(recs.values(), key=lambda t: (MEDIA.index(t.medium), t.drain_time_s))
    return {t.id: t for t in order}


def price_list(name: str, catalog=None) -> PriceList:
    lists = price_lists(catalog)
    key = name.lower()
    for p in lists.values():
        if key == p.id or key in p.aliases:
            return p
    raise UnknownEntryError("price list", name, list(lists), listing="roofline prices show")


def memory_tier(name: str, catalog=None) -> MemoryTier:
    tiers = memory_tiers(catalog)
    if name.lower() not in tiers:
        raise UnknownEntryError("tier", name, list(tiers), listing="roofline tiers (every catalog tier)")
    return tiers[name.lower()]


def _catalog():
    from . import get_catalog

    return get_catalog()
