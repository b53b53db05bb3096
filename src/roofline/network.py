"""Network tiers and alpha–beta costs of collectives (lecture §2.3, §3.2, §3.6).

Every collective is modelled with the alpha–beta (latency–bandwidth) cost of Hockney (1994) as used by
Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH" (IJHPCA
2005), §3–4:  t = (number of sequential steps)·α + (bytes each GPU sends)/(β·η), with

    α  = latency_s             one hop (or one step of the algorithm) on the tier
    β  = bw_bytes_per_s        per-GPU, per-direction link bandwidth of the tier
    η  = efficiency            achieved fraction of β (explicit input; 1.0 = the wire rate)

Bytes are always the per-GPU buffer (message) size. The bandwidth terms are the closed forms that the
NCCL performance notes call "bus bandwidth" factors (NVIDIA nccl-tests, doc/PERFORMANCE.md):
all-reduce 2(n−1)/n, all-gather and reduce-scatter (n−1)/n, all-to-all (n−1)/n.

All functions broadcast over NumPy arrays (bytes, n, bandwidths, latencies). n = 1 costs zero.

Ignores: congestion and oversubscription beyond the per-GPU figure, in-network reduction
(NVLink SHARP), pipelining of chunks inside a collective, protocol overheads (folded into η),
topology-aware algorithm switching (NCCL picks tree vs ring by size; we use the ring bandwidth term,
which both reach for large messages).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError, require_fraction, require_positive


@dataclass(frozen=True)
class Tier:
    """One level of the network: per-GPU per-direction bandwidth, one-hop latency, efficiency.

    `scale-up` is the fabric inside a domain (NVLink/ICI); `scale-out` the NIC + data-centre switch
    path between domains, "about 8x slower" (lecture §2.3, [S 00:38:47]).
    """

    name: str
    bytes_per_s: float
    latency_s: float
    efficiency: float = 1.0

    def __post_init__(self):
        require_positive(f"{self.name} bandwidth", self.bytes_per_s)
        require_positive(f"{self.name} latency", self.latency_s, allow_zero=True)
        require_fraction(f"{self.name} efficiency", self.efficiency)

    @property
    def effective_bytes_per_s(self) -> float:
        return self.bytes_per_s * self.efficiency


def tiers(system, *, scale_up_efficiency: float = 1.0, scale_out_efficiency: float = 1.0) -> tuple[Tier, Tier]:
    """(scale-up, scale-out) tiers of a catalog System (per-GPU, per-direction figures).

    Efficiencies are explicit: NCCL all-reduce on NVLink 4 reaches ~360 of 450 GB/s per direction
    (~0.8) in nccl-tests bus bandwidth; 1.0 is the wire rate.
    """
    up = Tier("scale-up", system.scale_up_bytes_per_s, system.scale_up_latency_s, scale_up_efficiency)
    out = Tier("scale-out", system.scale_out_bytes_per_s, system.scale_out_latency_s, scale_out_efficiency)
    return up, out


def _check(bytes_, n, bw, latency, efficiency):
    require_positive("bytes per GPU", bytes_, allow_zero=True)
    require_positive("bandwidth", bw, fix="bandwidth is per GPU per direction in bytes/s")
    require_positive("latency", latency, allow_zero=True)
    require_fraction("network efficiency", efficiency)
    n_arr = np.asarray(n, dtype=float)
    if np.any(~np.isfinite(n_arr) | (n_arr < 1) | (n_arr != np.round(n_arr))):
        raise InputError(f"group size n must be a whole number >= 1, got {np.ravel(n_arr)[0]:g}")
    return np.asarray(bytes_, dtype=float), n_arr


def ring_all_reduce_s(bytes_per_gpu, n, bw_bytes_per_s, latency_s, efficiency=1.0):
    """Ring all-reduce (reduce-scatter then all-gather) of a `bytes_per_gpu` buffer over n GPUs.

        t = 2(n−1)/n · bytes/(β·η) + 2(n−1)·α

    Source: Thakur et al. 2005 §4.4 (ring = reduce-scatter + all-gather, 2(n−1) steps of bytes/n);
    NCCL "bus bandwidth" factor 2(n−1)/n (nccl-tests PERFORMANCE.md). Ignores tree/latency-optimal
    variants for small messages (they change α terms, not the bandwidth term).
    """
    b, n = _check(bytes_per_gpu, n, bw_bytes_per_s, latency_s, efficiency)
    return 2.0 * (n - 1.0) / n * b / (np.asarray(bw_bytes_per_s) * efficiency) + 2.0 * (n - 1.0) * np.asarray(latency_s)


def one_shot_all_reduce_s(bytes_per_gpu, n, bw, latency, efficiency=1.0):
    """One-shot all-reduce: every GPU reads the other n−1 buffers and reduces locally.

        t = (n−1) · bytes/(β·η) + 2·α          (one step plus a barrier)

    Latency-optimal for the small messages of decode (TRT-LLM / vLLM "custom all-reduce" over NVLink
    peer memory; Thakur et al. 2005 §4.4 discuss the same latency/bandwidth trade-off for short
    vectors). `best_all_reduce_s` takes the faster of this and the ring, as engines and the NCCL tuner do.
    """
    b, n = _check(bytes_per_gpu, n, bw, latency, efficiency)
    return (n - 1.0) * b / (np.asarray(bw) * efficiency) + np.where(n > 1, 2.0, 0.0) * np.asarray(latency)


def best_all_reduce_s(bytes_per_gpu, n, bw, latency, efficiency=1.0, one_shot_max=0):
    """min(ring, one-shot) all-reduce: what an engine that picks its algorithm by size achieves. `one_shot_max` > 0:
    groups of more GPUs than that cannot read each other's buffers (peer memory over PCIe without NVLink: vLLM's
    custom all-reduce refuses more than 2 GPUs that are not all NVLink-connected), so they take the ring."""
    ring = ring_all_reduce_s(bytes_per_gpu, n, bw, latency, efficiency)
    best = np.minimum(ring, one_shot_all_reduce_s(bytes_per_gpu, n, bw, latency, efficiency))
    if not one_shot_max:
        return best
    return np.where(np.asarray(n) > one_shot_max, ring, best)


def all_gather_s(bytes_per_gpu_out, n, bw, latency, efficiency=1.0):
    """Ring all-gather; `bytes_per_gpu_out` is the gathered result on each GPU (n shards).

        t = (n−1)/n · bytes/(β·η) + (n−1)·α          (Thakur et al. 2005 §4.1; NCCL factor (n−1)/n)
    """
    b, n = _check(bytes_per_gpu_out, n, bw, latency, efficiency)
    return (n - 1.0) / n * b / (np.asarray(bw) * efficiency) + (n - 1.0) * np.asarray(latency)


def reduce_scatter_s(bytes_per_gpu_in, n, bw, latency, efficiency=1.0):
    """Ring reduce-scatter; `bytes_per_gpu_in` is the full input buffer on each GPU.

        t = (n−1)/n · bytes/(β·η) + (n−1)·α          (Thakur et al. 2005 §4.5; NCCL factor (n−1)/n)
    """
    b, n = _check(bytes_per_gpu_in, n, bw, latency, efficiency)
    return (n - 1.0) / n * b / (np.asarray(bw) * efficiency) + (n - 1.0) * np.asarray(latency)


def all_to_all_s(bytes_per_gpu, n, bw, latency, efficiency=1.0):
    """All-to-all: each GPU holds `bytes_per_gpu` and sends 1/n of it to each of the other n−1 GPUs.

        t = (n−1)/n · bytes/(β·η) + α

    Choice (documented): single-shot — every GPU posts all n−1 sends at once over a fully connected
    switch (NVSwitch: any GPU reaches any other in 2 hops, lecture §2.2 [S 00:37:55]), so latency is
    paid once, not n−1 times as in Thakur et al.'s pairwise-exchange algorithm (§4.2). The bandwidth
    term is the pairwise one. Ignores switch congestion and uneven routing (see moe load imbalance).
    """
    b, n = _check(bytes_per_gpu, n, bw, latency, efficiency)
    return (n - 1.0) / n * b / (np.asarray(bw) * efficiency) + np.where(n > 1, 1.0, 0.0) * np.asarray(latency)


def weight_stationary_2d_s(in_bytes, mid_in_bytes, mid_bytes, n, bw, latency, efficiency=1.0):
    """One block (x·W_in → nonlinearity → ·W_out) under Pope et al. 2022's 2D weight-stationary layout (§3.2.2).

    The n GPUs form an X × n/X grid: W_in [E, F] and W_out [F, E] are split with E over X and F over n/X,
    and the activations enter and leave fully sharded. Per block each GPU all-gathers its E/X slice over
    the n/X group, reduce-scatters the W_in partial sums over X, all-gathers the F/(n/X) slice over X and
    reduce-scatters the W_out partial sums over the n/X group. `in_bytes` = T·E·b (the block's input),
    `mid_in_bytes` = T·F_in·b (what W_in produces: 2F for a gated MLP, q, k and v for attention),
    `mid_bytes` = T·F·b (what W_out consumes), all for the whole group:

        t(X) = AG_{n/X}(in/X) + RS_X(mid_in·X/n) + AG_X(mid·X/n) + RS_{n/X}(in/X)     (ring terms, Thakur 2005)

    minimised over the powers of two X dividing n. The bandwidth part is ≈ 2·T·E·b/X + 2·T·F·b·X/n, least
    at X = √(n·E/F): 4·T·b·√(E·F/n), which for F = 4E is Pope et al.'s 8·B·L·E/√n against the 1D layout's
    2·B·L·E — the communication falls as 1/√n. X = 1 is the 1D layout (reduce-scatter + all-gather = a
    ring all-reduce). Ignores torus link counts (Pope et al. count TPU v4's 3D-torus links; a GPU's
    scale-up bandwidth is one figure here) and the overlap of these collectives with the einsums
    (Pope et al. §3.5 loop-fuse them; `--overlap` in the realistic model covers it).
    """
    b_in, n = _check(in_bytes, n, bw, latency, efficiency)
    best = np.full(np.broadcast(b_in, n).shape, np.inf)
    x = 1.0
    while x <= float(np.max(n)):
        ok = np.mod(n, x) == 0
        xs = np.where(ok, x, 1.0)  # keep the collectives defined where x does not divide n
        y = n / xs
        t = (all_gather_s(b_in / xs, y, bw, latency, efficiency)
             + reduce_scatter_s(np.asarray(mid_in_bytes, dtype=float) / y, xs, bw, latency, efficiency)
             + all_gather_s(np.asarray(mid_bytes, dtype=float) / y, xs, bw, latency, efficiency)
             + reduce_scatter_s(b_in / xs, y, bw, latency, efficiency))
        best = np.where(ok, np.minimum(best, t), best)
        x *= 2.0
    return best


def weight_gathered_s(layer_weight_bytes, act_bytes, g, n, bw, latency, blocks=2, efficiency=1.0):
    """One layer under Pope et al. 2022's weight-gathered layouts (§3.2.3) on n GPUs, weights all-gathered over
    groups of g: each GPU stores 1/n of the layer (`layer_weight_bytes` = the layer's matmul weights), all-gathers
    the g/n slice its group needs, and runs B/g of the sequences on it; the n/g GPUs sharing a slice keep the 1D
    weight-stationary collectives for their tokens (`act_bytes` = T·E·b for all T tokens of the pass, so T/g of
    them per group), one all-reduce per block:

        t = AG_g(W·g/n) + blocks · AR_{n/g}(act/g)                  (ring all-gather, min(ring, one-shot) all-reduce)
          ≈ W·g/(n·β) + 2·blocks·(T·E·b)/(g·β)                      bandwidth part

    g = n is the XYZ-weight-gathered layout (no activation traffic: bytes independent of the tokens), g = 1 the 1D
    weight-stationary one; on a TPU v4/v5p torus of X·Y·Z chips the X- and XY-weight-gathered layouts are g = X
    and g = X·Y. With W = 2·E·F (an MLP) and blocks = 1 the bandwidth part 2EFg/n + 2TE/g is least at
    g = √(T·n/F): 4E·√(T·F/n) — Pope et al.'s √(BLF) scaling (the activations' cost grows as √tokens, not
    linearly). Ignores: the buffer holding the gathered slice (memory), the torus link counts (one scale-up
    bandwidth per GPU), the overlap of the next layer's gather with this layer's compute (Pope et al. §3.5;
    `--overlap` in the realistic model)."""
    w, g = _check(layer_weight_bytes, g, bw, latency, efficiency)
    _, n = _check(act_bytes, n, bw, latency, efficiency)
    m = n / g
    return (all_gather_s(w * g / n, g, bw, latency, efficiency)
            + blocks * best_all_reduce_s(np.asarray(act_bytes, dtype=float) / g, m, bw, latency, efficiency))


def p2p_s(bytes, bw, latency, efficiency=1.0):
    """Point-to-point send: t = bytes/(β·η) + α (pipeline stage boundary, lecture §3.2, §3.6)."""
    b, _ = _check(bytes, 1, bw, latency, efficiency)
    return b / (np.asarray(bw) * efficiency) + np.asarray(latency)


def hierarchical_all_reduce_s(bytes_per_gpu, n_inner, n_outer, bw_inner, bw_outer, lat_inner, lat_outer,
                              efficiency=1.0):
    """Two-level all-reduce: reduce-scatter inside each domain, all-reduce of the 1/n_inner shards
    across domains (each GPU with its peers at the same rank), then all-gather inside.

        t = 2·(n_i−1)/n_i · bytes/(β_i·η) + 2(n_i−1)·α_i                  (inner RS + AG)
          + 2·(n_o−1)/n_o · (bytes/n_i)/(β_o·η) + 2(n_o−1)·α_o            (outer ring on the shard)

    Source: the hierarchical scheme of NCCL / Horovod (Sergeev & Del Balso 2018) built from the ring
    pieces of Thakur et al. 2005. Ignores overlap between the levels.
    """
    b, n_i = _check(bytes_per_gpu, n_inner, bw_inner, lat_inner, efficiency)
    _, n_o = _check(bytes_per_gpu, n_outer, bw_outer, lat_outer, efficiency)
    inner = reduce_scatter_s(b, n_i, bw_inner, lat_inner, efficiency) + all_gather_s(b, n_i, bw_inner, lat_inner, efficiency)
    outer = ring_all_reduce_s(b / n_i, n_o, bw_outer, lat_outer, efficiency)
    return inner + outer


@dataclass(frozen=True)
class TwoTierTime:
    """Times of an all-to-all that spans domains: the part on each tier, and the bound max(up, out)."""

    scale_up_s: np.ndarray
    scale_out_s: np.ndarray
    time_s: np.ndarray
    fraction_off_domain: np.ndarray


def all_to_all_two_tier_s(bytes_per_gpu, n_domains, gpus_per_domain, bw_up, bw_out, lat_up, lat_out,
                          efficiency=1.0) -> TwoTierTime:
    """All-to-all over n_domains × gpus_per_domain GPUs with uniform routing (lecture §2.3).

    A fraction f = 1 − 1/n_domains of each GPU's traffic leaves its domain [I, §2.3]; the rest stays:

        t_up  = (1/n_d − 1/N) · bytes/(β_up·η) + α_up        (peers in the same domain, N = n_d·g)
        t_out = (1 − 1/n_d) · bytes/(β_out·η) + α_out        (peers in other domains)
        t     = max(t_up, t_out)                              (the two run concurrently)

    With one domain this is `all_to_all_s`. The lecture's rough two-rack estimate
    max((X/2)/BW_up, (X/2)/(BW_up/8)) = 4·X/BW_up uses f = 1/2 for both terms (T21); here the
    on-domain share excludes the GPU's own 1/N. Ignores scale-out congestion at the switch.
    """
    b, n_d = _check(bytes_per_gpu, n_domains, bw_up, lat_up, efficiency)
    _, g = _check(bytes_per_gpu, gpus_per_domain, bw_out, lat_out, efficiency)
    total = n_d * g
    f_out = 1.0 - 1.0 / n_d
    f_up = 1.0 / n_d - 1.0 / total
    up = f_up * b / (np.asarray(bw_up) * efficiency) + np.where(g > 1, 1.0, 0.0) * np.asarray(lat_up)
    out = f_out * b / (np.asarray(bw_out) * efficiency) + np.where(n_d > 1, 1.0, 0.0) * np.asarray(lat_out)
    return TwoTierTime(scale_up_s=up, scale_out_s=out, time_s=np.maximum(up, out), fraction_off_domain=f_out)


def fraction_off_domain(n_domains):
    """Share of uniformly routed all-to-all traffic that leaves its domain: 1 − 1/n (lecture §2.3 [I])."""
    require_positive("domains", n_domains)
    return 1.0 - 1.0 / np.asarray(n_domains, dtype=float)
