"""The bad-input corpus (issue 16): every command and the public Python functions answer bad input with a
non-zero exit (1 bad value, 2 usage), exactly one line on stderr, no traceback and no partial output
file; plus Hypothesis fuzzing of step, plan, simulate and train: a clean error or valid JSON with
finite numbers, never a traceback.

Cases are data: `CASES` (hand-written, including the 25 of the issue) and `GENERATED` (every numeric
option of every command against the values that break each kind of option).
"""

from __future__ import annotations

import json
import math
import shlex

import pytest

M70 = "-m llama-3-70b -s dgx-h100"
STEP, SWEEP, PLAN = f"step {M70}", f"sweep {M70}", f"plan {M70}"
SIM = f"simulate {M70} -n 20"
TRAIN = "train -m llama-3-8b -s dgx-h100"

# (command line, exit code, text the one line must contain). {bin}, {latin}, {tmp} are files/folders
# made by the `files` fixture; {out} is an output path that must not exist afterwards.
CASES = [
    # --- the 25: tracebacks
    ("step -m {bin_json} -s dgx-h100", 1, "is a binary file, not text"),
    ("step -m {latin_json} -s dgx-h100", 1, "is not UTF-8 text"),
    ("--catalog {bin} catalog models", 1, "--catalog file"),
    ("--catalog {latin_yaml} catalog models", 1, "is not UTF-8 text"),
    (f"simulate {M70} --trace {{bin}}", 1, "is a binary file"),
    (f"simulate {M70} --trace {{latin_csv}}", 1, "is not UTF-8 text"),
    (f"{SWEEP} --plot {{out_xyz}}", 1, "--plot"),
    (f"{TRAIN} --micro-batch 0", 1, "--micro-batch must be a whole number >= 1, got 0"),
    ("prices infer --kv-bytes 0", 1, "--kv-bytes must be > 0"),
    # --- silent acceptances
    (f"{STEP} --tp 0", 1, "--tp must be a whole number >= 1, got 0"),
    (f"{STEP} --pp 0", 1, "--pp must be a whole number >= 1, got 0"),
    (f"{STEP} --dp 0", 1, "--dp must be a whole number >= 1, got 0"),
    ("step -m deepseek-v3 -s gb200-nvl72 --ep 0", 1, "--ep must be a whole number >= 1, got 0"),
    (f"{STEP} --domains 0", 1, "--domains must be a whole number between 1 and 1024, got 0"),
    (f"{SIM} --policy disaggregated --prefill-gpus 0", 1, "--prefill-gpus must be a whole number >= 1"),
    (f"{SIM} --engine sglang --cuda-graph-max-batch -1", 1, "--cuda-graph-max-batch must be a whole number >= 0"),
    (f"{SIM} --cuda-graph-max-batch 160", 2, "--cuda-graph-max-batch is the --engine's CUDA-graph limit"),
    (f"{SIM} --in-process", 2, "--in-process drops the --engine's per-request costs"),
    (f"{STEP} -g 3 --tp 8", 1, "--gpus 3 disagrees with the layout"),
    (f"{PLAN} --prompt 200000", 1, "exceeds llama-3-70b's max_context 8,192"),
    (f"{SIM} --prompt-tokens 200000", 1, "exceeds llama-3-70b's max_context 8,192"),
    (f"simulate {M70} --trace {{long_csv}}", 1, "line 3: prompt_tokens + output_tokens = 200,010 exceeds"),
    (f"{TRAIN} --ep 2 --dp 2 --global-batch 64", 1, "needs a mixture-of-experts model"),
    (f"{TRAIN} --dtype fp4", 1, "lists no native fp4"),
    ("prices infer --kv-bytes -1", 1, "--kv-bytes must be > 0"),
    ("prices infer --kv-bytes nan", 1, "got nan"),
    ("tiers --kv-bytes 2048 --model deepseek-v3", 2, "--model sets the KV bytes per token"),
    (f"{STEP} --usd-per-gpu-hour 1e308", 1, "--usd-per-gpu-hour must be > 0 and <= 1e+06"),
    (f"{SIM} --usd-per-gpu-hour 0", 1, "--usd-per-gpu-hour must be > 0"),
    # --- misleading messages
    (f"{TRAIN} --global-batch 0", 1, "--global-batch must be a whole number >= 1, got 0"),
    (f"{SIM} --policy fifo", 1, "continuous, chunked, separate, static, train, disaggregated, got 'fifo'"),
    ("--catalog {fp8only} step -m llama-3-8b -a fp8only", 1, "--weights-dtype bf16 needs bf16 matmul throughput"),
    ("--catalog {fp8only} step -m llama-3-8b -a fp8only --weights-dtype fp8", 1, "lists no 16-bit (bf16/fp16)"),
    ("--catalog {fp8only} sweep -m llama-3-8b -a fp8only", 1, "needs bf16 matmul throughput"),
    # --- more files and outputs
    ("step -m {missing_json} -s dgx-h100", 1, "does not exist"),
    ("step -m {tmp} -s dgx-h100", 1, "unknown model"),
    ("--catalog {missing} catalog models", 1, "does not exist"),
    ("--catalog {tmp} catalog models", 1, "is a directory"),
    (f"simulate {M70} --trace {{missing}}", 1, "does not exist"),
    (f"simulate {M70} --trace {{tmp}}", 1, "is a directory"),
    (f"simulate {M70} --trace {{empty}}", 1, "empty file"),
    (f"{SWEEP} --csv {{out_txt}}", 1, "must end in .csv"),
    (f"{SWEEP} --parquet {{out_csv}}", 1, "must end in .parquet"),
    (f"{SWEEP} --csv {{nodir}}/x.csv", 1, "does not exist; create it first"),
    (f"{SWEEP} --csv {{tmp}}", 1, "must end in .csv"),
    ("tiers --plot {out_txt}", 1, "must end in .png"),
    ("prices infer --plot {out_txt}", 1, "must end in .png"),
    ("validate --plot {out_xyz}", 1, "must end in .png"),
    ("validate --write-docs {out_txt}", 1, "must end in .md"),
    ("validate --dataset {bin}", 1, "is a binary file"),
    ("validate --serving --plot {out_xyz}", 2, "--serving scores the serving runs"),
    ("validate --serving --write-docs {out_txt}", 1, "must end in .md"),
    ("validate --serving --set zz", 1, "unknown serving validation set 'zz'; expected one of a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z, aa, ab, ac, ad, ae, af, ag, ah, ai, aj, ak, al, am, an, ao, ap"),
    ("validate --serving --set bd,zz", 1, "--set 'bd,zz': unknown set(s) 'zz'; expected a comma-separated list of distinct sets"),
    ("validate --serving --set bd,bd", 1, "--set 'bd,bd': a set named twice; expected a comma-separated list"),
    ("validate --set b", 2, "--set picks a serving validation set; use it with --serving"),
    (f"{SIM} --plot {{bin}}", 1, "is a file; give a folder"),
    # --- usage: options that cannot be combined
    ("step -m llama-3-70b -s dgx-h100 -a h100-sxm", 2, "--system and --accelerator cannot be used together"),
    (f"{STEP} --prompt 100", 2, "--prompt applies to --phase prefill only"),
    (f"{STEP} --decode-attention per-query-head", 2, "add --realistic or drop --decode-attention"),
    (f"{SWEEP} --prompt 64", 2, "--prompt applies to --phase prefill only"),
    (f"simulate {M70} --trace {{good_csv}} --rate 5", 2, "--trace gives the arrivals and lengths; drop --rate"),
    (f"simulate {M70} --requests 5 --duration 3", 2, "cannot be used together"),
    (f"simulate {M70} --stages 8:60,20:60 --rate 5", 2, "--stages and --rate cannot be used together"),
    (f"simulate {M70} --stages 8:60 --duration 30", 2, "--stages and --duration cannot be used together"),
    (f"simulate {M70} --ramp-up linear:1:20 --stages 8:60", 2, "--ramp-up and --stages cannot be used together"),
    (f"simulate {M70} --trace {{good_csv}} --stages 8:60", 2, "--trace gives the arrivals and lengths; drop --stages"),
    (f"simulate {M70} --stages 8:60,20", 1, "--stages stage 2 '20' is not RATE:DURATION; expected comma-separated"),
    (f"simulate {M70} --stages 8:-60", 1, "duration -60 must be > 0"),
    (f"simulate {M70} --stages 0:60", 1, "every stage has rate 0"),
    (f"simulate {M70} --ramp-up fast:1:20", 1, "is not STRATEGY:START:END"),
    (f"{SIM} --window-s -1", 1, "--window-s must be"),
    (f"{SIM} --prefill-gpus 4", 2, "--prefill-gpus sizes the prefill pool"),
    (f"{SIM} --spec-alpha 0.5", 2, "need --spec-gamma >= 1"),
    (f"{SIM} --interval-s 0.05", 2, "--interval-s is the departure interval"),
    (f"{SIM} --realistic --compute-efficiency 0.5", 2, "uses the efficiency model's own factors"),
    (f"{SIM} --engine tgi", 1, "--engine must be one of none, sglang, sglang-v0.3, sglang-v0.4, trtllm, trtllm-engine, vllm, vllm-v0, vllm-v0.14, vllm-v0.5, vllm-v1-sync, vllm-v1-sync-fullgraph, got 'tgi'"),
    (f"{SIM} --engine VLLM", 1, "--engine must be one of none, sglang, sglang-v0.3, sglang-v0.4, trtllm, trtllm-engine, vllm, vllm-v0"),
    (f"{SIM} --prefix-groups 3", 2, "--prefix-groups counts the system prompts of --shared-prefix-tokens"),
    (f"simulate {M70} --trace {{good_csv}} --shared-prefix-tokens 8", 2, "--trace gives each request's prefix"),
    (f"{SIM} --lengths fixed --prompt-tokens 100 --shared-prefix-tokens 100", 1,
     "cannot hold the 100-token shared prefix plus one token"),
    (f"{SIM} --shared-prefix-tokens 5000 --prompt-tokens 1000 --sigma 0.1", 1, "rarely fall between 5001"),
    (f"{SIM} --prefix-cache maybe", 1, "--prefix-cache must be one of auto, on, off"),
    (f"{SIM} --block-size 5000", 1, "--block-size must be"),
    (f"{SIM} --pool-warmup 8", 2, "--pool-warmup counts warm-up requests drawn from --prompt-pool"),
    (f"{SIM} --prompt-pool 10 --shared-prefix-tokens 5000 --prompt-tokens 1000 --sigma 0.1", 1,
     "rarely fall between 5001"),
    (f"simulate {M70} --trace {{good_csv}} --prompt-pool 100", 2, "--trace gives prefixes too"),
    (f"{SIM} --policy disaggregated --prompt-pool 100 --pool-warmup 8", 2, "disaggregated has two: drop --pool-warmup"),
    (f"{SIM} --grid 'rate=5,10' --prompt-pool 100", 1, "--prompt-pool, --pool-warmup"),
    ("tiers --model deepseek-v3 --remat-active-params 1e9", 2, "drop --remat-active-params"),
    ("tiers --kv-dtype fp8", 2, "--kv-dtype applies with --model"),
    ("catalog efficiency --family nvidia --json --bogus", 2, "No such option"),
    ("step -m llama-3-70b", 1, "no hardware given"),
    (TRAIN.replace("-s dgx-h100", ""), 1, "no hardware given"),
    ("step -s dgx-h100", 2, "Missing option"),
    ("plan -m llama-3-70b", 2, "Missing option"),
    # --- domain rules
    (f"{STEP} -c 100000", 1, "exceeds llama-3-70b's max_context 8,192"),
    (f"{STEP} --phase prefill --prompt 9000", 1, "exceeds llama-3-70b's max_context"),
    (f"{SWEEP} --context 1,9000", 1, "exceeds llama-3-70b's max_context"),
    (f"{PLAN} --context 9000", 1, "exceeds llama-3-70b's max_context"),
    (f"{TRAIN} --seq 100000", 1, "exceeds llama-3-8b's max_context"),
    (f"{STEP} --tp 3", 1, "TP 3 does not divide"),
    (f"{STEP} --tp 16", 1, "exceeds the 8 GPUs"),
    (f"{STEP} --ep 8 --tp 8", 1, "needs a mixture-of-experts model"),
    ("step -m deepseek-v3 -s gb200-nvl72 --tp 1 --dp 72 --ep 72", 1, "does not divide deepseek-v3's 256 expert"),
    (f"{STEP} --pp 100", 1, "exceeds llama-3-70b's 80 layers"),
    (f"{STEP} --tp 8 --dp 2", 1, "domains"),
    (f"{STEP} --tp 4 --pp 2 -b 1", 1, "sequence slots"),
    # --- layouts in sweep and simulate (issue 14): step's rules and words, plus the pools' own
    (f"{SWEEP} --tp 3", 1, "TP 3 does not divide"),
    (f"{SWEEP} --tp 4 --cp 2", 2, "--cp 2 splits a prompt's tokens over GPUs: add --phase prefill"),
    (f"{SWEEP} --tp 4 --dp 2 --batch 1,8", 1, "sequence slots"),
    (f"{SWEEP} --ep 2", 1, "needs a mixture-of-experts model"),
    (f"{SWEEP} -g 4 --tp 8", 1, "--gpus 4 disagrees with the layout"),
    (f"{SWEEP} --tp 8 --overlap", 2, "add --realistic or drop --overlap"),
    (f"{SWEEP} --tp 8 --plot {{out_png}}", 2, "--plot draws the perfect-sharding curves"),
    ("sweep -m mixtral-8x7b -s dgx-h100 --tp 8 --ep 4 --moe-tp 4", 1, "MoE TP 4 x EP 4 = 16 GPUs must divide"),
    (f"{SIM} --tp 4 --cp 2", 2, "give CP to a prefill pool of its own"),
    (f"{SIM} --tp 16", 1, "exceeds the 8 GPUs"),
    (f"{SIM} -g 4 --tp 2", 1, "--gpus 4 disagrees with the layout"),
    (f"{SIM} --tp 4 --realistic --moe-imbalance powerlaw:0.5", 2, "has none: drop it"),
    (f"{STEP} --moe-imbalance 1.3", 1, "llama-3-70b is dense (no experts): drop --moe-imbalance"),
    (f"{STEP} --expert-weights-dtype fp4", 1, "--expert-weights-dtype applies to mixture-of-experts models"),
    (f"{SWEEP} --expert-weights-dtype fp4", 1, "--expert-weights-dtype applies to mixture-of-experts models"),
    (f"{SIM} --recv-interval 0", 1, "--recv-interval must be a whole number between 1 and 10000"),
    (f"{SIM} --grid rate=1,2 --recv-interval 4", 1, "--recv-interval"),
    (f"{SIM} --kv-memory-fraction 1.5", 1, "--kv-memory-fraction must be > 0 and <= 1"),
    (f"{SIM} --kv-memory-of half", 1, "--kv-memory-of must be one of total, free"),
    (f"{SIM} --kv-memory-fraction sglangx", 2, "--kv-memory-fraction must be a number in (0, 1] or one of sglang, sglang-0.4.8, got 'sglangx'"),
    (f"{SIM} --kv-memory-fraction sglang --kv-memory-of free", 2, "--kv-memory-fraction sglang is SGLang's --mem-fraction-static, a share of the whole memory"),
    (f"{SIM} --grid rate=1,2 --kv-memory-fraction sglang", 1, "--kv-memory-fraction"),
    (f"{SIM} --grid rate=1,2 --kv-memory-fraction 0.95", 1, "--kv-memory-fraction"),
    (f"{SIM} --admit-interval 0", 1, "--admit-interval must be a whole number between 1 and 10000"),
    (f"{SIM} --admit-min-running 64", 2, "give --admit-interval too"),
    (f"{SIM} --admit-interval 7 --recv-interval 2", 2, "give one of them"),
    (f"{SIM} --admit-interval 7 --policy static", 2, "admits by its own rule"),
    (f"{SIM} --grid rate=1,2 --admit-interval 7", 1, "--admit-interval"),
    (f"{SIM} --long-prefill-token-threshold -5", 1, "--long-prefill-token-threshold must be a whole number"),
    (f"{SIM} --long-prefill-token-threshold 256", 1, "needs policy 'chunked', got 'continuous'"),
    (f"{SIM} --grid rate=1,2 --long-prefill-token-threshold 256", 1, "--long-prefill-token-threshold"),
    (f"{SIM} --max-concurrency 0", 1, "--max-concurrency must be a whole number >= 1"),
    (f"{SIM} -n 100000 --max-concurrency 2 --policy disaggregated --prefill-gpus 4", 1,
     "closed loop solved by up to 150,009 whole runs of both pools (at most 2,000)"),
    (f"{SIM} --grid rate=1,2 --max-concurrency 4", 1, "--max-concurrency"),
    (f"{SIM} --kernels tables", 2, "--kernels tables replaces terms of the realistic pass; add --realistic"),
    (f"{SIM} --kernels table", 1, "--kernels"),
    (f"{SWEEP} --phase prefill --prompt 128 --spec-gamma 2", 2, "--spec-gamma drafts tokens for decode"),
    (f"{SWEEP} --spec-gamma 2 --spec-alpha 1.5", 1, "--spec-alpha"),
    ("simulate -m llama-3-8b -a h100-sxm -n 10 --expert-weights-dtype fp4", 1,
     "--expert-weights-dtype applies to mixture-of-experts models"),
    ("sweep -m deepseek-v3 -s hgx-b200 --expert-weights-dtype fp3", 1, "--expert-weights-dtype must be one of"),
    ("simulate -m deepseek-v3 -s hgx-b200 --grid rate=1,2 --expert-weights-dtype fp4", 1, "--expert-weights-dtype"),
    (f"{PLAN} --expert-weights-dtype fp4", 1, "--expert-weights-dtype applies to mixture-of-experts models"),
    ("plan -m deepseek-v3 -s gb200-nvl72 --expert-weights-dtype fp4 --simulate 2", 2, "keeps one weight format"),
    ("step -m deepseek-v3 -s hgx-b200 --expert-weights-dtype fp3", 1, "--expert-weights-dtype must be one of"),
    ("simulate -m llama-3-8b -s hgx-b200 -g 1 --moe-activations fp8 -n 10", 2,
     "--moe-activations picks the activation format of MXFP4 experts' measured MoE rows"),
    ("simulate -m gpt-oss-120b -s hgx-b200 -g 1 --realistic --engine vllm --weights-dtype bf16 --expert-weights-dtype "
     "fp4 --moe-activations fp6 -n 10", 1, "--moe-activations must be one of auto, bf16, fp8"),
    ("simulate -m llama-3.1-8b -s hgx-h200 -g 1 --realistic --engine vllm --weights-dtype fp8 --fp8-scales block -n 10",
     2, "--fp8-scales on a dense model picks the GEMM rows of its format, but vLLM's dense GEMMs keep the per-tensor rows"),
    ("simulate -m llama-3.1-8b -s hgx-h200 -g 1 --realistic --engine trtllm --fp8-scales block -n 10",
     2, "--fp8-scales picks the per-tensor or block-scaled measured rows of FP8 weights"),
    ("simulate -m deepseek-v3 -s hgx-h200 --realistic --engine vllm --weights-dtype fp8 --fp8-scales channel -n 10", 1,
     "--fp8-scales must be one of auto, tensor, block"),
    ("step -m deepseek-v3 -s hgx-h200 --realistic --weights-dtype fp8 --kernels factor --fp8-scales block", 2,
     "--fp8-scales picks the per-tensor or block-scaled measured rows of FP8 weights"),
    ("simulate -m llama-3.1-8b -s hgx-b200 -g 1 --realistic --engine trtllm --moe-kernel trtllm-gen -n 10", 2,
     "--moe-kernel names the fused MoE kernel whose measured rows time the routed experts"),
    ("step -m deepseek-v3 -s hgx-b200 --realistic --weights-dtype fp8 --engine trtllm --moe-kernel deepgemm", 1,
     "--moe-kernel must be one of auto, trtllm-gen"),
    ("simulate -m deepseek-v3 -s hgx-b200 --grid rate=1,2 --moe-kernel trtllm-gen", 1, "--moe-kernel"),
    ("step -m palm-540b -s tpu-v5p-256 --tp 64 --attention batch --weight-stationary gathered:3 --phase prefill -b 64",
     1, "weight-gathered group 3 must divide TP 64"),
    ("step -m palm-540b -s tpu-v5p-256 --tp 64 --attention batch --weight-stationary gathered:1 --phase prefill -b 64",
     1, "must be 1d, 2d, gathered or gathered:N"),
    ("step -m palm-540b -s tpu-v5p-256 --tp 64 --weight-stationary gathered:4 --phase prefill -b 64", 1,
     "shard attention by batch"),
    (f"{SIM} --grid 'layout=TP8 OVERLAP'", 1, "OVERLAP overlaps a layout's collectives with its kernels in the "
                                              "realistic model; add --realistic"),
    (f"{SIM} --grid 'layout=TP8 WS2D WS2D'", 1, "ATTNBATCH, WS2D or WSGATHERED, OVERLAP at most once"),
    (f"{SIM} --grid 'layout=TP8 WS2D WSGATHERED'", 1, "ATTNBATCH, WS2D or WSGATHERED, OVERLAP at most once"),
    (f"{PLAN} --moe-imbalance sampling", 1, "llama-3-70b is dense (no experts): drop --moe-imbalance"),
    (f"{SIM} --prefill-layout tp=4", 2, "--prefill-layout lays out the prefill pool of --policy disaggregated"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=4 --prefill-gpus 4", 2, "drop --prefill-gpus"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=3", 1, "TP 3 does not divide"),
    (f"{SIM} --policy disaggregated --prefill-layout tp4", 1, "is not a layout; expected key=value pairs"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=4,tp=2", 1, "gives tp twice"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=x", 1, "tp must be a whole number, got 'x'"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=0", 1, "tp must be a whole number >= 1, got 0"),
    (f"{SIM} --policy disaggregated --prefill-layout tp=4,attention=diagonal", 1, "attention"),
    (f"{SIM} --tp 2 --grid rate=5,10", 1, "the layout flags"),
    (f"{STEP} -g 9", 1, "--gpus must be between 1 and 8"),
    ("step -m llama-3.1-405b -s dgx-h100", 1, "needs"),
    (f"{STEP} --realistic -g 6", 1, "runs the 6 GPUs as one TP group"),
    (f"{TRAIN} --tp 16", 1, "TP 16 exceeds the 8 GPUs"),
    (f"{TRAIN} --tp 3", 1, "TP 3 does not divide"),
    (f"{TRAIN} --pp 40", 1, "exceeds llama-3-8b's 32 layers"),
    (f"{TRAIN} --global-batch 100 --dp 3", 1, "must be a multiple of dp·micro-batch = 3"),
    (f"{TRAIN} --virtual-stages 2", 1, "needs schedule 'interleaved'"),
    (f"{TRAIN} --zero 5", 1, "--zero must be a whole number between 0 and 3"),
    (f"{SWEEP} --batch 1:4096:100000 --context 1:8000:100000", 1, "too many to print"),
    (f"{SWEEP} --batch 1:4096:100000 --context 1:8000:100000 --json --parquet {{out_parquet}}", 1, "too many"),
    ("simulate -m llama-3.1-405b -a h100-sxm -g 1 -n 5", 1, "leave no KV memory"),
    (f"simulate {M70} --duration 1e7 --rate 1e7", 1, "more than 10,000,000"),
    ("overtrain --target-loss 1.0", 1, "irreducible loss"),
    ("catalog efficiency --family ibm", 1, "unknown efficiency family 'ibm'"),
    ("prices show nope", 1, "unknown price list 'nope'"),
    ("prices infer nope", 1, "unknown price list 'nope'"),
    ("prices infer --accelerator nope", 1, "unknown accelerator 'nope'"),
    ("prices infer --remat-accelerator nope", 1, "unknown accelerator 'nope'"),
    ("tiers --tier nope", 1, "unknown tier 'nope'"),
    ("tiers --model nope", 1, "unknown model 'nope'"),
    ("tiers --model deepseek-v3 --kv-dtype fp3", 1, "--kv-dtype must be one of"),
    ("step -m nope -s dgx-h100", 1, "unknown model 'nope'"),
    ("step -m llama-3-70b -s nope", 1, "unknown system 'nope'"),
    ("step -m llama-3-70b -a nope", 1, "unknown accelerator 'nope'"),
    ("plan -m llama-3-70b -s nope", 1, "unknown system 'nope'"),
    ("train -m llama-3-8b -s nope", 1, "unknown system 'nope'"),
    ("simulate -m nope -s dgx-h100", 1, "unknown model 'nope'"),
    (f"{PLAN} --domains two", 1, "is not N, A-B or a comma list"),
    (f"{PLAN} --domains 0", 1, "between 1 and 1024"),
    (f"{PLAN} --domains 1-100000", 1, "is not N, A-B or a comma list"),
    (f"{PLAN} --domains 2000", 1, "between 1 and 1024"),
    (f"{PLAN} --realistic --compute-efficiency 0.5", 1, "efficiency model's own factors"),
    (f"{SWEEP} --batch 8:1:3", 1, "is not a grid"),
    (f"{SWEEP} --batch 1:10:0", 1, "is not a grid"),
    (f"{SWEEP} --batch abc", 1, "is not a grid"),
    (f"{SWEEP} --batch 1.5", 1, "is not a grid"),
    (f"{SWEEP} --batch ,", 1, "is not a grid"),
    (f"{SWEEP} --batch 0", 1, "--batch values must be >= 1"),
    (f"{SWEEP} --context -5", 1, "is not a grid"),
    (f"{SWEEP} --context nan", 1, "is not a grid"),
    (f"{SWEEP} --batch 1:inf:3", 1, "is not a grid"),
    (f"{SWEEP} --chunk-points 5", 1, "--chunk-points must be a whole number between 1000"),
    (f"{STEP} --phase train", 1, "--phase must be one of decode, prefill"),
    (f"{STEP} --weights-dtype fp3", 1, "--weights-dtype must be one of"),
    (f"{STEP} --kv-dtype fp3", 1, "--kv-dtype must be one of"),
    (f"{STEP} --decode-attention sometimes --realistic", 1, "--decode-attention must be one of shared"),
    (f"{SWEEP} --phase train", 1, "--phase must be one of"),
    (f"{SIM} --arrivals burst", 1, "--arrivals must be one of poisson, gamma"),
    (f"{SIM} --lengths uniform", 1, "--lengths must be one of fixed, lognormal"),
    (f"{TRAIN} --schedule zigzag", 1, "--schedule must be one of gpipe, 1f1b, interleaved"),
    (f"{TRAIN} --recompute sometimes", 1, "--recompute must be one of none, selective, full, reversible"),
    (f"{TRAIN} --dtype int3", 1, "--dtype must be one of"),
    ("prices layouts -- -5", 1, "must be > 0"),
    ("prices layouts 0", 1, "must be > 0"),
    ("prices layouts nan", 1, "must be > 0"),
    ("prices layouts 1e300", 1, "<= 1e+09"),
    ("prices layouts 2048 --top 0", 1, "--top must be >= 1"),
    # --- the other commands: board, report, calibrate, serve
    ("board --batch 0", 1, "--batch must be > 0"),
    ("board --plot {out_xyz}", 1, "must end in .png"),
    ("board --gpus 0", 1, "--gpus must be a whole number >= 1"),
    ("board -m llama-3-70b", 2, "give both --model and --system"),
    ("report --out {bin}", 1, "is a file; give a folder"),
    ("calibrate --out {bin}", 1, "is a file; give a folder"),
    ("calibrate --batches abc --no-decode --out {tmp}", 1, "--batches must be comma-separated whole numbers"),
    ("serve --port 0", 1, "--port must be between 1 and 65535"),
    ("serve --port 99999", 1, "--port must be between 1 and 65535"),
]

# numeric options per command: (command prefix, option, kind)
OPTIONS = [
    (STEP, "--batch", "count"), (STEP, "--context", "count0"), (STEP, "--prompt", "count"),
    (STEP, "--gpus", "count"), (STEP, "--tp", "count"), (STEP, "--pp", "count"), (STEP, "--dp", "count"),
    (STEP, "--domains", "count"), (STEP, "--usd-per-gpu-hour", "price"),
    (STEP, "--compute-efficiency", "frac"), (STEP, "--memory-efficiency", "frac"),
    (SWEEP, "--gpus", "count"), (SWEEP, "--prompt", "count"), (SWEEP, "--usd-per-gpu-hour", "price"),
    (SWEEP, "--compute-efficiency", "frac"), (SWEEP, "--memory-efficiency", "frac"),
    (PLAN, "--prompt", "count"), (PLAN, "--output", "count"), (PLAN, "--context", "count0"),
    (PLAN, "--ttft-ms", "pos"), (PLAN, "--tpot-ms", "pos"), (PLAN, "--tokens-per-s-per-user", "pos"),
    (PLAN, "--moe-imbalance", "pos"), (PLAN, "--scale-up-efficiency", "frac"),
    (PLAN, "--scale-out-efficiency", "frac"), (PLAN, "--compute-efficiency", "frac"),
    (PLAN, "--memory-efficiency", "frac"), (PLAN, "--usd-per-gpu-hour", "price"),
    (SIM, "--max-seqs", "count"), (SIM, "--max-batched-tokens", "count"), (SIM, "--rate", "pos"),
    (SIM, "--prompt-tokens", "count"), (SIM, "--output-tokens", "count"), (SIM, "--sigma", "nonneg"),
    (SIM, "--fast-fraction", "frac0"), (SIM, "--ttft-target-s", "pos"), (SIM, "--tpot-target-s", "pos"),
    (SIM, "--usd-per-gpu-hour", "price"), (SIM, "--compute-efficiency", "frac"),
    (SIM, "--memory-efficiency", "frac"), (SIM, "--gpus", "count"), (SIM + " --arrivals gamma", "--cv", "pos"),
    (f"simulate {M70}", "--requests", "count"), (f"simulate {M70}", "--duration", "pos"),
    (SIM + " --spec-gamma 2", "--spec-alpha", "frac0"), (SIM + " --spec-gamma 2", "--draft-fraction", "frac0"),
    (SIM, "--block-size", "count"), (SIM, "--shared-prefix-tokens", "count0"),
    (SIM + " --shared-prefix-tokens 10", "--prefix-groups", "count"),
    (SIM, "--prompt-pool", "count0"), (SIM + " --prompt-pool 10", "--pool-warmup", "count0"),
    (SIM + " --policy train", "--interval-s", "pos"), (SIM + " --policy disaggregated", "--prefill-gpus", "count"),
    (TRAIN, "--tp", "count"), (TRAIN, "--pp", "count"), (TRAIN, "--dp", "count"), (TRAIN, "--ep", "count"),
    (TRAIN, "--seq", "count"), (TRAIN, "--global-batch", "count"), (TRAIN, "--micro-batch", "count"),
    (TRAIN + " --schedule interleaved", "--virtual-stages", "count"), (TRAIN, "--tokens", "pos"),
    (TRAIN, "--compute-efficiency", "frac"), (TRAIN, "--overlap-dp", "frac0"),
    (TRAIN, "--usd-per-gpu-hour", "price"),
    ("overtrain", "--params", "pos"), ("overtrain", "--traffic", "pos"), ("overtrain", "--lifetime-days", "pos"),
    ("overtrain", "--k-rl", "pos"), ("overtrain", "--eta-rl", "pos"), ("overtrain", "--eta-inf", "pos"),
    ("overtrain", "--target-loss", "pos"),
    ("prices infer", "--kv-bytes", "pos"), ("prices infer", "--remat-active-params", "pos"),
    ("prices infer", "--active-params", "pos"),
    ("tiers", "--kv-bytes", "pos"), ("tiers", "--remat-active-params", "pos"), ("tiers", "--hold", "pos"),
    ("tiers", "--usd-per-gpu-hour", "price"),
]
# values that break each kind of option: (value, exit code); typer refuses non-numbers (exit 2)
BAD = {
    "count": [("0", 1), ("-1", 1), ("abc", 2), ("2.5", 2)],
    "count0": [("-1", 1), ("abc", 2)],
    "pos": [("0", 1), ("-1", 1), ("nan", 1), ("inf", 1), ("abc", 2)],
    "nonneg": [("-1", 1), ("nan", 1), ("inf", 1), ("abc", 2)],
    "frac": [("0", 1), ("-0.5", 1), ("1.5", 1), ("nan", 1), ("abc", 2)],
    "frac0": [("-0.5", 1), ("1.5", 1), ("nan", 1), ("abc", 2)],
    "price": [("0", 1), ("-1", 1), ("nan", 1), ("inf", 1), ("1e308", 1), ("abc", 2)],
}
GENERATED = [(f"{cmd} {opt}={v}", code, opt) for cmd, opt, kind in OPTIONS for v, code in BAD[kind]]


def test_corpus_is_large_enough():
    assert len(CASES) + len(GENERATED) + len(PYTHON_CASES) >= 250


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "bin.bin").write_bytes(bytes(range(256)) * 8)
    (d / "bin.json").write_bytes(b"\x7fELF\x00\x01\x02" * 50)
    (d / "latin.json").write_bytes('{"model_type": "llama", "name": "caf\xe9"}'.encode("latin-1"))
    (d / "latin.yaml").write_bytes("models: [caf\xe9]\n".encode("latin-1"))
    (d / "latin.csv").write_bytes("arrival_s,prompt_tokens,output_tokens\n0,5,5\n0,caf\xe9,1\n".encode("latin-1"))
    (d / "long.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,200000,10\n")
    (d / "good.csv").write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,20,10\n")
    (d / "empty.csv").write_text("")
    (d / "folder").mkdir()
    (d / "fp8only.yaml").write_text(
        "accelerators:\n  - {id: fp8only, name: FP8-only chip, vendor: test, dense_tflops: {fp8: 1000}, hbm_gb: 80,\n"
        "     hbm_tb_per_s: 3, scale_up_gb_per_s: 450, scale_out_gb_per_s: 50, tdp_w: 700, usd_per_hour: 2,\n"
        "     price_source: test, price_date: '2026', source: test, date: '2026'}\n")
    return {"bin": d / "bin.bin", "bin_json": d / "bin.json", "latin_json": d / "latin.json",
            "latin_yaml": d / "latin.yaml", "latin_csv": d / "latin.csv", "long_csv": d / "long.csv",
            "good_csv": d / "good.csv", "fp8only": d / "fp8only.yaml", "empty": d / "empty.csv", "tmp": d / "folder",
            "missing": d / "missing.yaml", "missing_json": d / "missing.json", "nodir": d / "no" / "such",
            "out_xyz": d / "out" / "p.xyz", "out_txt": d / "out.txt", "out_csv": d / "o.csv",
            "out_parquet": d / "o.parquet", "out_png": d / "o.png"}


