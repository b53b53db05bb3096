"""The layout flags shared by `step`, `sweep` and `simulate` (requests/layout_opts.LayoutOptions): one spelling,
one help text, passed to the request as `layout_args(...)`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

TpOpt = Annotated[Optional[int], typer.Option("--tp", help="Tensor-parallel degree (with --ep/--pp/--dp: one replica's layout, with communication).")]
EpOpt = Annotated[Optional[int], typer.Option("--ep", help="Expert-parallel degree (MoE models): divides DP, equals TP x DP, or with --moe-tp MoE TP x EP divides TP x DP.")]
PpOpt = Annotated[Optional[int], typer.Option("--pp", help="Pipeline stages (batch = sequences in flight over all stages).")]
DpOpt = Annotated[Optional[int], typer.Option("--dp", help="Attention data-parallel groups inside one replica.")]
DomainsOpt = Annotated[Optional[int], typer.Option("--domains", help="Scale-up domains available to the replica.")]
CpOpt = Annotated[Optional[int], typer.Option("--cp", help="Context-parallel degree: each prompt's tokens split over CP GPUs, K/V all-gathered per layer (prefill).")]
MoeTpOpt = Annotated[Optional[int], typer.Option("--moe-tp", help="GPUs each routed expert is sliced over (MoE TP x EP must divide TP x DP); default: TP when EP divides DP, else 1.")]
RedundantOpt = Annotated[Optional[int], typer.Option("--redundant-experts", help="Extra expert slots holding copies of hot experts (EPLB), so EP need only divide experts + copies.")]
AttentionOpt = Annotated[Optional[str], typer.Option("--attention", help="How TP splits attention: heads (Megatron) or batch (Pope et al. 2022: multi-query attention sharded over the sequences; no head rule).")]
WeightStationaryOpt = Annotated[Optional[str], typer.Option("--weight-stationary", help="How TP holds the dense weights: 1d (Megatron: one all-reduce per block), 2d (Pope et al. 2022: E split over X, F over TP/X; communication falls as 1/sqrt(TP)) or gathered (Pope et al. 2022: each layer's weights all-gathered, sequences split over TP; needs --attention batch; for large prefills) or gathered:N (partially gathered: all-gathers over groups of N GPUs, N dividing TP).")]
MoeImbalanceOpt = Annotated[str, typer.Option("--moe-imbalance", help="Busiest expert GPU's tokens over the mean (>= 1); 'sampling': a balanced router's sampling noise for each pass's tokens; 'powerlaw:A' or 'loads:FILE' (CSV of per-expert token counts): hot experts, placed statically or by EPLB with --redundant-experts, times the sampling noise.")]


def layout_args(tp, ep, pp, dp, domains, cp, moe_tp, redundant_experts, attention, weight_stationary) -> dict:
    """The layout flags as request fields."""
    return dict(tp=tp, ep=ep, pp=pp, dp=dp, domains=domains, cp=cp, moe_tp=moe_tp, redundant_experts=redundant_experts,
                attention=attention, weight_stationary=weight_stationary)
