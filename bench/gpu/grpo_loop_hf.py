"""The whole GRPO loop in Python, as TRL's GRPOTrainer runs it without vLLM: transformers'
generate samples each group from the PEFT model being trained, a rule reward scores the
completions, and one update with the same loss follows (bench/gpu/grpo_loop_gpu.sh runs it
next to allot_grpo_loop_bench on the same model and GPU).

  python3 bench/gpu/grpo_loop_hf.py --model-dir DIR [--device cuda] [--steps 3] [--warmup 1]
      [--prompts-per-step 4] [--group 8] [--prompt-len 256] [--max-tokens 1024]
      [--micro-batch 8] [--grad-checkpointing 0|1] [--lora-r 16] [--seed 1]
      [--warmup-max-tokens N]      (the warm-up steps' budget; default --max-tokens)

Per step, as allot_grpo_loop_bench's learner and the tag env (tests/trainer/tag_env.cc) do it:
  * the same prompts (the same bytes: the tag env's byte tokenizer gives id = byte), group_size
    completions each, sampled at temperature 1 from the whole distribution (top_k 0, top_p 1),
    at most --max-tokens new tokens, in bfloat16 with sdpa attention and the KV cache;
  * reward = the share of completion tokens that are bytes of "<question_level>/L1234" (the tag
    env's tag_alphabet), advantages normalised within each group ((r - mean) / (std + 1e-6));
  * the update of bench/gpu/grpo_hf.py: PEFT LoRA r 16 / alpha 32 / no dropout on q/k/v/o and
    gate/up/down, logits of the completion positions only (logits_to_keep), float32
    log-softmax, the clipped surrogate of bench/trainer/grpo_torch.py with seq-mean-token-mean
    aggregation, --micro-batch rows per forward/backward (gradients accumulated),
    clip_grad_norm_(1.0), AdamW (lr 1e-5). Without vLLM TRL has no separate rollout log-probs:
    the old and rollout log-probs are the current ones, detached (one forward and one backward,
    as allot's update does);
  * no publish: the policy samples from the same module it trains.
The first --warmup steps are not timed. Output: one JSON object on stdout with per-step wall
times (generate, update) and the medians over the timed steps of episodes/s, generated
tokens/s (over the whole step), update tokens/s (completion tokens over the update's time, as
allot counts trained tokens) and the peak GPU memory PyTorch allocated.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))
from grpo_torch import grpo_loss  # noqa: E402

ALPHABET = set(b"<question_level>/L1234")
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def prompt_bytes(k, prompt_len):
    """allot_grpo_loop_bench's Prompt(k, prompt_len), byte for byte."""
    tail = b"<question_level>L"
    text = (f"Query {k}: decide which solver answers this at the lowest cost, then say so. "
            ).encode()
    while len(text) + len(tail) < prompt_len:
        text += text
    return text[:prompt_len - len(tail)] + tail


