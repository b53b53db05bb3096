"""Chapter 3.4 of the lecture: training pipelining and bubbles, step time and memory per GPU
(spec §3.4; Narayanan et al. 2021; Korthikanti et al. 2022; Rajbhandari et al. 2020)."""

from __future__ import annotations

from pathlib import Path

from .. import Chapter, Figure, Worked


def _gpt_1t():
    from ...model import Model

    # Narayanan et al. 2021 Table 1, 1T row: 128 layers, h 25,600, 160 heads, vocab 51,200
    return Model(id="megatron-gpt-1t", name="Megatron GPT 1T", family="gpt", layers=128, d_model=25600,
                 vocab=51200, heads=160, kv_heads=160, head_dim=160, d_ff=102400, gated_mlp=False,
                 tied_embeddings=True)


def chapter(fig_dir: Path) -> Chapter:
    from ... import memory as TM
    from ... import training as T
    from ...catalog import get_catalog
    from ...layout import Layout
    from ...plots import training as P

    cat = get_catalog()
    gpt = _gpt_1t()
    dgx_a100 = cat.system("dgx-a100")
    lay = Layout(tp=8, pp=64, dp=6, micro_batch=1, micro_batches=512, schedule="interleaved", recompute="full",
                         virtual_stages=2, zero=0)
    r = T.train_step(gpt, dgx_a100, lay, 2048, causal=False, dtype="fp16", dropout=True,
                     flash_attention=False)
    llama_lay = Layout(tp=8, pp=16, dp=128, micro_batch=1, micro_batches=16, schedule="interleaved",
                               virtual_stages=2, zero=2)
    ll = T.train_step(cat.model("llama-3.1-405b"), cat.system("dgx-h100"), llama_lay, 8192)
    s, h, a = 2048, 25600, 160
    la = TM.layer_activations(gpt, s, 1)
    items = [
        Worked("bubble-gpipe", "GPipe bubble, 4 stages, 4 micro-batches", "(P−1)/(m+P−1)", {"P": 4, "m": 4},
               float(T.bubble_fraction(4, 4)), "", 3 / 7, 1e-12, "Huang et al. 2019 §2.3 [X]; spec §3.4"),
        Worked("bubble-interleaved", "Megatron 1T bubble, interleaved v=2", "(P−1)/(v·m+P−1)",
               {"P": 64, "m": 512, "v": 2}, r.bubble_fraction, "", 63 / 1087, 1e-12, "Narayanan et al. 2021 §2.2.2"),
        Worked("korthikanti-eq1", "activations of one layer (GPT-1T shape, b=1)", "34·s·b·h + 5·a·s²·b",
               {"s": s, "h": h, "a": a}, la.replicated + la.split + la.quadratic, "bytes",
               s * h * (34 + 5 * a * s / h), 1e-12, "Korthikanti et al. 2022 eq. (1)"),
        Worked("zero-example", "ZeRO-3 model states, Ψ=7.5B, N_d=64", "(2+2+12)·Ψ/N_d", {"Ψ": 7.5e9, "N_d": 64},
               float(sum(TM.model_state_bytes(7.5e9, 64, 3))), "bytes", 1.9e9, 0.02, "Rajbhandari et al. 2020 Fig. 1"),
        Worked("megatron-1t", "Megatron 1T on 3,072 A100: TFLOP/s per GPU (hardware, with recompute)",
               "G·s·FLOPs_hw / (t_step·n)", {"layout": "TP8 PP64 DP6, b=1, m=512, v=2", "η_compute": "family default"},
               float(r.hardware_tflops_per_gpu), "TFLOP/s", 163.0, 0.30,
               "Narayanan et al. 2021 Table 1 (52% of peak); miss = unmodelled non-matmul kernels"),
        Worked("llama3-405b", "Llama 3 405B on 16,384 H100: model TFLOP/s per GPU", "G·s·6N / (t_step·n)",
               {"layout": "TP8 PP16 DP128, s=8192, m=16, v=2"}, float(ll.model_tflops_per_gpu), "TFLOP/s", 400.0,
               0.15, "Llama Team 2024 Table 4 (41% MFU)"),
        Worked("recompute", "full recomputation: FLOPs per token relative to 6N", "8ND / 6ND", {},
               float(r.hardware_flops_per_token / r.model_flops_per_token), "×", 4 / 3, 1e-9,
               "Korthikanti et al. 2022 §5; lecture §6.3 [I]"),
    ]
    figs = [
        Figure(f"fig/{P.pipeline_timeline(4, 4, fig_dir / 'train_pipeline_bubble.png').name}",
               "GPipe schedule on 4 stages with 4 micro-batches: all forwards, a hard stop, then backwards; "
               "the idle triangles are the bubble (lecture [S 00:58:43])."),
        Figure(f"fig/{P.memory_by_recompute(cat.model('llama-3.1-405b'), llama_lay, 8192, fig_dir / 'train_memory_recompute.png', flash_attention=True, dropout=False).name}",
               "Memory per GPU for Llama 3.1 405B (TP8 PP16 DP128, ZeRO-2, s = 8192) by recomputation mode; "
               "selective recomputation saves nothing once FlashAttention has removed the s² terms."),
    ]
    notes = [f"Megatron 1T step breakdown: compute {float(r.compute_s):.1f} s, TP {float(r.tp_comm_s):.1f} s, "
             f"bubble {float(r.bubble_s):.1f} s, PP {float(r.pp_comm_s):.2f} s, DP {float(r.dp_comm_s):.2f} s.",
             "Zero-bubble schedules (Qi et al. 2023) split the backward into input- and weight-gradient passes "
             "and fill the bubble with the latter — the lecture's 'use the bubble for the weight-gradient step'."]
    return Chapter(3.4, "3.4 Training: pipeline bubbles, step time and memory",
                   "Training time and memory per GPU for a TP/PP/DP layout, checked against published runs.",
                   items, figs, notes)
