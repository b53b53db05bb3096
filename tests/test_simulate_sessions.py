"""Chat sessions in the serving simulator: each turn sent when the user has read the answer before it (core.ClosedLoop
with `after` and `think_s`), the generator of multi-turn conversations (workload.chat_sessions) and `simulate
--sessions`; timings by hand, the conversation's prompts and prefixes by hand, bad input refused in one line."""

import json

import numpy as np
import pytest

from roofline.errors import InputError
from roofline.simulate import ConstantStep, Deployment, Policy, Simulation, make_workload
from roofline.simulate.core import ClosedLoop
from roofline.simulate.workload import chat_sessions

STEP = 0.01


def _dep(cap=1e9):
    return Deployment(ConstantStep(STEP), kv_capacity_tokens=cap)


def test_each_turn_is_sent_after_the_answer_it_follows_by_hand():
    """10 ms passes. Requests 0 and 1 are first turns (sent at 0 and 5 ms); request 2 follows 0 with 100 ms of thought,
    request 3 follows 1 with 200 ms. Request 0: prefill 0-10 ms, 4 decode passes, done at 50 ms; request 1 joins at 10
    ms (the pass then running), first token 20 ms, done 60 ms. So request 2 is sent at 50 + 100 = 150 ms (done 200 ms)
    and request 3 at 60 + 200 = 260 ms: sent in the order 0, 1, 2, 3 here, but by the answers, not by index."""
    wl = make_workload([0, 0.005, 0.005, 0.005], [10, 10, 30, 30], 5)
    loop = ClosedLoop(1, np.zeros(4), 0.0, after=np.array([-1, -1, 0, 1]), think_s=np.array([0, 0, 0.1, 0.2]))
    tr = Simulation(wl, _dep(), Policy("continuous"), closed_loop=loop).run()
    assert loop.sends_s.tolist() == pytest.approx([0, 0.005, 0.15, 0.26])
    assert tr.first_token_s.tolist() == pytest.approx([0.01, 0.02, 0.16, 0.27])
    assert tr.finish_s.tolist() == pytest.approx([0.05, 0.06, 0.20, 0.31])


def test_a_later_index_can_be_sent_first():
    """Request 2 waits for request 1 (a long answer) and request 3 for request 0 (a short one): 3 is sent before 2,
    and the queue of sent requests keeps them in time order (3 admitted first)."""
    wl = make_workload([0, 0, 0, 0], 10, [2, 20, 2, 2])
    loop = ClosedLoop(1, np.zeros(4), 0.0, after=np.array([-1, -1, 1, 0]), think_s=np.zeros(4))
    tr = Simulation(wl, _dep(), Policy("continuous"), closed_loop=loop).run()
    assert loop.sends_s[3] < loop.sends_s[2] and tr.admit_s[3] < tr.admit_s[2]
    assert loop.sends_s[3] == pytest.approx(tr.finish_s[0]) and loop.sends_s[2] == pytest.approx(tr.finish_s[1])


def test_sessions_without_waits_are_the_open_loop_run():
    """Every request a first turn (after -1): the same trace as the run without a client."""
    wl = make_workload(np.arange(20) * 0.003, np.arange(20) * 7 + 20, np.arange(20) % 5 + 3)
    plain = Simulation(wl, _dep(), Policy("chunked", max_batched_tokens=64)).run()
    loop = ClosedLoop(1, np.zeros(20), 0.0, after=np.full(20, -1), think_s=np.zeros(20))
    tr = Simulation(wl, _dep(), Policy("chunked", max_batched_tokens=64), closed_loop=loop).run()
    for f in ("first_token_s", "finish_s", "admit_s"):
        assert getattr(tr, f).tolist() == getattr(plain, f).tolist()


@pytest.mark.parametrize("after, think, match", [
    ([-1, 1], [0, 0], "waits for request 1"),
    ([-1, -2], [0, 0], "waits for request -2"),
    ([-1, 0], [0, -1], "think time -1"),
    ([-1, 0], [0], "one of each"),
])
def test_bad_sessions_are_refused_in_one_line(after, think, match):
    with pytest.raises(InputError, match=match) as e:
        ClosedLoop(1, np.zeros(2), 0.0, after=np.array(after), think_s=np.array(think, dtype=float))
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="give both or neither"):
        ClosedLoop(1, np.zeros(2), 0.0, after=np.array([-1, 0]))


