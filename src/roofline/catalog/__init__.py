"""Catalogs: YAML data files (human units, units in the keys) → frozen SI records.

`get_catalog()` returns the packaged catalog plus any user files added with `add_catalog_file`
(the CLI's `--catalog my.yaml`). A catalog file is a mapping whose keys are sections:
`accelerators`, `systems`, `models`, `prices`, `tiers`, `efficiency`, `engines` — each a list of rows. Every
row needs `id`, `source` and `date` (efficiency and engines rows: `id`, `date` and a source per factor or
figure); unknown keys and impossible values are rejected with a one-line message.
The packaged files document their own format in their header comments.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import CatalogError, UnknownEntryError
from ..hardware import Accelerator, System
from ..model import Model
from ..units import GIGA, MICRO, TERA, GiB
from .schema import check_row

SECTIONS = ("accelerators", "systems", "models", "prices", "tiers", "efficiency", "engines")

ACCELERATOR_SPEC = {
    "id": ("str", True), "name": ("str", True), "vendor": ("str", True), "aliases": ("strs", False),
    "dense_tflops": ("dtype_map", True), "hbm_gb": ("pos", True), "hbm_tb_per_s": ("pos", True),
    "scale_up_gb_per_s": ("pos", True), "scale_out_gb_per_s": ("pos", True), "tdp_w": ("pos", True),
    "usd_per_hour": ("pos", True), "price_source": ("str", True), "price_date": ("str", True),
    "source": ("str", True), "date": ("str", True), "preliminary": ("bool", False), "notes": ("str", False),
    "device_memory_gib": ("pos", False), "device_memory_source": ("str", False),
    "host_link_gb_per_s": ("pos", False), "host_link_source": ("str", False),
}

SYSTEM_SPEC = {
    "id": ("str", True), "name": ("str", True), "accelerator": ("str", True), "chips": ("int", True),
    "aliases": ("strs", False), "scale_up_gb_per_s": ("pos", False), "scale_out_gb_per_s": ("pos", False),
    "scale_up_latency_us": ("pos", True), "scale_out_latency_us": ("pos", True),
    "usd_per_hour": ("pos", False), "source": ("str", True), "date": ("str", True),
    "preliminary": ("bool", False), "notes": ("str", False), "one_shot_all_reduce_max_gpus": ("int", False),
}

MLA_SPEC = {
    "q_lora_rank": ("count", True), "kv_lora_rank": ("int", True), "qk_nope_head_dim": ("int", True),
    "qk_rope_head_dim": ("int", True), "v_head_dim": ("int", True),
}
MOE_SPEC = {
    "experts": ("int", True), "active": ("int", True), "d_ff_expert": ("int", True),
    "shared": ("count", False), "d_ff_shared": ("count", False), "dense_layers": ("count", False),
    "expert_bias": ("bool", False), "router_bias": ("bool", False),
}
MODEL_SPEC = {
    "id": ("str", True), "name": ("str", True), "family": ("str", True), "aliases": ("strs", False),
    "layers": ("int", True), "d_model": ("int", True), "vocab": ("int", True), "heads": ("int", True),
    "kv_heads": ("int", True), "head_dim": ("int", True), "d_ff": ("count", True),
    "gated_mlp": ("bool", False), "tied_embeddings": ("bool", False), "attention_bias": ("bool", False),
    "qk_norm": ("bool", False), "rotary": ("bool", False), "mla": ("map", False), "moe": ("map", False),
    "sliding_window": ("count", False), "local_layers": ("count", False), "kv_layers": ("count", False),
    "max_context": ("int", True), "params_total_published": ("pos", False),
    "params_active_published": ("pos", False), "source": ("str", True), "date": ("str", True),
    "notes": ("str", False),
}


def parse_accelerator(row: dict, where: str) -> Accelerator:
    r = check_row(row, ACCELERATOR_SPEC, where)
    if ("device_memory_gib" in r) != ("device_memory_source" in r):
        raise CatalogError(f"{where} (id {r['id']!r}): device_memory_gib and device_memory_source go together; give "
                           f"the driver-reported total with where it was read, or neither")
    if ("host_link_gb_per_s" in r) != ("host_link_source" in r):
        raise CatalogError(f"{where} (id {r['id']!r}): host_link_gb_per_s and host_link_source go together; give "
                           f"the measured host-to-GPU copy rate with where it was measured, or neither")
    return Accelerator(
        id=r["id"].lower(), name=r["name"], vendor=r["vendor"],
        flops_per_s={k: v * TERA for k, v in r["dense_tflops"].items()},
        hbm_bytes=r["hbm_gb"] * GIGA, hbm_bytes_per_s=r["hbm_tb_per_s"] * TERA,
        scale_up_bytes_per_s=r["scale_up_gb_per_s"] * GIGA,
        scale_out_bytes_per_s=r["scale_out_gb_per_s"] * GIGA, tdp_w=r["tdp_w"],
        usd_per_hour=r["usd_per_hour"], price_source=r["price_source"], price_date=r["price_date"],
        source=r["source"], date=r["date"], preliminary=r.get("preliminary", False),
        aliases=r.get("aliases", ()), notes=r.get("notes", ""),
        device_memory_bytes=r.get("device_memory_gib", 0.0) * GiB, device_memory_source=r.get("device_memory_source", ""),
        host_link_bytes_per_s=r.get("host_link_gb_per_s", 0.0) * GIGA, host_link_source=r.get("host_link_source", ""),
    )


def parse_system(row: dict, where: str, accelerators: dict[str, Accelerator]) -> System:
    r = check_row(row, SYSTEM_SPEC, where)
    acc_id = r["accelerator"].lower()
    if acc_id not in accelerators:
        raise CatalogError(f"{where} (id {r['id']!r}): accelerator {acc_id!r} is not in the catalog; "
                           f"add it under accelerators or fix the id")
    acc = accelerators[acc_id]
    return System(
        id=r["id"].lower(), name=r["name"], accelerator=acc, chips=r["chips"],
        scale_up_bytes_per_s=r.get("scale_up_gb_per_s", acc.scale_up_bytes_per_s / GIGA) * GIGA,
        scale_out_bytes_per_s=r.get("scale_out_gb_per_s", acc.scale_out_bytes_per_s / GIGA) * GIGA,
        scale_up_latency_s=r["scale_up_latency_us"] * MICRO, scale_out_latency_s=r["scale_out_latency_us"] * MICRO,
        source=r["source"], date=r["date"], preliminary=r.get("preliminary", acc.preliminary),
        aliases=r.get("aliases", ()), notes=r.get("notes", ""),
        usd_per_hour=r.get("usd_per_hour", acc.usd_per_hour),
        one_shot_all_reduce_max_gpus=r.get("one_shot_all_reduce_max_gpus", 0),
    )


def parse_model(row: dict, where: str) -> Model:
    from ..model import MLA, MoE

    r = check_row(row, MODEL_SPEC, where, nested={"mla": MLA_SPEC, "moe": MOE_SPEC})
    mla = MLA(**r.pop("mla")) if "mla" in r else None
    moe = MoE(**r.pop("moe")) if "moe" in r else None
    label = f"{where} (id {r['id']!r})"
    if moe and moe.active > moe.experts:
        raise CatalogError(f"{label}: moe.active {moe.active} exceeds moe.experts {moe.experts}; "
                           f"a token cannot use more experts than exist")
    if moe and moe.dense_layers >= r["layers"]:
        raise CatalogError(f"{label}: moe.dense_layers must be below layers ({r['layers']})")
    if r["heads"] % r["kv_heads"]:
        raise CatalogError(f"{label}: heads ({r['heads']}) must be a multiple of kv_heads ({r['kv_heads']})")
    if r.get("local_layers", 0) > r["layers"] or (r.get("local_layers") and not r.get("sliding_window")):
        raise CatalogError(f"{label}: local_layers needs sliding_window > 0 and at most layers ({r['layers']})")
    if r.get("kv_layers", 0) > r["layers"]:
        raise CatalogError(f"{label}: kv_layers ({r['kv_layers']}) cannot exceed layers ({r['layers']})")
    r["id"] = r["id"].lower()
    return Model(mla=mla, moe=moe, **r)


@dataclass
class Catalog:
    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    systems: dict[str, System] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    raw: dict[str, list[tuple[str, dict]]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    aliases: dict[str, dict[str, str]] = field(default_factory=lambda: {s: {} for s in SECTIONS})
    parsed: dict = field(default_factory=dict)  # raw sections parsed on first use (e.g. efficiency families)

    def _get(self, section: str, kind: str, name: str):
        table = getattr(self, section)
        key = str(name).lower()
        key = self.aliases[section].get(key, key)
        if key not in table:
            raise UnknownEntryError(kind, str(name), list(table) + list(self.aliases[section]))
        return table[key]

    def accelerator(self, name: str) -> Accelerator:
        return self._get("accelerators", "accelerator", name)

    def system(self, name: str) -> System:
        return self._get("systems", "system", name)

    def model(self, name: str) -> Model:
        return self._get("models", "model", name)

    def add_file(self, path: str | Path) -> None:
        """Merge a catalog file; a row whose id already exists replaces it (user overrides packaged)."""
        import yaml

        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise CatalogError(f"cannot read catalog file {path}: {exc.strerror}; check the path") from None
        try:
            doc = yaml.load(text, Loader=safe_loader())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}" if mark else ""
            raise CatalogError(f"catalog file {path} is not valid YAML{at}; fix the syntax") from None
        self.add_document(doc, str(path))

    def add_document(self, doc, name: str) -> None:
        if not isinstance(doc, dict):
            raise CatalogError(f"{name}: expected a mapping with sections {', '.join(SECTIONS)}")
        unknown = [k for k in doc if k not in SECTIONS and k != "format"]
        if unknown:
            raise CatalogError(f"{name}: unknown section {unknown[0]!r}; expected {', '.join(SECTIONS)}")
        for section in SECTIONS:  # order matters: systems refer to accelerators
            rows = doc.get(section) or []
            if not isinstance(rows, list):
                raise CatalogError(f"{name}: section {section!r} must be a list of rows")
            for i, row in enumerate(rows):
                where = f"{name}: {section}[{i}]"
                rec: Accelerator | System | Model
                if section == "accelerators":
                    rec = parse_accelerator(row, where)
                elif section == "systems":
                    rec = parse_system(row, where, self.accelerators)
                elif section == "models":
                    rec = parse_model(row, where)
                else:
                    if not isinstance(row, dict) or "id" not in row:
                        raise CatalogError(f"{where}: each row needs an 'id'")
                    self.raw[section].append((where, row))
                    continue
                table = getattr(self, section)
                table[rec.id] = rec
                for alias in rec.aliases:
                    self.aliases[section][alias] = rec.id


def safe_loader():
    """PyYAML's C safe loader when libyaml is there (the same documents, ~10x faster), else the Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _packaged_documents():
    import yaml

    data = resources.files("roofline.catalog") / "data"
    for entry in sorted(data.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            yield yaml.load(entry.read_text(), Loader=safe_loader()), f"roofline/catalog/data/{entry.name}"


_user_files: list[str] = []


@functools.lru_cache(maxsize=None)
def _load(user_files: tuple[str, ...]) -> Catalog:
    cat = Catalog()
    docs = list(_packaged_documents())
    for section in SECTIONS:  # load section by section across files so references resolve
        for doc, name in docs:
            if doc and doc.get(section):
                cat.add_document({section: doc[section]}, name)
    for path in user_files:
        cat.add_file(path)
    return cat


def add_catalog_file(path: str | Path) -> Catalog:
    """Add a user catalog file (rows override packaged ones with the same id); returns the catalog."""
    _user_files.append(str(path))
    return get_catalog()


def reset_user_files() -> None:
    _user_files.clear()


def get_catalog() -> Catalog:
    return _load(tuple(_user_files))


def accelerator(name: str) -> Accelerator:
    return get_catalog().accelerator(name)


def system(name: str) -> System:
    return get_catalog().system(name)


def model(name: str) -> Model:
    """A catalog model by id or alias, or a Hugging Face config.json path (ends in .json)."""
    if str(name).endswith(".json"):
        from .hf import load_hf_config

        return load_hf_config(name)
    return get_catalog().model(name)