def summary(out, per_step, warmup, dev):
    """Prints OUT with the steps so far and the medians over the timed ones (one line)."""
    out["per_step"] = per_step
    timed = per_step[warmup:]
    if timed:
        med = lambda f: statistics.median(f(s) for s in timed)  # noqa: E731
        out["median"] = {
            "step_s": med(lambda s: s["step_s"]),
            "episodes_per_s": med(lambda s: s["episodes"] / s["step_s"]),
            "generated_tokens_per_s": med(lambda s: s["generated_tokens"] / s["step_s"]),
            "update_tokens_per_s": med(lambda s: s["trained_tokens"] / s["update_s"]),
            "share/generate_s": med(lambda s: s["generate_s"] / s["step_s"]),
            "share/update_s": med(lambda s: s["update_s"] / s["step_s"]),
        }
    if dev.type == "cuda":
        out["gpu_peak_gib"] = torch.cuda.max_memory_allocated(dev) / 2**30
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--warmup-max-tokens", type=int, default=0)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--grad-checkpointing", type=int, default=0)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    out = {"bench": "grpo_loop", "side": "hf", "model_dir": a.model_dir, "steps": a.steps,
           "warmup": a.warmup, "prompts_per_step": a.prompts_per_step, "group": a.group,
           "prompt_len": a.prompt_len, "max_tokens": a.max_tokens,
           "warmup_max_tokens": a.warmup_max_tokens, "micro_batch": a.micro_batch,
           "lora_r": a.lora_r, "grad_checkpointing": a.grad_checkpointing,
           "torch_version": torch.__version__}
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    try:
        import peft
        import transformers
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM

        out.update(transformers_version=transformers.__version__, peft_version=peft.__version__)
        torch.manual_seed(a.seed)
        model = AutoModelForCausalLM.from_pretrained(
            a.model_dir, dtype=torch.bfloat16 if cuda else torch.float32,
            attn_implementation="sdpa").to(dev)
        if a.grad_checkpointing:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
        model = get_peft_model(model, LoraConfig(
            r=a.lora_r, lora_alpha=2 * a.lora_r, lora_dropout=0.0, target_modules=TARGETS,
            bias="none", task_type="CAUSAL_LM"))
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.01)
        eos = model.config.eos_token_id
        eos = eos[0] if isinstance(eos, list) else eos
        if cuda:
            out.update(gpu=torch.cuda.get_device_name(dev))
            torch.cuda.reset_peak_memory_stats(dev)
    except Exception as e:  # noqa: BLE001 - nothing to time without the model
        out.update(error=f"model: {type(e).__name__}: {e}")
        print(json.dumps(out), flush=True)
        traceback.print_exc(file=sys.stderr)
        return 1

    prompts = torch.tensor([list(prompt_bytes(k, a.prompt_len))
                            for k in range(a.prompts_per_step)], dtype=torch.long)
    ids_in = prompts.repeat_interleave(a.group, dim=0).to(dev)
    rows = ids_in.shape[0]
    per_step = []
    try:
        for step in range(a.steps):
            budget = (a.warmup_max_tokens if step < a.warmup and a.warmup_max_tokens > 0
                      else a.max_tokens)
            sync()
            t0 = time.perf_counter()
            model.eval()
            with torch.no_grad():
                seqs = model.generate(input_ids=ids_in, attention_mask=torch.ones_like(ids_in),
                                      do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                      max_new_tokens=budget, eos_token_id=eos,
                                      pad_token_id=eos if eos is not None else 0, use_cache=True)
            sync()
            t_gen = time.perf_counter()
            completion = seqs[:, a.prompt_len:]
            # Tokens after a row's first EOS are padding; the EOS itself is trained.
            if eos is not None:
                is_eos = (completion == eos).int()
                after = (is_eos.cumsum(1) - is_eos) > 0
                mask = (~after).float()
            else:
                mask = torch.ones_like(completion, dtype=torch.float)
            hits = torch.zeros_like(mask)
            for b in ALPHABET:
                hits += (completion == b).float()
            reward = (hits * mask).sum(1) / mask.sum(1).clamp_min(1.0)
            grouped = reward.view(a.prompts_per_step, a.group)
            adv = ((grouped - grouped.mean(1, keepdim=True)) /
                   (grouped.std(1, keepdim=True) + 1e-6)).view(-1)

            model.train()
            opt.zero_grad(set_to_none=True)
            keep = completion.shape[1]
            micro = max(1, min(a.micro_batch, rows))
            n_micro = (rows + micro - 1) // micro
            for r in range(0, rows, micro):
                ids = seqs[r:r + micro]
                amask = torch.ones_like(ids)
                amask[:, a.prompt_len:] = mask[r:r + micro].long()
                logits = model(input_ids=ids, attention_mask=amask, logits_to_keep=keep + 1,
                               use_cache=False).logits[:, :-1]
                logp = torch.stack([
                    lg.float().gather(-1, ix.unsqueeze(-1)).squeeze(-1) -
                    torch.logsumexp(lg.float(), -1)
                    for lg, ix in zip(logits, ids[:, -keep:])])
                lm = mask[r:r + micro]
                ad = adv[r:r + micro].unsqueeze(1).expand_as(lm)
                loss = grpo_loss(logp, logp.detach(), logp.detach(), ad, lm) / n_micro
                loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sync()
            t_end = time.perf_counter()
            generated = float(mask.sum())
            per_step.append({"step": step + 1, "step_s": t_end - t0, "generate_s": t_gen - t0,
                             "update_s": t_end - t_gen, "episodes": rows,
                             "generated_tokens": generated, "trained_tokens": generated,
                             "reward": float(reward.mean())})
            # The whole object after every step: a run cut short keeps the steps it finished.
            summary(out, per_step, a.warmup, dev)
    except Exception as e:  # noqa: BLE001 - out of memory above all: report what ran
        out.update(error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        traceback.print_exc(file=sys.stderr)
    summary(out, per_step, a.warmup, dev)
    return 0 if len(per_step) > a.warmup and "error" not in out else 1


if __name__ == "__main__":
    sys.exit(main())
