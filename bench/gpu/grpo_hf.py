"""transformers + PEFT side of the GRPO update benchmark on a GPU (bench/gpu/grpo_bench_gpu.sh).

  python3 bench/gpu/grpo_hf.py --read FILE [--runs 3] [--device cuda] [--peak-tflops 989.4]
                               [--profile TRACE.json]

FILE is what `allot_grpo_bench --write-batch` stored (the batch, and the model's shape, LoRA
targets, dtype and gradient-checkpointing setting in the safetensors metadata) or what `--write`
stored (the same plus allot's weights and adapter: the agreement check, run in float32).

The update is the one TRL's GRPOTrainer runs, written out with transformers and PEFT:
  * Qwen2ForCausalLM (Qwen3ForCausalLM when the file's model_type is qwen3) from a config of
    the file's shape, sdpa attention, in the file's
    dtype; random weights (transformers' own N(0, 0.02) init) or the file's;
  * PEFT LoRA r 16, alpha 32, no dropout on the file's targets (lora_B drawn N(0, 0.02) as
    allot's, so the adapter is not a no-op); gradient checkpointing (non-reentrant, with
    enable_input_require_grads as TRL does for PEFT) when allot's run had it;
  * one padded [B, T] forward with the attention mask (position ids counted from it as allot
    counts them; RoPE is relative, so this changes rounding only), logits of the last K + 1
    positions only (logits_to_keep, K = columns from the first trainable one), the selective
    log-softmax in float32 one row at a time (TRL's selective_log_softmax);
  * grpo_loss of bench/trainer/grpo_torch.py (allot's clipped surrogate, truncated IS with cap 2,
    seq-mean-token-mean), backward, clip_grad_norm_(1.0), torch.optim.AdamW (lr 1e-5, weight
    decay 0.01) over the LoRA parameters.
Timing as allot_grpo_bench's: one warm-up update (its loss, grad norm and entropy are the
agreement figures), then --runs updates, each bracketed by torch.cuda.synchronize(); the median
wall time. tokens = real (non-pad) tokens. Peak memory: torch.cuda.max_memory_allocated() from
just before the warm-up. MFU: the FLOPs convention of allot_grpo_bench's file comment, counted
from the same shape and the same sequence lengths, so both sides count the same FLOPs.

Output: one JSON object per line (flushed) and a short line for people. Each stage is in its own
try/except: a failure (out of memory, an API that changed) is printed as {"error": ...} and the
exit status is non-zero; the GPU run cannot be repeated.
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time
import traceback
from contextlib import nullcontext

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))
from grpo_torch import grpo_loss, read_safetensors  # noqa: E402


def emit(obj):
    print(json.dumps(obj), flush=True)


def fail(stage, err):
    emit({"side": "hf", "stage": stage, "error": f"{type(err).__name__}: {err}"})
    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()


def read_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


def matmul_params(meta):
    """Weights of the matmuls a token goes through: q/k/v/o, gate/up/down, the output matrix."""
    h, i, v = int(meta["hidden_size"]), int(meta["intermediate_size"]), int(meta["vocab_size"])
    heads, kv, hd = (int(meta[k])
                     for k in ("num_attention_heads", "num_key_value_heads", "head_dim"))
    per_layer = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * i
    return int(meta["num_hidden_layers"]) * per_layer + v * h


def model_flops(meta, lengths, n_lora):
    """(6 N L + 12 A L^2, 4 N L + 6 N_lora L + 12 A L^2) summed over sequences of L tokens."""
    n = matmul_params(meta)
    a = 12 * int(meta["num_hidden_layers"]) * int(meta["num_attention_heads"])
    a *= int(meta["head_dim"])
    std = sum(6.0 * n * l + a * l * l for l in lengths)
    lora = sum((4.0 * n + 6.0 * n_lora) * l + a * l * l for l in lengths)
    return n, std, lora


def build_model(meta, weights, device, dtype):
    from peft import LoraConfig, get_peft_model
    import transformers
    from transformers import AutoModelForCausalLM

    qwen3 = meta.get("model_type") == "qwen3"
    config_class = transformers.Qwen3Config if qwen3 else transformers.Qwen2Config
    cfg = config_class(
        vocab_size=int(meta["vocab_size"]),
        hidden_size=int(meta["hidden_size"]),
        intermediate_size=int(meta["intermediate_size"]),
        num_hidden_layers=int(meta["num_hidden_layers"]),
        num_attention_heads=int(meta["num_attention_heads"]),
        num_key_value_heads=int(meta["num_key_value_heads"]),
        rms_norm_eps=float(meta["rms_norm_eps"]),
        rope_theta=float(meta["rope_theta"]),
        tie_word_embeddings=meta["tie_word_embeddings"] == "1",
        max_position_embeddings=32768,
        attention_dropout=0.0,
        use_cache=False,
    )
    # transformers 5 keeps rope_theta in rope_parameters ({"rope_type": ..., "rope_theta": ...});
    # make sure the value got there whichever way this version reads the keyword.
    rope = getattr(cfg, "rope_parameters", None)
    if isinstance(rope, dict) and "rope_type" in rope:
        rope["rope_theta"] = float(meta["rope_theta"])
    # Always: Qwen3Config's default head_dim is 128, not hidden_size / num_attention_heads.
    cfg.head_dim = int(meta["head_dim"])
    torch.manual_seed(int(meta.get("seed", "7")))
    # Initialising on the GPU: the CPU would take longer than the updates themselves (a device
    # is a context manager from torch 2 on; older torch initialises on the CPU).
    on_device = torch.device(device) if hasattr(torch.device, "__enter__") else nullcontext()
    with on_device:
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    model = model.to(device=device, dtype=dtype)
    if weights is not None:
        base = {k: v for k, v in weights.items()
                if not k.startswith("batch.") and ".lora_" not in k}
        missing, unexpected = model.load_state_dict(base, strict=False)
        # Parameters only: the tied lm_head and buffers a transformers version may add are fine.
        names = dict(model.named_parameters())
        missing = [k for k in missing if k != "lm_head.weight" and k in names]
        if missing or unexpected:
            raise RuntimeError(f"allot's weights do not fit: missing {missing[:4]}, "
                               f"unexpected {unexpected[:4]}")
    if meta.get("grad_checkpointing") == "1":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    targets = meta["lora_targets"].split(",")
    lora = LoraConfig(r=int(meta["lora_r"]), lora_alpha=int(meta["lora_alpha"]), lora_dropout=0.0,
                      target_modules=targets, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    params = dict(model.named_parameters())
    with torch.no_grad():
        if weights is not None:
            # allot "model.layers.0.self_attn.q_proj.lora_A" -> PEFT's name for the same tensor.
            copied = 0
            for k, v in weights.items():
                if ".lora_" in k:
                    params[f"base_model.model.{k}.default.weight"].copy_(v)
                    copied += 1
            if copied == 0:
                raise RuntimeError("the file holds weights but no adapter")
        else:
            for k, p in params.items():
                if "lora_B" in k:
                    p.normal_(0.0, 0.02)
    model.train()
    return model


def token_logps(model, ids, amask, pos, keep):
    """log p of ids[:, -keep:], TRL style: logits of the last keep + 1 positions only."""
    logits = model(input_ids=ids, attention_mask=amask, position_ids=pos, logits_to_keep=keep + 1,
                   use_cache=False).logits[:, :-1]
    rows = []
    for lg, ix in zip(logits, ids[:, -keep:]):
        lg = lg.float()
        rows.append(lg.gather(-1, ix.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(lg, -1))
    return torch.stack(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--read", required=True, help="allot_grpo_bench --write or --write-batch file")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--peak-tflops", type=float, default=989.4)
    ap.add_argument("--profile", help="write a Chrome trace of one more update here")
    args = ap.parse_args()
    out = {"side": "hf", "torch_version": torch.__version__}
    try:
        import peft
        import transformers

        out.update(transformers_version=transformers.__version__, peft_version=peft.__version__)
        meta = read_metadata(args.read)
        tensors = read_safetensors(args.read)
        dev = torch.device(args.device)
        dtype = torch.bfloat16 if meta.get("dtype") == "bfloat16" else torch.float32
        weights = tensors if "model.embed_tokens.weight" in tensors else None
        ids = tensors["batch.input_ids"].long().to(dev)
        amask = tensors["batch.attention_mask"].long().to(dev)
        lmask, adv, rollout = (tensors[k].to(dev) for k in
                               ("batch.loss_mask", "batch.advantages", "batch.rollout_logp"))
        out.update(model=meta.get("model"), device=args.device, dtype=str(dtype).split(".")[-1],
                   lora_targets=meta.get("lora_targets"),
                   grad_checkpointing=int(meta.get("grad_checkpointing", "0")), runs=args.runs,
                   batch=ids.shape[0], padded_len=ids.shape[1], padded_slots=ids.numel(),
                   tokens=float(amask.sum()), trainable_tokens=int(lmask.sum()))
    except Exception as e:  # noqa: BLE001 - report and stop: nothing to time without the batch
        fail("read", e)
        return 1
    try:
        model = build_model(meta, weights, dev, dtype)
        lora_params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(lora_params, lr=1e-5, weight_decay=0.01)
    except Exception as e:  # noqa: BLE001
        fail("model", e)
        return 1

    # Columns from the first trainable one: every completion token of every row.
    first_col = int(lmask.sum(0).nonzero().min())
    keep = lmask.shape[1] - first_col
    pos = (amask.cumsum(-1) - 1).clamp_min(0)
    lm, ad, ro = lmask[:, -keep:], adv[:, -keep:], rollout[:, -keep:]
    n_lora = sum(p.numel() for p in lora_params)
    n, flops, flops_lora = model_flops(meta, amask.sum(1).tolist(), n_lora)
    out.update(logits_to_keep=keep + 1, matmul_params=n, lora_params=n_lora,
               flops_convention="per sequence of L tokens: 6NL + 12AL^2; "
                                "lora: 4NL + 6 N_lora L + 12AL^2", model_flops=flops,
               model_flops_lora=flops_lora, peak_tflops=args.peak_tflops)
    cuda = dev.type == "cuda"
    if cuda:
        out.update(gpu=torch.cuda.get_device_name(dev))
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    try:
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        def update():
            opt.zero_grad(set_to_none=True)
            logp = token_logps(model, ids, amask, pos, keep)
            loss = grpo_loss(logp, logp.detach(), ro, ad, lm)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(lora_params, 1.0)
            opt.step()
            return logp, loss, gn

        wall = []
        for run in range(args.runs + 1):  # run 0: the warm-up and the agreement figures
            sync()
            t0 = time.perf_counter()
            logp, loss, gn = update()
            sync()
            if run == 0:
                out.update(loss=float(loss), grad_norm=float(gn),
                           entropy=float(-(logp.detach() * lm).sum() / lm.sum()))
            else:
                wall.append(time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - out of memory above all: report with the peak so far
        if cuda:
            out.update(gpu_peak_bytes=torch.cuda.max_memory_allocated(dev))
        out.update(error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        emit(out)
        traceback.print_exc(file=sys.stderr)
        return 1
    if args.profile:
        try:  # one more update under torch.profiler, after the timed ones
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            with profile(activities=activities) as prof:
                update()
                sync()
            prof.export_chrome_trace(args.profile)
        except Exception:  # noqa: BLE001 - the timings stand without the trace
            print("# hf: no profile:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
    med = statistics.median(wall)
    peak_bytes = torch.cuda.max_memory_allocated(dev) if cuda else -1
    peak = args.peak_tflops * 1e12
    out.update(wall_s=med, wall_s_runs=wall, tokens_per_s=out["tokens"] / med,
               mfu=flops / med / peak, mfu_lora=flops_lora / med / peak,
               gpu_peak_bytes=peak_bytes, gpu_peak_gib=peak_bytes / 2**30)
    emit(out)
    print(f"# hf {out['model']}: {out['tokens_per_s']:.0f} tok/s, MFU {100 * out['mfu']:.1f}% "
          f"(LoRA count {100 * out['mfu_lora']:.1f}%), peak {out['gpu_peak_gib']:.2f} GiB",
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
