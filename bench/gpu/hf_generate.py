"""transformers' side of the `allot serve` decode benchmark on a GPU (bench/gpu/serve_bench_gpu.sh).

  python3 bench/gpu/hf_generate.py --write DIR     a random Qwen2-0.5B-shaped model, bf16, in
                                                   Hugging Face format (config.json +
                                                   model.safetensors), for allot to load too
                                                   (--shape qwen3-0.6b or qwen3-4b: those shapes)
  python3 bench/gpu/hf_generate.py --bench DIR     times model.generate on DIR at batch 1, 32, 256

The timed call is what a transformers user runs: generate() in eager mode with sdpa attention
and the default dynamic KV cache, greedy, exactly --new-tokens new tokens per row (EOS cannot
end a row early: min_new_tokens, and the random model has no EOS id), prompts of --prompt-len
random ids (no padding). Each batch size is warmed up with an 8-token generate first; the
timing brackets one generate with torch.cuda.synchronize(). tokens/s = batch * new_tokens /
seconds.

Output: one JSON object per line (flushed) and a table at the end. Each stage is in its own
try/except, so one failure is reported and the rest still run (the GPU run cannot be repeated).
"""
import argparse
import json
import sys
import time
import traceback

QWEN2_05B = dict(
    hidden_size=896,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    intermediate_size=4864,
    vocab_size=151936,
    tie_word_embeddings=True,
    max_position_embeddings=32768,
    rope_theta=1e6,
)

# Qwen3's published shapes (the 0.6B and 4B configs: tied embeddings, head_dim 128, q/k norms).
QWEN3_06B = dict(
    hidden_size=1024,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    intermediate_size=3072,
    vocab_size=151936,
    tie_word_embeddings=True,
    max_position_embeddings=40960,
    rope_theta=1e6,
)
QWEN3_4B = dict(QWEN3_06B, hidden_size=2560, num_hidden_layers=36, num_attention_heads=32,
                intermediate_size=9728)
SHAPES = {"qwen2-0.5b": QWEN2_05B, "qwen3-0.6b": QWEN3_06B, "qwen3-4b": QWEN3_4B}


def emit(obj):
    print(json.dumps(obj), flush=True)


def fail(stage, err):
    emit({"bench": "hf_generate", "stage": stage, "error": f"{type(err).__name__}: {err}"})
    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()


def write_model(out_dir, seed, shape="qwen2-0.5b"):
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen3Config

    start = time.time()
    config_class = Qwen3Config if shape.startswith("qwen3") else Qwen2Config
    params = SHAPES[shape]
    try:
        cfg = config_class(**params)
    except Exception as e:  # noqa: BLE001 - a config class without the legacy rope_theta
        fail("write:config", e)
        kwargs = {k: v for k, v in params.items() if k != "rope_theta"}
        cfg = config_class(**kwargs, rope_parameters={"rope_type": "default",
                                                      "rope_theta": params["rope_theta"]})
    # transformers 5 keeps rope_theta in rope_parameters; make sure the value got there.
    rope = getattr(cfg, "rope_parameters", None)
    if isinstance(rope, dict) and "rope_type" in rope:
        rope["rope_theta"] = params["rope_theta"]
    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        # Initialising 0.5B parameters is much faster on the GPU than on the CPU.
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg)
    except Exception as e:  # noqa: BLE001 - any failure: fall back to the CPU
        fail("write:init_on_" + device, e)
        model = AutoModelForCausalLM.from_config(cfg)
    model = model.to(dtype=torch.bfloat16)
    model.save_pretrained(out_dir, safe_serialization=True)
    with open(f"{out_dir}/config.json") as f:
        written = json.load(f)
    emit({
        "bench": "hf_generate",
        "stage": "write",
        "dir": out_dir,
        "shape": shape,
        "seconds": round(time.time() - start, 2),
        "parameters": sum(p.numel() for p in model.parameters()),
        # What allot's config reader has to understand (models/hf_config.cc).
        "config_dtype": written.get("dtype", written.get("torch_dtype")),
        "config_rope": written.get("rope_parameters", written.get("rope_theta")),
        "config_eos": written.get("eos_token_id"),
    })


def bench(model_dir, batches, prompt_len, new_tokens, seed, device):
    import torch
    from transformers import AutoModelForCausalLM

    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise RuntimeError("CUDA is not available")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    start = time.time()
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.bfloat16, attn_implementation="sdpa").to(device).eval()
    vocab = model.config.vocab_size
    emit({"bench": "hf_generate", "stage": "load", "seconds": round(time.time() - start, 2),
          "torch": torch.__version__,
          "device": torch.cuda.get_device_name(0) if cuda else device})
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for batch in batches:
        try:
            ids = torch.randint(0, vocab, (batch, prompt_len), generator=gen).to(device)
            mask = torch.ones_like(ids)

            def run(n):
                return model.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                      max_new_tokens=n, min_new_tokens=n, pad_token_id=0,
                                      use_cache=True)

            with torch.inference_mode():
                run(8)
                sync()
                t0 = time.perf_counter()
                out = run(new_tokens)
                sync()
                seconds = time.perf_counter() - t0
            generated = out.shape[1] - prompt_len
            row = {"bench": "hf_generate", "stage": "generate", "batch": batch,
                   "prompt_len": prompt_len, "new_tokens": generated, "seconds": seconds,
                   "tokens_per_s": batch * generated / seconds,
                   "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}
            if generated != new_tokens:
                row["warning"] = f"generated {generated} tokens per row, asked {new_tokens}"
            emit(row)
            rows.append(row)
        except Exception as e:  # noqa: BLE001 - report and go on to the next batch size
            fail(f"generate:batch={batch}", e)
        if cuda:
            torch.cuda.empty_cache()
    print(f"{'batch':>6} {'seconds':>9} {'tok/s':>10}", flush=True)
    for r in rows:
        print(f"{r['batch']:>6} {r['seconds']:>9.2f} {r['tokens_per_s']:>10.0f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", metavar="DIR", help="write a random model (--shape) to DIR")
    p.add_argument("--shape", default="qwen2-0.5b", choices=sorted(SHAPES))
    p.add_argument("--bench", metavar="DIR", help="time model.generate on the model in DIR")
    p.add_argument("--batches", default="1,32,256")
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of the script")
    a = p.parse_args()
    if not a.write and not a.bench:
        p.error("give --write DIR and/or --bench DIR")
    ok = True
    if a.write:
        try:
            write_model(a.write, a.seed, a.shape)
        except Exception as e:  # noqa: BLE001
            fail("write", e)
            ok = False
    if a.bench:
        try:
            bench(a.bench, [int(b) for b in a.batches.split(",")], a.prompt_len, a.new_tokens,
                  a.seed, a.device)
        except Exception as e:  # noqa: BLE001
            fail("bench", e)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
