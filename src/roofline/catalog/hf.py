"""Build a Model from a local Hugging Face `config.json` (never the network).

Families: Llama / Mistral (llama, mistral), Mixtral (mixtral), Qwen2 / Qwen3 (qwen2, qwen3),
Qwen3-MoE (qwen3_moe), DeepSeek-V3 / Kimi K2 (deepseek_v3, kimi_k2), gpt-oss (gpt_oss), Gemma 1-3
(gemma, gemma2, gemma3, gemma3_text; a multimodal config's `text_config` is used).
Unknown `model_type`s are refused with the list of supported ones rather than guessed.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import CatalogError
from ..model import MLA, Model, MoE

SUPPORTED = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "deepseek_v3", "kimi_k2",
             "gpt_oss", "gemma", "gemma2", "gemma3", "gemma3_text")


def load_hf_config(path: str | Path) -> Model:
    path = Path(path)
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{path} is not UTF-8 text (byte {exc.start}); give the path to a Hugging Face "
                           f"config.json") from None
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc.strerror}; give the path to a local config.json") from None
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}); "
                           f"fix the file or download it again") from None
    if not isinstance(cfg, dict):
        raise CatalogError(f"{path}: expected a JSON object with model_type, hidden_size, ...")
    return model_from_hf_dict(cfg, name=path.parent.name or path.stem, where=str(path))


def model_from_hf_dict(cfg: dict, name: str = "hf-model", where: str = "config.json") -> Model:
    mtype = cfg.get("model_type")
    if mtype == "gemma3" and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "model_type": "gemma3_text", "_parent": cfg}
        mtype = "gemma3_text"
    if mtype not in SUPPORTED:
        raise CatalogError(f"{where}: model_type {mtype!r} is not supported; expected one of "
                           f"{', '.join(SUPPORTED)}")

    def need(key, *alts):
        for k in (key, *alts):
            v = cfg.get(k)
            if v is not None:
                if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                    raise CatalogError(f"{where}: {k} is {v!r}; expected a whole number > 0")
                return v
        raise CatalogError(f"{where}: missing {key!r}, which a {mtype} config must have")

    def opt(key, default):
        """An optional whole-number field: absent/null/0 → default; otherwise a whole number > 0."""
        v = cfg.get(key)
        if v is None or v == 0:
            return default
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise CatalogError(f"{where}: {key} is {v!r}; expected a whole number >= 0")
        return v

    d_model = need("hidden_size")
    layers = need("num_hidden_layers")
    heads = need("num_attention_heads")
    kv_heads = opt("num_key_value_heads", heads)
    head_dim = opt("head_dim", d_model // heads)
    vocab = need("vocab_size")
    gemma = mtype.startswith("gemma")
    kw = dict(
        id=f"hf:{name}".lower(), name=name, family=mtype, layers=layers, d_model=d_model, vocab=vocab,
        heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        tied_embeddings=bool(cfg.get("tie_word_embeddings", gemma)),
        attention_bias=bool(cfg.get("attention_bias", mtype == "qwen2")),
        qk_norm=mtype in ("qwen3", "qwen3_moe", "gemma3_text"),
        max_context=opt("max_position_embeddings", 4096),
        source=f"Hugging Face config.json at {where}", date="",
    )
    d_ff = opt("intermediate_size", 0)

    if mtype in ("deepseek_v3", "kimi_k2"):
        kw["mla"] = MLA(q_lora_rank=opt("q_lora_rank", 0), kv_lora_rank=need("kv_lora_rank"),
                        qk_nope_head_dim=need("qk_nope_head_dim"), qk_rope_head_dim=need("qk_rope_head_dim"),
                        v_head_dim=need("v_head_dim"))
        kw["kv_heads"] = heads
        kw["moe"] = MoE(experts=need("n_routed_experts"), active=need("num_experts_per_tok"),
                        d_ff_expert=need("moe_intermediate_size"), shared=opt("n_shared_experts", 0),
                        dense_layers=opt("first_k_dense_replace", 0),
                        router_bias=cfg.get("topk_method") == "noaux_tc")
    elif mtype == "mixtral":
        kw["moe"] = MoE(experts=need("num_local_experts"), active=need("num_experts_per_tok"), d_ff_expert=need("intermediate_size"))
        d_ff = 0
    elif mtype == "qwen3_moe":
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
            raise CatalogError(f"{where}: mlp_only_layers is {only!r}; expected a list of layer indices")
        dense = len(only)
        kw["moe"] = MoE(experts=need("num_experts"), active=need("num_experts_per_tok"),
                        d_ff_expert=need("moe_intermediate_size"), dense_layers=dense)
        if dense and cfg.get("mlp_only_layers") != list(range(dense)):
            raise CatalogError(f"{where}: mlp_only_layers must be the leading layers to be modelled; got "
                               f"{cfg.get('mlp_only_layers')}")
        if (cfg.get("decoder_sparse_step") or 1) != 1:
            raise CatalogError(f"{where}: decoder_sparse_step other than 1 is not supported")
    elif mtype == "gpt_oss":
        kw["moe"] = MoE(experts=need("num_local_experts"), active=need("num_experts_per_tok", "experts_per_token"),
                        d_ff_expert=need("intermediate_size"), expert_bias=True, router_bias=True)
        kw["attention_bias"] = True
        d_ff = 0
    window = opt("sliding_window", 0)
    types = cfg.get("layer_types")
    if window and isinstance(types, list):
        kw["sliding_window"], kw["local_layers"] = window, sum(1 for t in types if t == "sliding_attention")
    elif window and mtype in ("gemma3_text",):
        pattern = opt("sliding_window_pattern", 6)
        kw["sliding_window"], kw["local_layers"] = window, layers - layers // pattern
    elif window and mtype == "gemma2":
        kw["sliding_window"], kw["local_layers"] = window, layers // 2
    elif window and mtype in ("mistral", "mixtral") and window < kw["max_context"]:
        kw["sliding_window"], kw["local_layers"] = window, layers
    kw["d_ff"] = d_ff
    if "moe" not in kw and not d_ff:
        raise CatalogError(f"{where}: missing 'intermediate_size', which a {mtype} config must have")
    if heads % kv_heads:
        raise CatalogError(f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})")
    return Model(**kw)
