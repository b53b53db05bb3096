"""Plain-Python baselines for the benchmarks: the engine's pure-roofline formulas written out for ONE
configuration with floats and the `math` module (no NumPy, no input checks). This is what a
per-configuration calculator costs at its best; `benchmarks/sweep.py` and `plan.py` time it against the
vectorised engine and check that both give the same numbers."""

from __future__ import annotations

import math

from roofline import model as M


class PlainPass:
    """engine.core (pure roofline: Efficiency(), per-pass max) for one layout, scalar floats only."""

    def __init__(self, m, system, b_w: float, b_kv: float, peak: float, b_act: float = 2.0):
        self.m, self.s = m, system
        self.b_w, self.b_kv, self.peak, self.b_act = b_w, b_kv, peak, b_act
        self.mm = M.matmul_flops_per_token(m)
        self.moe_l = m.moe_layers
        self.E, self.k, self.Ne = (m.moe.experts, m.moe.active, M.expert_params(m)) if m.moe else (1, 0, 0.0)
        self.dense_mm = M.matmul_params_per_token(m) - self.moe_l * self.k * self.Ne
        self.dense = M.dense_params(m)
        self.emb = 0.0 if m.tied_embeddings else m.vocab * m.d_model
        self.kv_tok = M.kv_bytes_per_token(m, "bf16") * b_kv / 2.0
        qk, v = (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim, m.mla.v_head_dim) if m.mla else (m.head_dim, m.head_dim)
        self.attn_per_layer_token = 2.0 * m.heads * (qk + v)
        self.local = m.local_layers if m.sliding_window else 0
        self.bw = system.accelerator.hbm_bytes_per_s
        self.kv_per_layer = M.kv_bytes_per_token_per_layer(m, "bf16") * b_kv / 2.0

    def _attended(self, c):
        m = self.m
        return (m.layers - self.local) * c + self.local * min(c, m.sliding_window or 0)

    def _kv_seq(self, c):
        m = self.m
        if m.kv_layers:
            return m.kv_layers * self.kv_per_layer * c
        return self.kv_per_layer * self._attended(c)

    def _distinct(self, t):
        return self.E * (1.0 - (1.0 - self.k / self.E) ** t) if self.m.moe else 0.0

    @staticmethod
    def _ar(b, n, bw, lat):
        if n <= 1:
            return 0.0
        ring = 2.0 * (n - 1) / n * b / bw + 2.0 * (n - 1) * lat
        one = (n - 1) * b / bw + 2.0 * lat
        return min(ring, one)

    def step(self, tp, ep, pp, dp, B, ctx, L=1.0, prefill=False):
        """Seconds of one decode loop (or prefill pass) of one replica: engine.core's formulas."""
        m, s = self.m, self.s
        moe_tp = tp if dp % ep == 0 else 1
        f = math.ceil(m.layers / pp) / m.layers
        b = B / pp
        T = b * L
        Tg = T / dp
        Te = T * moe_tp * ep / (tp * dp)
        lam = 1.0
        attn = (self.attn_per_layer_token * self._attended(ctx + (L + 1.0) / 2.0) if prefill
                else self.attn_per_layer_token * self._attended(ctx + 1.0))
        gemm = f * (Tg * 2 * self.dense_mm / tp + Te * 2 * self.moe_l * self.k * self.Ne / (moe_tp * ep) * lam)
        comp = (gemm + f * Tg * attn / tp) / self.peak
        dense_read = self.dense - self.emb + min(Tg, m.vocab) * m.d_model
        expert_read = self.moe_l * self._distinct(Te) * self.Ne / (moe_tp * ep)
        shard = 1.0 if m.mla else min(tp, m.kv_heads)
        mem = (f * (dense_read / tp + expert_read) * self.b_w + f * (b / dp) * self._kv_seq(ctx) / shard
               + f * Tg * self.kv_tok / shard) / self.bw
        act = m.d_model * self.b_act
        up_bw, up_lat = s.scale_up_bytes_per_s, s.scale_up_latency_s
        out_bw, out_lat = s.scale_out_bytes_per_s, s.scale_out_latency_s
        tp_s = f * (m.layers + m.dense_mlp_layers) * self._ar(Tg * act, tp, up_bw, up_lat)
        tp_s += f * self.moe_l * self._ar(Tg * act, moe_tp, up_bw, up_lat)
        ep_s = 0.0
        if ep > 1 and self.moe_l:
            n_d = math.ceil(moe_tp * ep / s.chips)
            g = ep / n_d
            x = Te / (moe_tp * ep) * self.k * act * lam
            t_up = (1.0 / n_d - 1.0 / (n_d * g)) * x / up_bw + (up_lat if g > 1 else 0.0)
            t_out = (1.0 - 1.0 / n_d) * x / out_bw + (out_lat if n_d > 1 else 0.0)
            ep_s = 2 * f * self.moe_l * max(t_up, t_out)
        pp_s = 0.0
        if pp > 1:
            sg = tp * dp
            boundaries = pp if not prefill else pp - 1
            per_domain = max(math.floor(s.chips / sg), 1.0)
            domains = (1.0 / max(math.floor(s.chips / (sg * pp)), 1.0) if sg * pp <= s.chips
                       else (math.ceil(pp / per_domain) if sg <= s.chips else pp * math.ceil(sg / s.chips)))
            crossings = math.ceil(pp / per_domain) if sg <= s.chips else pp
            n_out = min(crossings if domains > 1 else 0.0, boundaries)
            send = T * act / sg
            pp_s = n_out * (send / out_bw + out_lat) + (boundaries - n_out) * (send / up_bw + up_lat)
        return pp * max(comp, mem, tp_s + ep_s) + pp_s