def _check(run_cli, files, line, code, needle):
    args = [a.format(**files) for a in shlex.split(line)]
    outputs = [v for k, v in files.items() if k.startswith("out")]
    got, out, err = run_cli(*args)
    assert got == code, f"{line}: exit {got}, expected {code}; stderr: {err}"
    assert err.count("\n") == 1 and err.startswith("error: "), f"{line}: not one line: {err!r}"
    assert "Traceback" not in err and "Error:" not in err.split("error: ", 1)[1][:40], err
    if needle:
        assert needle in err, f"{line}: {err!r} lacks {needle!r}"
    assert not any(p.exists() for p in outputs), f"{line}: left an output file"


@pytest.mark.parametrize("line,code,needle", CASES, ids=[c[0][:60] for c in CASES])
def test_bad_input_case(run_cli, files, line, code, needle):
    _check(run_cli, files, line, code, needle)


@pytest.mark.parametrize("line,code,needle", GENERATED, ids=[c[0][-50:] for c in GENERATED])
def test_bad_numeric_option(run_cli, files, line, code, needle):
    _check(run_cli, files, line, code, needle)


# --- the Python API: clear exception types, one-line messages ---------------------------------------------
PYTHON_CASES = [
    ("step('llama-3-70b', 'dgx-h100', '64', 4096)", "batch must be a number"),
    ("step('llama-3-70b', 'dgx-h100', True, 4096)", "batch must be a number"),
    ("step('llama-3-70b', 'dgx-h100', 2.5, 4096)", "batch must be a whole number"),
    ("step('llama-3-70b', 'dgx-h100', 0, 4096)", "batch must be a whole number >= 1"),
    ("step('llama-3-70b', 'dgx-h100', 1, -1)", "context must be a whole number >= 0"),
    ("step('llama-3-70b', 'dgx-h100', np.array(['1']), 0)", "numeric array"),
    ("step('llama-3-70b', 'dgx-h100', np.array([1.0, np.nan]), 0)", "finite everywhere"),
    ("step(42, 'dgx-h100', 1, 0)", "model must be a catalog model id"),
    ("step('llama-3-70b', None, 1, 0)", "system must be a system id"),
    ("step('llama-3-70x', 'dgx-h100', 1, 0)", "did you mean llama-3-70b"),
    ("step('llama-3-70b', 'dgx-h100', 1, 0, weights_dtype='fp3')", "weights_dtype must be one of"),
    ("step('llama-3-70b', 'dgx-h100', 1, 0, usd_per_gpu_hour=float('inf'))", "usd_per_gpu_hour must be > 0"),
    ("step('llama-3-70b', 'dgx-h100', 1, 0, gpus=0)", "gpus must be a whole number >= 1"),
    ("step('llama-3-70b', 'dgx-h100', 1, 9000)", "max_context"),
    ("R.StepRequest.of(model='llama-3-70b', system='dgx-h100', batch='64')", "batch must be a whole number"),
    ("R.StepRequest.of(model='llama-3-70b', system='dgx-h100', tp=0)", "tp must be a whole number >= 1"),
    ("R.StepRequest.of(model='llama-3-70b', system='dgx-h100', bogus=1)", "unknown input 'bogus'"),
    ("R.StepRequest.of(system='dgx-h100')", "model is required"),
    ("R.SweepRequest.of(model='llama-3-70b', system='dgx-h100', batch=[0, 1])", "batch values must be >= 1"),
    ("R.SweepRequest.of(model='llama-3-70b', system='dgx-h100', batch=[1.5])", "batch must be a whole number"),
    ("R.PlanRequest.of(model='llama-3-70b', system='dgx-h100', domains=[0])", "domains must be a whole number"),
    ("R.PlanRequest.of(model='llama-3-70b', system='dgx-h100', prompt=10**6)", "max_context"),
    ("R.SimulateRequest.of(model='llama-3-70b', system='dgx-h100', policy='fifo')", "disaggregated"),
    ("R.SimulateRequest.of(model='llama-3-70b', system='dgx-h100', rate=True)", "rate must be a number"),
    ("R.TrainRequest.of(model='llama-3-8b', system='dgx-h100', micro_batch=0)", "micro_batch must be a whole"),
    ("R.TrainRequest.of(model='llama-3-8b', system='h100-sxm')", "unknown system"),
    ("R.OvertrainRequest.of(params=float('nan'))", "params must be > 0"),
    ("R.PricesRequest.of(kv_bytes=-1)", "kv_bytes must be > 0"),
    ("R.TiersRequest.of(model='deepseek-v3', kv_bytes=2048)", "model sets the KV bytes"),
    ("R.TiersRequest.of(hold=[0])", "hold must be > 0"),
    ("R.CatalogRequest.of(section='gpus')", "section must be one of"),
    ("R.CatalogRequest.of(section='models', family='nvidia')", "family applies to the efficiency section"),
    ("R.run('nope', {})", "unknown operation 'nope'"),
]


