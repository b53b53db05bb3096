"""The prefix cache's bookkeeping (docs/simulator.md "Prefix caching" and "A tree of prefixes"): which cached blocks
each request can reuse, and the pin counts and LRU order the simulator's loop (core.Simulation.run) keeps per prefix.

A prefix is a node of a tree. A root covers the blocks [0, L) of the prompts that start with it; a prefix that extends
a parent at T tokens (`Workload.parent_prefix_id`, `parent_prefix_tokens`) covers blocks from s = ⌊T / b⌋ on: its
first block holds the parent's last partial block and its own first tokens, so it is its own (vLLM hashes each full
block with its parent block's hash; SGLang's radix tree splits a node where two prompts part). Each node keeps its
own count of cached leading blocks, `cached[node]`, in its own segment; a request reuses the cached blocks along its
path from the root, and stops at the first node of the path not cached to where the path leaves it.

Pins: a running sequence that uses its path to global block depth D pins, in every node x of its path, the blocks it
uses there, min(D − s_x, e_x − s_x) (e_x = where the path leaves x: its child's start, or the request's own reusable
end in its last node), so a node's pinned depth is the deepest of its users' and its descendants' users'. A node is
in the LRU order while it holds unpinned cached blocks; a release moves the path's nodes to the end, deepest first,
so a parent is never older than an unpinned child: the evictor empties a child before the parent blocks the child
hangs on (vLLM frees a request's blocks tail first into its free queue; SGLang evicts leaves).

With no parent columns every prefix is a root and each request's path is its one prefix: the bookkeeping is then
exactly the single-chain cache it replaced (the same arithmetic in the same order, bit-identical traces).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .workload import Workload


@dataclass(frozen=True)
class PrefixTree:
    """Per request: `leaf` (dense index of the last node of its path, -1 = nothing to reuse), `own` (its reusable
    blocks in that node's segment), and where its answer is part of its prefix `ends` (the global blocks of its own
    prefix's path it leaves cached when it finishes; 0 elsewhere; None when no request has one) with `mine` (its own
    prefix's node, which its path through the prompt may stop short of).
    Per node: `start` (its first global block) and `ancestors` (the nodes before it on every path through it, root
    first, as (node, start, end) with end where the path leaves that node; nodes whose segment on the path is empty
    are left out), `level` (its number of ancestors)."""

    leaf: np.ndarray
    own: np.ndarray
    start: list
    ancestors: list
    level: list
    ends: np.ndarray | None = None
    mine: np.ndarray | None = None

    @property
    def nodes(self) -> int:
        return len(self.start)


def prefix_tree(workload: Workload, block_tokens: int) -> PrefixTree:
    """The tree of `workload`'s prefixes in blocks of `block_tokens`.

    A request's reusable prefix is ⌊min(shared, prompt − 1) / b⌋ whole blocks from the start of the prompt: vLLM hashes
    full blocks only (a partial last block is never shared), and when a whole prompt hits the cache the last token is
    recomputed anyway to get its logits (vLLM V1 KVCacheManager caps a hit at prompt − 1 tokens). Its path ends in the
    deepest node of its prefix's chain that starts before that end (a prompt too short to reach its own prefix's
    first block reuses only its parents'); a request with no whole block to reuse gets leaf -1.

    A request whose shared tokens run past its prompt (its answer is part of the prefix: a later prompt repeats it)
    leaves ⌊min(shared, prompt + output − 1) / b⌋ blocks of its own prefix's path cached when it finishes (the last
    generated token has no KV; vLLM V1 caches every full block, decoded ones too): its `ends`."""
    assert workload.prefix_id is not None and workload.shared_prefix_tokens is not None
    pid = np.asarray(workload.prefix_id, dtype=np.int64)
    shared, prompt = workload.shared_prefix_tokens, workload.prompt_tokens
    blocks = np.where(pid >= 0, np.floor(np.minimum(shared, prompt - 1) / block_tokens), 0).astype(np.int64)
    # blocks its path holds when it finishes, where its answer is part of the prefix (0 elsewhere)
    ends = np.where((pid >= 0) & (shared > prompt),
                    np.floor(np.minimum(shared, prompt + workload.output_tokens - 1) / block_tokens), 0).astype(np.int64)
    if workload.parent_prefix_id is None:  # every prefix a root: one node per prefix with a block to reuse or keep
        has = (blocks > 0) | (ends > 0)
        uniq, dense = np.unique(pid[has], return_inverse=True)
        leaf = np.full(workload.n, -1, dtype=np.int64)
        leaf[has] = dense
        m = int(uniq.size)
        own = np.where(has, blocks, 0)
        return PrefixTree(leaf, own, [0] * m, [()] * m, [0] * m, *((ends, leaf) if ends.any() else (None, None)))
    assert workload.parent_prefix_tokens is not None  # given together (Workload checks)
    par = np.asarray(workload.parent_prefix_id, dtype=np.int64)
    ptok = np.asarray(workload.parent_prefix_tokens, dtype=float)
    ids = np.unique(np.concatenate([pid[pid >= 0], par[par >= 0]]))  # dense node k = the k-th id
    m = int(ids.size)
    parent_a, start_a = np.full(m + 1, -1, dtype=np.int64), np.zeros(m + 1, dtype=np.int64)  # + a sink at m
    sel = (pid >= 0) & (par >= 0)  # one (parent, T) per prefix (Workload checks), so repeated writes agree
    kids = np.searchsorted(ids, pid[sel])
    parent_a[kids], start_a[kids] = np.searchsorted(ids, par[sel]), ptok[sel] // block_tokens
    level_a = np.zeros(m + 1, dtype=np.int64)
    for _ in range(m):  # a node's level is its parent's plus one: settles in as many passes as the deepest chain
        new = np.where(parent_a[:m] >= 0, level_a[parent_a[:m]] + 1, 0)
        if np.array_equal(new, level_a[:m]):
            break
        level_a[:m] = new
    parent, start, level = parent_a[:m].tolist(), start_a[:m].tolist(), level_a[:m].tolist()
    ancestors: list = [()] * m
    for k in np.argsort(level_a[:m], kind="stable").tolist():  # parents before children
        p = parent[k]
        if p >= 0:
            seg = ((p, start[p], start[k]),) if start[k] > start[p] else ()
            ancestors[k] = ancestors[p] + seg
    node = np.full(workload.n, -1, dtype=np.int64)
    node[pid >= 0] = np.searchsorted(ids, pid[pid >= 0])
    mine = node.copy()  # each request's own prefix's node
    for _ in range(m + 1):  # a prompt that ends before its node's first block reuses its parents' blocks only
        short = (node >= 0) & (blocks <= start_a[node])
        if not short.any():
            break
        node[short] = parent_a[node[short]]
    own = np.where(node >= 0, blocks - start_a[node], 0)
    return PrefixTree(node, own, start, ancestors, level, *((ends, mine) if ends.any() else (None, None)))


def evict(lru: OrderedDict, cached: list, pinned: list, blocks: int) -> int:
    """Free up to `blocks` unpinned cached blocks, least recently released node first, from the tail of its
    segment (vLLM's evictor: least recently used first, the deepest block of a chain before its parents);
    returns the number freed. `lru` holds the nodes with unpinned blocks (cached > pinned), oldest first."""
    left = blocks
    while left > 0 and lru:
        q = next(iter(lru))
        free = cached[q] - pinned[q]
        take = free if free <= left else left
        cached[q] -= take
        left -= take
        if cached[q] == pinned[q]:
            del lru[q]
    return blocks - left


def pin(users: list, pinned: list, q: int, depth: int) -> int:
    """A running sequence uses the first `depth` cached blocks of node q: the blocks newly pinned (the node's
    pinned depth is its deepest running user's)."""
    d = users[q]
    d[depth] = d.get(depth, 0) + 1
    if depth > pinned[q]:
        k, pinned[q] = depth - pinned[q], depth
        return k
    return 0


def release(users: list, pinned: list, q: int, depth: int) -> int:
    """A running sequence at `depth` blocks of node q stops using it: the blocks unpinned (the pinned depth
    falls to the deepest remaining user's, 0 without users)."""
    d = users[q]
    k = d[depth] - 1
    if k:
        d[depth] = k
        return 0
    del d[depth]
    if depth < pinned[q]:
        return 0
    old = pinned[q]
    pinned[q] = max(d) if d else 0
    return old - pinned[q]


def ancestor_hit(anc: tuple, cached: list, pinned: list) -> tuple[int, int, bool]:
    """(global blocks reused along the ancestors `anc`, the unpinned ones among them, whether the path reaches its
    last node): a node not cached to where the path leaves it ends the hit there."""
    h = extra = 0
    for x, s, e in anc:
        c = cached[x]
        if c < e - s:
            return s + c, extra + (c - pinned[x] if c > pinned[x] else 0), False
        extra += e - s - pinned[x] if e - s > pinned[x] else 0
        h = e
    return h, extra, True


def pin_ancestors(anc: tuple, users: list, pinned: list, cached: list, lru: OrderedDict, depth: int) -> int:
    """A running sequence at global `depth` pins its share of each ancestor; returns the blocks newly pinned (nodes
    left with no unpinned block leave the LRU order)."""
    k = 0
    for x, s, e in anc:
        c = depth - s
        if c <= 0:
            break
        kx = pin(users, pinned, x, c if c < e - s else e - s)
        if kx:
            k += kx
            if cached[x] == pinned[x] and x in lru:
                del lru[x]
    return k


def release_ancestors(anc: tuple, users: list, pinned: list, lru: OrderedDict, depth: int) -> int:
    """A running sequence at global `depth` stops using its ancestors, deepest first (each node with blocks newly
    unpinned moves to the LRU order's end after its children); returns the blocks unpinned."""
    k = 0
    for x, s, e in reversed(anc):
        c = depth - s
        if c <= 0:
            continue
        kx = release(users, pinned, x, c if c < e - s else e - s)
        if kx:
            k += kx
            lru[x] = None
            lru.move_to_end(x)
    return k


def cache_ancestors(anc: tuple, cached: list, depth: int) -> int:
    """A prefill has computed its path to global block `depth`: each ancestor's segment is cached to there; returns
    the blocks newly cached."""
    k = 0
    for x, s, e in anc:
        c = depth - s
        if c <= 0:
            break
        if c > e - s:
            c = e - s
        if c > cached[x]:
            k += c - cached[x]
            cached[x] = c
    return k


def warm_cache(tree: PrefixTree, leaf: np.ndarray, own: np.ndarray) -> tuple[list, list]:
    """(cached blocks per node, the LRU order) of a cache that holds, unpinned, the full reusable blocks of the
    requests given by `leaf`/`own` and every ancestor block their paths need; the LRU order puts deeper nodes first
    (children before their parents), then node order."""
    deepest = np.zeros(tree.nodes, np.int64)
    np.maximum.at(deepest, leaf, own)
    cached = deepest.tolist()
    for q in np.flatnonzero(deepest > 0).tolist():
        for x, s, e in tree.ancestors[q]:
            if e - s > cached[x]:
                cached[x] = e - s
    order = sorted((q for q in range(tree.nodes) if cached[q] > 0), key=lambda q: -tree.level[q])
    return cached, order


def unpin_path(users: list, pinned: list, lru: OrderedDict, anc: tuple, q: int, start: int, depth: int) -> int:
    """A running sequence at global `depth` of a path ending in node q (first block `start`, ancestors `anc`) stops
    using it: its last node, then the ancestors deepest first, each with blocks newly unpinned moved to the LRU
    order's end (so parents come after their children); returns the blocks unpinned."""
    k = release(users, pinned, q, depth - start if depth > start else 0)
    if k:
        lru[q] = None
        lru.move_to_end(q)
    return k + release_ancestors(anc, users, pinned, lru, depth) if anc else k


def keep_answer(anc: tuple, cached: list, pinned: list, lru: OrderedDict, q: int, start: int, end: int) -> int:
    """A finished request whose answer is part of its prefix (node q, first block `start`, ancestors `anc`) leaves its
    path cached to global block `end`: the blocks newly cached (they leave its context as unpinned cache). Every node
    of the path with unpinned blocks moves to the LRU order's end, q first and its parents after it."""
    k = cache_ancestors(anc, cached, end) if anc else 0
    if end - start > cached[q]:
        k += end - start - cached[q]
        cached[q] = end - start
    for x in (q,) + tuple(a[0] for a in reversed(anc)):
        if cached[x] > pinned[x]:
            lru[x] = None
            lru.move_to_end(x)
    return k


#: Writes take their tier's path (2026-11-28, after set cn's values were seen; docs/simulator.md "A KV tier in host
#: memory", Writes): a write-through store queues on the tier's write path, first in first out, at the tier's rate
#: (host memory: the host link, device to host; disk: the drive), and its blocks become hits there only when written
#: (vLLM's connector marks stored blocks loadable only once their transfer completes: offloading_connector.py
#: complete_store). Off: stores were free and at once visible, as sets cl and cn were registered.
WRITES_QUEUE = True


# ---- a KV tier in host memory behind the prefix cache (docs/simulator.md "A KV tier in host memory") ----------
@dataclass(frozen=True)
class HostTier:
    """A second tier of the prefix cache in host memory (vLLM's KV offloading connector, --kv-offloading-size;
    LMCache's CPU backend; SGLang's HiCache): `capacity_tokens` of KV it holds for the replica, and
    `load_s_per_token`, the seconds one token's KV takes to come back into HBM (each GPU of the group that holds it
    loads its own share over its own host link, in parallel). `host_tier` builds one from a model and a link.

    `sync` False (default; vLLM's OffloadingConnector): a load runs beside the passes; the request, admitted with its
    memory held, joins the first pass that starts after its blocks are in HBM, and loads queue on the host link one
    after another. True (LMCache's default retrieval, inside the forward): the pass that carries the request's first
    chunk waits for the load.

    `disk_tokens` > 0: a third tier behind host memory, on local flash or a file system (LMCache's local disk
    backend, llm-d's file-system offload, SGLang HiCache's storage layer), written through like host memory and
    evicted by its own LRU; a block that only it holds loads in `disk_s_per_token` per token (docs/simulator.md,
    "A disk tier behind host memory")."""

    capacity_tokens: float
    load_s_per_token: float
    sync: bool = False
    disk_tokens: float = 0.0
    disk_s_per_token: float = 0.0

    def __post_init__(self):
        for name, v in (("capacity_tokens", self.capacity_tokens), ("load_s_per_token", self.load_s_per_token),
                        ("disk_tokens", self.disk_tokens), ("disk_s_per_token", self.disk_s_per_token)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"host KV tier {name} must be a finite number >= 0, got {v!r}")


def host_tier(model, layout, kv_dtype: str, gib: float, bytes_per_s: float, sync: bool = False,
              disk_gib: float = 0.0, disk_bytes_per_s: float = 0.0) -> HostTier:
    """The host tier of `gib` GiB for one replica of `layout`, loading at `bytes_per_s` per GPU, and optionally a
    disk tier of `disk_gib` GiB behind it read at `disk_bytes_per_s` for the whole replica:

        stored bytes per token = b_gpu · tp · pp      (b_gpu = memory.kv_bytes_per_token_per_gpu: a token's KV is on
                                                       the tp·pp GPUs of one group, replicated beyond the KV heads)
        capacity_tokens        = gib · 2^30 / (b_gpu · tp · pp)    (vLLM's --kv-offloading-size: the total over ranks)
        load_s_per_token       = b_gpu / bytes_per_s             (every GPU of the group loads its share at once)
        disk_tokens            = disk_gib · 2^30 / (b_gpu · tp · pp)
        disk_s_per_token       = b_gpu · tp · pp / disk_bytes_per_s   (one drive or file system serves the group)

    Ignores the per-block cost of small copies (engines move one block per layer at a time), contention of the
    host links with other traffic and NUMA placement: `bytes_per_s` is the rate a block copy reaches. For the disk:
    the host-to-GPU leg of a disk read (pipelined behind the slower drive), writes competing with reads, and other
    replicas sharing the drive."""
    from ..memory import kv_bytes_per_token_per_gpu

    if not (math.isfinite(gib) and gib > 0):
        raise InputError(f"host KV tier size must be > 0 GiB, got {gib!r}; e.g. 64")
    if not (math.isfinite(bytes_per_s) and bytes_per_s > 0):
        raise InputError(f"host KV tier load rate must be > 0 bytes/s, got {bytes_per_s!r}; e.g. 53e9 (PCIe Gen5 x16)")
    if not (math.isfinite(disk_gib) and disk_gib >= 0):
        raise InputError(f"disk KV tier size must be >= 0 GiB, got {disk_gib!r}; e.g. 2048 (0: none)")
    if disk_gib and not (math.isfinite(disk_bytes_per_s) and disk_bytes_per_s > 0):
        raise InputError(f"disk KV tier read rate must be > 0 bytes/s, got {disk_bytes_per_s!r}; e.g. 14e9 "
                         f"(a PCIe Gen5 NVMe drive)")
    b_gpu = kv_bytes_per_token_per_gpu(model, layout, kv_dtype)
    b_group = b_gpu * layout.tp * layout.pp
    return HostTier(float(gib * 2.0**30 / b_group), float(b_gpu / bytes_per_s), bool(sync),
                    float(disk_gib * 2.0**30 / b_group), float(b_group / disk_bytes_per_s) if disk_gib else 0.0)


class TierLevel:
    """One level below HBM (host memory or disk) during a run: per node the leading blocks of its segment it holds, the
    nodes in least-recently-used order, the blocks held, its capacity in blocks and the blocks it evicted; its write
    path (WRITES_QUEUE): seconds a block takes to write (0: at once), the writes queued (landing time, node, depth),
    per node the deepest depth queued (0: none) and when the path is next free."""

    __slots__ = ("held", "lru", "used", "cap", "evicted", "ws", "wq", "pend", "wfree")

    def __init__(self, nodes: int, capacity_blocks: int, write_s: float = 0.0):
        self.held = [0] * nodes
        self.lru: OrderedDict = OrderedDict()
        self.used, self.cap, self.evicted = 0, int(capacity_blocks), 0
        self.ws = float(write_s) if WRITES_QUEUE else 0.0
        self.wq: deque = deque()
        self.pend = [0] * nodes if self.ws else []
        self.wfree = 0.0

    def store(self, x: int, depth: int, now: float) -> None:
        """Node x is cached in HBM to `depth` blocks at `now`: copy what this level lacks (at once, or queued behind
        the writes before it); x becomes the most recently used (a store or a hit)."""
        h = self.held[x]
        if self.ws:
            p = self.pend[x] if self.pend[x] > h else h
            if depth > p:
                self.wfree = (self.wfree if self.wfree > now else now) + (depth - p) * self.ws
                self.wq.append((self.wfree, x, depth))
                self.pend[x] = depth
        elif depth > h:
            self.used += depth - h
            self.held[x] = depth
        if depth > 0 or h > 0:
            self.lru[x] = None
            self.lru.move_to_end(x)
        if self.used > self.cap:
            self.evict()

    def land(self, now: float) -> None:
        """The writes finished by `now` are held (their node back in the LRU order if evictions had dropped it; the
        queued depth cleared with its last write), then what exceeds the capacity is evicted."""
        wq, held, pend, lru = self.wq, self.held, self.pend, self.lru
        while wq and wq[0][0] <= now:
            _, x, d = wq.popleft()
            if d > held[x]:
                self.used += d - held[x]
                held[x] = d
                if x not in lru:
                    lru[x] = None
            if pend[x] == d:
                pend[x] = 0
        if self.used > self.cap:
            self.evict()

    def evict(self) -> None:
        """Drop tail blocks of the least recently used nodes until the held blocks fit the capacity."""
        lru, held = self.lru, self.held
        while self.used > self.cap and lru:
            x = next(iter(lru))
            take = min(held[x], self.used - self.cap)
            held[x] -= take
            self.used -= take
            self.evicted += take
            if held[x] == 0:
                del lru[x]


class HostCache:
    """The tiers below HBM during a run: host memory (`mem`, a TierLevel) and, with `disk_blocks` > 0, a disk behind
    it (`disk`; None without one).

    Write-through: every block the HBM cache holds is copied to host memory (and to the disk tier) as it becomes
    cached (vLLM's offloading connector stores each newly computed full block; LMCache stores a prefill's KV), so HBM
    evictions drop blocks that the host tier still has. A hit first takes the HBM blocks along its path, then loads
    the blocks that only the lower tiers have, to where no tier holds the path; the loaded blocks are written back
    into host memory (a use: the path becomes the most recently used in each tier). Evictions take the least recently
    used node's tail blocks, each tier on its own (nothing is pinned below HBM: a running sequence's blocks are in
    HBM)."""

    __slots__ = ("mem", "disk", "cap2")

    def __init__(self, nodes: int, capacity_blocks: int, disk_blocks: int = 0, write_s: float = 0.0,
                 disk_write_s: float = 0.0):
        self.mem = TierLevel(nodes, capacity_blocks, write_s)
        self.disk = TierLevel(nodes, disk_blocks, disk_write_s) if disk_blocks > 0 else None
        self.cap2 = int(disk_blocks) if disk_blocks > 0 else 0

    def store(self, x: int, depth: int, now: float = 0.0) -> None:
        """Node x's segment is cached in HBM to `depth` blocks at time `now`: each level copies what it lacks."""
        self.mem.store(x, depth, now)
        if self.disk is not None:
            self.disk.store(x, depth, now)

    def drain(self, now: float) -> None:
        """The writes finished by `now` land: their blocks are held (and count against the tier's capacity)."""
        if self.mem.wq and self.mem.wq[0][0] <= now:
            self.mem.land(now)
        if self.disk is not None and self.disk.wq and self.disk.wq[0][0] <= now:
            self.disk.land(now)

    def store_path(self, anc: tuple, q: int, cached: list, now: float = 0.0) -> None:
        """Write through the nodes of a path (its ancestors, root first, then q) to their HBM depths."""
        for x, _, _ in anc:
            self.store(x, cached[x], now)
        self.store(q, cached[q], now)

    def reach(self, anc: tuple, q: int, start: int, own: int, cached: list) -> int:
        """Global blocks of a path (ancestors `anc`, last node q from block `start`, `own` blocks reusable there)
        that HBM or a lower tier hold contiguously from the root: each node to the deepest of its depths."""
        held = self.mem.held
        held2 = self.disk.held if self.disk is not None else held
        for x, s, e in anc:
            a = cached[x] if cached[x] > held[x] else held[x]
            if held2[x] > a:
                a = held2[x]
            if a < e - s:
                return s + a
        a = cached[q] if cached[q] > held[q] else held[q]
        if held2[q] > a:
            a = held2[q]
        return start + (a if a < own else own)

    def disk_only(self, anc: tuple, q: int, start: int, cached: list, upto: int) -> int:
        """Blocks of the path below global block `upto` (its reach) that only the disk tier holds: per node, those
        past both its HBM and its host-memory depth."""
        held, k = self.mem.held, 0
        for x, s, e in (*anc, (q, start, upto)):
            if s >= upto:
                break
            n = (e if e < upto else upto) - s
            a = cached[x] if cached[x] > held[x] else held[x]
            if n > a:
                k += n - a
        return k

    def warm(self, cached: list, order: list) -> None:
        """A warm start: the HBM cache's blocks were written through when earlier runs computed them (oldest
        first in `order`, so the most recently used end up last), held at once."""
        levels = [lv for lv in (self.mem, self.disk) if lv is not None]
        ws = [lv.ws for lv in levels]
        for lv in levels:
            lv.ws = 0.0
        for x in order:
            self.store(x, cached[x])
        for lv, w in zip(levels, ws):
            lv.ws = w