def test_chat_sessions_build_each_conversation_by_hand():
    """3 users, 2 turns a conversation, fixed lengths (user message 50, answer 20), a 100-token system prompt of 2:
    requests round-robin over the users; a first turn's prompt 150 = 100 + 50, a second turn's 220 = 150 + 20 + 50; the
    third request of a user starts a new conversation (150 again). Each request waits for its user's previous one;
    prefixes: one per conversation, shared = prompt + answer, extending its system prompt at 100 tokens."""
    wl = chat_sessions(np.random.default_rng(0), 12, 3, turns=2, think_s=1.0, lengths_kind="fixed", prompt_tokens=50,
                       output_tokens=20, shared_prefix_tokens=100, prefix_groups=2, max_context=4096)
    after, think = wl.after, wl.think_s
    assert wl.prompt_tokens.tolist() == [150, 150, 150, 220, 220, 220] * 2
    assert after.tolist() == [-1, -1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8] and np.all(think[:3] == 0)
    assert wl.prefix_id.tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]
    assert np.all(wl.shared_prefix_tokens == wl.prompt_tokens + 20)
    assert set(wl.parent_prefix_id.tolist()) <= {6, 7} and np.all(wl.parent_prefix_tokens == 100)
    # a context of 300: the second turn (220 + 20 = 240) fits, a third would not (240 + 50 + 20 = 310): new conversation
    wl3 = chat_sessions(np.random.default_rng(0), 3, 1, turns=9, think_s=0.0, lengths_kind="fixed", prompt_tokens=50,
                        output_tokens=20, shared_prefix_tokens=100, max_context=300)
    assert wl3.prompt_tokens.tolist() == [150, 220, 150] and wl3.prefix_id.tolist() == [0, 0, 1]


def test_a_chats_second_turn_hits_its_first_turn_and_answer():
    """One user, no think time, no system prompt: turn 2 (prompt 50 + 20 + 50 = 120) hits floor(min(70, 69)/16) = 4
    blocks of turn 1's prompt and answer (64 tokens)."""
    wl = chat_sessions(np.random.default_rng(0), 2, 1, turns=2, think_s=0.0, lengths_kind="fixed", prompt_tokens=50,
                       output_tokens=20)
    sim = Simulation(wl, _dep(), Policy("continuous"))  # the workload's own sessions make the loop
    tr = sim.run()
    assert tr.prefix_hit_tokens.tolist() == [0, 64]
    assert sim.closed_loop.sends_s[1] == pytest.approx(tr.finish_s[0])


def test_cli_sessions(run_cli):
    args = ("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "-n", "300", "--sessions", "16",
            "--turns", "3", "--think-s", "0.5", "--prompt-tokens", "200", "--output-tokens", "100",
            "--shared-prefix-tokens", "400", "--json")
    code, out, err = run_cli(*args)
    assert code == 0, err
    d = json.loads(out)
    assert d["sessions"] == 16 and d["turns"] == 3 and d["closed_loop"] is True and d["requests"] == 300
    assert d["prefix_hit_rate"] > 0.5  # later turns find the conversation so far, first turns the system prompt
    for extra, msg in ((("--rate", "5"), "drop --rate"), (("--max-concurrency", "4"), "drop --max-concurrency")):
        code, out, err = run_cli(*args, *extra)
        assert code == 2 and msg in err
    code, out, err = run_cli("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--turns", "3")
    assert code == 2 and "add --sessions N" in err


def test_a_traces_sessions_round_trip_and_run(tmp_path, run_cli):
    """Trace columns after_request and think_s carry sessions: written and read back unchanged, run by `simulate
    --trace` as the closed loop (its table names the trace's sessions); bad rows name their line."""
    from roofline.simulate.workload import read_trace, write_trace

    wl = chat_sessions(np.random.default_rng(1), 40, 4, turns=3, think_s=0.5, prompt_tokens=100, output_tokens=50,
                       max_context=8192, shared_prefix_tokens=64)
    back = read_trace(write_trace(wl, tmp_path / "chat.csv"))
    assert back.after.tolist() == wl.after.tolist() and back.think_s == pytest.approx(wl.think_s, abs=1e-6)
    assert back.parent_prefix_id.tolist() == wl.parent_prefix_id.tolist()
    code, out, err = run_cli("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "--trace",
                             str(tmp_path / "chat.csv"), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["closed_loop"] is True and d["trace_sessions"] is True and d["sessions"] == 4 and d["prefix_hit_rate"] > 0
    code, out, err = run_cli("simulate", "-m", "llama-3.1-8b", "-s", "dgx-h100", "--gpus", "1", "--trace",
                             str(tmp_path / "chat.csv"), "--max-concurrency", "2")
    assert code == 1 and "drop --max-concurrency" in err
    head = "arrival_s,prompt_tokens,output_tokens,after_request,think_s\n"
    for rows, match in (("0,10,2,-1,0\n0,10,2,1,0\n", "line 3: after_request = 1 must be -1"),
                        ("0,10,2,-1,0\n0,10,2,0,-2\n", "line 3: think_s = -2"),):
        (tmp_path / "bad.csv").write_text(head + rows)
        with pytest.raises(InputError, match=match):
            read_trace(tmp_path / "bad.csv")
    (tmp_path / "bad.csv").write_text("arrival_s,prompt_tokens,output_tokens,after_request\n0,10,2,-1\n")
    with pytest.raises(InputError, match="without think_s"):
        read_trace(tmp_path / "bad.csv")