@pytest.mark.parametrize("expr,needle", PYTHON_CASES, ids=[c[0][:60] for c in PYTHON_CASES])
def test_python_api_bad_input(expr, needle):
    import numpy as np

    import roofline as rl
    from roofline import requests as R

    with pytest.raises(rl.RooflineError) as info:
        eval(expr, {"np": np, "rl": rl, "R": R, "step": rl.step})
    msg = str(info.value)
    assert "\n" not in msg and needle in msg, msg


def test_usage_errors_are_a_distinct_type():
    from roofline.errors import InputError
    from roofline.requests import StepRequest, UsageError

    with pytest.raises(UsageError):
        StepRequest.of(model="llama-3-70b", system="dgx-h100", accelerator="h100-sxm")
    assert issubclass(UsageError, InputError)


def test_numpy_floating_point_errors_name_the_command(run_cli):
    # a rate so small that the arrival process divides by ~0: NumPy's warning becomes one error line
    code, _, err = run_cli(*shlex.split(f"simulate {M70} -n 5 --rate 1e-300"))
    assert code == 1 and err.count("\n") == 1
    assert "--rate 1e-300" in err and "Traceback" not in err


# --- Hypothesis: argument combinations never crash and never print inf/NaN ---------------------------------
hyp = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

NUMS = st.sampled_from(["0", "1", "2", "3", "8", "64", "-1", "1e9", "0.5", "nan", "inf", "1e308", "4096"])
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _finite_json(text):
    def bad(token):
        raise AssertionError(f"JSON holds {token}")

    obj = json.loads(text, parse_constant=bad)

    def walk(o):
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, float):
            assert math.isfinite(o)

    walk(obj)


