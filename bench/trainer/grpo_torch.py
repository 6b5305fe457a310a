"""The GRPO update of allot_grpo_bench, written in plain PyTorch (no transformers).

Reads the weights, adapter and batch that `allot_grpo_bench --write FILE` stored (safetensors,
read by the small reader below), runs the same Qwen2 decoder with LoRA on q/k/v/o, the same
clipped surrogate with truncated importance sampling and seq-mean-token-mean aggregation,
backward, gradient clipping at 1.0 and AdamW, and prints the same JSON fields as the C++ side.

This is the update as one writes it in PyTorch: full logits, log_softmax, gather.
"""
import argparse
import json
import math
import struct
import time

import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + b:base + e]), dtype=dtypes[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def status_mib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1]) / 1024.0
    return -1.0


class Qwen2Lora(torch.nn.Module):
    """Qwen2 decoder: RMSNorm, rotate-half RoPE, GQA, SwiGLU; LoRA on q/k/v/o, base frozen."""

    def __init__(self, w, layers, heads, kv_heads, head_dim, eps, theta, scaling):
        super().__init__()
        self.w = {k: v for k, v in w.items() if not k.startswith("batch.")}
        for v in self.w.values():
            v.requires_grad_(False)
        self.lora = []
        for k, v in self.w.items():
            if ".lora_" in k:
                v.requires_grad_(True)
                self.lora.append(v)
        self.layers, self.heads, self.kv_heads, self.head_dim = layers, heads, kv_heads, head_dim
        self.eps, self.scaling = eps, scaling
        self.inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)

    def rms(self, x, name):
        return self.w[name + ".weight"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def proj(self, x, name):
        y = F.linear(x, self.w[name + ".weight"], self.w.get(name + ".bias"))
        a = self.w.get(name + ".lora_A")
        if a is not None:
            y = y + F.linear(F.linear(x, a), self.w[name + ".lora_B"]) * self.scaling
        return y

    def hidden(self, ids, mask):
        b, t = ids.shape
        pos = (mask.cumsum(-1) - 1).clamp_min(0)
        freqs = pos.float().unsqueeze(-1) * self.inv_freq
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        allowed = causal.view(1, 1, t, t) & mask.bool().view(b, 1, 1, t)

        def rot(x):
            h = x.shape[-1] // 2
            return torch.cat([-x[..., h:], x[..., :h]], -1)

        h = F.embedding(ids, self.w["model.embed_tokens.weight"])
        for l in range(self.layers):
            p = f"model.layers.{l}."
            x = self.rms(h, p + "input_layernorm")
            q = self.proj(x, p + "self_attn.q_proj").view(b, t, self.heads, self.head_dim).transpose(1, 2)
            k = self.proj(x, p + "self_attn.k_proj").view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.proj(x, p + "self_attn.v_proj").view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
            q = q * cos + rot(q) * sin
            k = k * cos + rot(k) * sin
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            s = (q @ k.transpose(2, 3)) / math.sqrt(self.head_dim)
            s = s.masked_fill(~allowed, torch.finfo(torch.float32).min)
            o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, t, -1)
            h = h + self.proj(o, p + "self_attn.o_proj")
            x = self.rms(h, p + "post_attention_layernorm")
            g = F.silu(self.proj(x, p + "mlp.gate_proj")) * self.proj(x, p + "mlp.up_proj")
            h = h + self.proj(g, p + "mlp.down_proj")
        return self.rms(h, "model.norm")

    def token_logprobs(self, ids, mask):
        h = self.hidden(ids, mask)[:, :-1]
        logits = h @ self.w["model.embed_tokens.weight"].t()
        return torch.log_softmax(logits, -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def grpo_loss(logp, old, rollout, adv, mask, clip=0.2, cap=2.0):
    """Clipped surrogate (CogER Eq. 10) with TIS weights, seq-mean-token-mean aggregation."""
    ratio = torch.exp((logp - old) * mask)
    per_token = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
    is_w = torch.exp(old - rollout).clamp_max(cap) * mask + (1 - mask)
    per_token = per_token * is_w
    per_seq = (per_token * mask).sum(1) / mask.sum(1).clamp_min(1.0)
    return per_seq.sum() / max(float((mask.sum(1) > 0).sum()), 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--read", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    w = read_safetensors(args.read)
    ids = w["batch.input_ids"].long()
    amask = w["batch.attention_mask"].long()
    lmask, adv, rollout = w["batch.loss_mask"], w["batch.advantages"], w["batch.rollout_logp"]
    # Same shape as allot_grpo_bench's TinyQwen2(): read from the tensors.
    layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("model.layers."))
    head_dim = 64
    heads = w["model.layers.0.self_attn.q_proj.weight"].shape[0] // head_dim
    kv_heads = w["model.layers.0.self_attn.k_proj.weight"].shape[0] // head_dim
    r = w["model.layers.0.self_attn.q_proj.lora_A"].shape[0]
    model = Qwen2Lora(w, layers, heads, kv_heads, head_dim, 1e-6, 1e6, 32.0 / r)
    opt = torch.optim.AdamW(model.lora, lr=1e-5, weight_decay=0.01)

    rss_base = status_mib("VmRSS")
    wall, cpu, first = [], [], None
    tokens = float(amask.sum())
    for run in range(args.runs + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad()
        logp = model.token_logprobs(ids, amask)
        loss = grpo_loss(logp, logp.detach(), rollout, adv, lmask)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.lora, 1.0)
        opt.step()
        c1, w1 = time.process_time(), time.perf_counter()
        if run == 0:
            ent = float(-(logp.detach() * lmask).sum() / lmask.sum())
            first = (float(loss), float(gn), ent)
        else:
            wall.append(w1 - w0)
            cpu.append(c1 - c0)
    med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else 0.5 * sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1])
    print(json.dumps({
        "side": "pytorch", "torch_version": torch.__version__, "threads": args.threads,
        "runs": args.runs, "tokens": tokens, "loss": first[0], "grad_norm": first[1],
        "entropy": first[2], "wall_s": med(wall), "cpu_s": med(cpu),
        "tokens_per_s": tokens / med(wall), "tokens_per_cpu_s": tokens / med(cpu),
        "rss_base_mib": rss_base, "rss_peak_mib": status_mib("VmHWM")}))


if __name__ == "__main__":
    main()