def _fuzz(run_cli, base, options, draw_values):
    args = shlex.split(base)
    for opt, v in zip(options, draw_values):
        if v is not None:
            args += [f"{opt}={v}"]
    code, out, err = run_cli(*args, "--json")
    if code == 0:
        _finite_json(out)
    else:
        assert code in (1, 2), (args, code, err)
        assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, (args, err)


def _opts(n):
    return st.lists(st.one_of(st.none(), NUMS), min_size=n, max_size=n)


STEP_OPTS = ["--batch", "--context", "--tp", "--pp", "--dp", "--gpus", "--usd-per-gpu-hour", "--compute-efficiency"]


@SETTINGS
@given(values=_opts(len(STEP_OPTS)), model=st.sampled_from(["llama-3-70b", "deepseek-v3", "mixtral-8x7b"]),
       phase=st.sampled_from(["decode", "prefill"]))
def test_fuzz_step(run_cli, values, model, phase):
    _fuzz(run_cli, f"step -m {model} -s dgx-h100 --phase {phase}", STEP_OPTS, values)


PLAN_OPTS = ["--prompt", "--output", "--tpot-ms", "--moe-imbalance", "--usd-per-gpu-hour", "--domains"]


@SETTINGS
@given(values=_opts(len(PLAN_OPTS)), model=st.sampled_from(["llama-3-8b", "mixtral-8x7b"]))
def test_fuzz_plan(run_cli, values, model):
    _fuzz(run_cli, f"plan -m {model} -s dgx-h100", PLAN_OPTS, values)


SIM_OPTS = ["--max-seqs", "--prompt-tokens", "--output-tokens", "--rate", "--gpus", "--usd-per-gpu-hour",
            "--fast-fraction"]


@SETTINGS
@given(values=_opts(len(SIM_OPTS)), policy=st.sampled_from(["continuous", "chunked", "static", "disaggregated"]))
def test_fuzz_simulate(run_cli, values, policy):
    _fuzz(run_cli, f"simulate -m llama-3-8b -s dgx-h100 -n 10 --lengths fixed --policy {policy}", SIM_OPTS, values)


TRAIN_OPTS = ["--tp", "--pp", "--dp", "--ep", "--seq", "--global-batch", "--micro-batch", "--tokens"]


@SETTINGS
@given(values=_opts(len(TRAIN_OPTS)), model=st.sampled_from(["llama-3-8b", "mixtral-8x7b"]))
def test_fuzz_train(run_cli, values, model):
    _fuzz(run_cli, f"train -m {model} -s dgx-h100", TRAIN_OPTS, values)
