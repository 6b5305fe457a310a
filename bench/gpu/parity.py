#!/usr/bin/env python3
"""allot against the reference implementations.

    parity.py [--device cuda|cpu] [--attn sdpa|eager] [--onnx NAVDIR] DIR...

Each DIR is what `allot_parity_dump --family F --out DIR` wrote: a random Qwen2, Qwen3 or Llama
checkpoint (config.json + model.safetensors, written by allot), a LoRA adapter trained and
exported by allot (DIR/adapter, PEFT format) and allot's token log-probs of a batch
(DIR/allot_logprobs.safetensors). transformers loads the checkpoint in float32 and bfloat16,
PEFT loads the adapter on top, and the log-probs of the same ids (log_softmax of the float32
logits[:, :-1], gathered at ids[:, 1:]) are compared with allot's.

A bfloat16 comparison means little on its own: rounding alone moves log-probs by 1e-2 here. So
every bfloat16 figure comes with (a) each side against the float32 reference and (b) the noise
floor, transformers' sdpa attention against its own eager attention, both in bfloat16. The
criteria are applied to the transformers attention named by --attn; the other one is reported
beside it. Use the one that computes what allot computes: sdpa (the default) for a LibTorch 2
build, whose unpadded batches go through the same fused kernel; eager for a LibTorch 1.13
build, whose attention is the eager formula (scores in the weight dtype, softmax in float32).

Criteria (the process exits 1 when one fails or when any stage could not run):
  - float32, base and LoRA: max |allot - transformers| < 1e-4 (float32 rounding is ~1e-6);
  - bfloat16 with the LoRA adapter: max |allot - transformers+PEFT| < 1e-3;
  - PEFT read adapter_config.json as allot meant it (r, alpha, dropout, scaling) and loaded
    every tensor of adapter_model.safetensors unchanged;
  - --onnx NAVDIR (bench/gpu/navigator_onnx_case.sh): onnxruntime runs DIR/navigator.onnx on
    the stored states, and its Q-values match allot's (LibTorch and the plain C++ navigator)
    within 1e-5 on the CPU provider (1e-4 on CUDA) with the same greedy action wherever the
    reference's top two Q-values are further apart than that.
bfloat16 without the adapter is reported, not judged (the figure is wanted, not a bound).

Output: one JSON object per line, then a table; all flushed as it goes.
"""

import argparse
import json
import math
import os
import struct
import sys
import time
import traceback

# The GPU machine has no network: never ask the Hugging Face Hub for anything.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

FP32_TOL = 1e-4
LORA_BF16_TOL = 1e-3  # bf16 parity criterion
NAV_TOL = {"CPUExecutionProvider": 1e-5, "CUDAExecutionProvider": 1e-4}


def emit(obj):
    print(json.dumps(obj, default=str), flush=True)


class Report:
    """Rows for the table, and everything that makes the run fail."""

    def __init__(self):
        self.rows = []
        self.failures = []
        self.errors = []

    def error(self, stage, exc):
        msg = f"{type(exc).__name__}: {exc}"
        self.errors.append(f"{stage}: {msg}")
        emit({"stage": stage, "error": msg})
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()

    def compare(self, case, kind, dtype, what, a, b, tol=None):
        d = (a.float() - b.float()).abs()
        row = {"case": case, "kind": kind, "dtype": dtype, "compare": what,
               "max_abs": d.max().item(), "mean_abs": d.mean().item(), "tol": tol}
        if tol is not None:
            row["pass"] = bool(row["max_abs"] < tol)
            if not row["pass"]:
                self.failures.append(f"{case} {kind} {dtype} {what}: max abs diff "
                                     f"{row['max_abs']:.3g} >= {tol:g}")
        self.rows.append(row)
        emit(row)
        return row

    def check(self, case, what, ok, detail):
        emit({"case": case, "check": what, "pass": bool(ok), "detail": detail})
        if not ok:
            self.failures.append(f"{case} {what}: {detail}")


def read_safetensors(path):
    """The tensors of a safetensors file, on the CPU (no dependency on the safetensors package)."""
    import torch
    dtypes = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
              "I64": torch.int64}
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        t = torch.frombuffer(raw, dtype=dtypes[info["dtype"]]) if raw else \
            torch.empty(0, dtype=dtypes[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def token_logprobs(model, ids):
    """log p(ids[:, t+1] | ids[:, :t+1]) in float32, [B, T-1], on the CPU."""
    import torch
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).cpu()


def load_transformers(model_dir, dtype, attn, device):
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn)
    return model.to(device).eval()


def describe_transformers(case, model, model_dir, rep):
    """What transformers made of allot's config.json, and whether it holds allot's weights."""
    cfg = model.config
    keys = ["model_type", "architectures", "vocab_size", "hidden_size", "intermediate_size",
            "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
            "hidden_act", "rms_norm_eps", "rope_theta", "rope_parameters",
            "max_position_embeddings", "tie_word_embeddings", "attention_bias", "mlp_bias",
            "bos_token_id", "eos_token_id", "dtype", "_attn_implementation"]
    emit({"case": case, "transformers_config": {k: getattr(cfg, k, None) for k in keys},
          "class": type(model).__name__})
    written = json.load(open(os.path.join(model_dir, "config.json")))
    theta = getattr(cfg, "rope_theta", None)
    if theta is None:
        theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta")
    rep.check(case, "rope_theta read", theta is not None and
              math.isclose(float(theta), written["rope_theta"]),
              f"transformers {theta}, config.json {written['rope_theta']}")
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    rep.check(case, "head_dim read", head_dim == written["head_dim"],
              f"transformers {head_dim}, config.json {written['head_dim']}")
    tied = model.get_output_embeddings().weight.data_ptr() == \
        model.get_input_embeddings().weight.data_ptr()
    rep.check(case, "tie_word_embeddings applied", tied == written["tie_word_embeddings"],
              f"lm_head shares embed_tokens: {tied}")
    # Every stored tensor reached the model unchanged, and no parameter of the model was left to
    # transformers' own initialisation.
    # named_parameters lists a tied weight once, under embed_tokens, and leaves out buffers.
    stored = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    params = dict(model.named_parameters())
    unknown = sorted(k for k in stored if k not in params)
    unfilled = sorted(k for k in params if k not in stored)
    worst = max((params[k].detach().float().cpu() - v.float()).abs().max().item()
                for k, v in stored.items() if k in params)
    rep.check(case, "checkpoint loaded", not unknown and not unfilled and worst == 0.0,
              {"tensors": len(stored), "not_in_model": unknown, "not_in_file": unfilled,
               "max_abs_diff": worst})


def load_peft(base, adapter_dir, device):
    from peft import PeftModel
    # autocast_adapter_dtype (the default) keeps the adapter in float32 on a bfloat16 base, as
    # allot does.
    return PeftModel.from_pretrained(base, adapter_dir).to(device).eval()


def describe_peft(case, model, adapter_dir, rep):
    """What PEFT made of allot's adapter_config.json, and whether it holds allot's tensors."""
    import peft
    written = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    cfg = model.peft_config["default"]
    keys = ["peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "use_rslora", "use_dora",
            "bias", "fan_in_fan_out", "target_modules", "init_lora_weights", "inference_mode",
            "modules_to_save", "rank_pattern", "alpha_pattern", "layers_to_transform"]
    loaded = {k: getattr(cfg, k, None) for k in keys}
    if isinstance(loaded["target_modules"], (set, frozenset)):
        loaded["target_modules"] = sorted(loaded["target_modules"])
    scalings, dropouts, adapter_dtypes = set(), set(), set()
    for _, module in model.named_modules():
        scaling = getattr(module, "scaling", None)
        if isinstance(scaling, dict) and "default" in scaling:
            scalings.add(float(scaling["default"]))
            drop = module.lora_dropout["default"]
            dropouts.add(type(drop).__name__ + (f"(p={drop.p})" if hasattr(drop, "p") else ""))
            adapter_dtypes.add(str(module.lora_A["default"].weight.dtype))
    emit({"case": case, "peft_version": peft.__version__, "peft_config": loaded,
          "scaling": sorted(scalings), "dropout_modules": sorted(dropouts),
          "adapter_dtype": sorted(adapter_dtypes)})
    r, alpha = written["r"], written["lora_alpha"]
    expected = alpha / math.sqrt(r) if written.get("use_rslora") else alpha / r
    rep.check(case, "PEFT config as written",
              loaded["r"] == r and float(loaded["lora_alpha"]) == float(alpha) and
              float(loaded["lora_dropout"]) == float(written["lora_dropout"]) and
              bool(loaded["use_rslora"]) == bool(written.get("use_rslora")) and
              sorted(loaded["target_modules"] or []) == sorted(written["target_modules"]),
              {"written": {k: written.get(k) for k in
                           ("r", "lora_alpha", "lora_dropout", "use_rslora", "target_modules")}})
    rep.check(case, "LoRA scaling", len(scalings) == 1 and
              math.isclose(next(iter(scalings)), expected, rel_tol=1e-9),
              f"PEFT {sorted(scalings)}, expected {expected}")
    stored = read_safetensors(os.path.join(adapter_dir, "adapter_model.safetensors"))
    state = model.state_dict()
    missing, worst = [], 0.0
    for name, t in stored.items():
        key = name.replace(".lora_A.weight", ".lora_A.default.weight") \
                  .replace(".lora_B.weight", ".lora_B.default.weight")
        if key not in state:
            missing.append(name)
            continue
        worst = max(worst, (state[key].float().cpu() - t.float()).abs().max().item())
    adapted = sum(1 for k in state if ".lora_A." in k)
    stored_a = sum(1 for k in stored if ".lora_A." in k)
    rep.check(case, "adapter loaded", not missing and adapted == stored_a and worst == 0.0,
              {"tensors": len(stored), "not_in_model": missing, "lora_A_in_model": adapted,
               "lora_A_in_file": stored_a, "max_abs_diff": worst})


def run_lm_case(model_dir, device, crit_attn, rep):
    import torch
    config = json.load(open(os.path.join(model_dir, "config.json")))
    case = config["model_type"]
    ref = read_safetensors(os.path.join(model_dir, "allot_logprobs.safetensors"))
    ids = ref["input_ids"].round().long().to(device)
    adapter_dir = os.path.join(model_dir, "adapter")
    attns = [crit_attn] + [a for a in ("sdpa", "eager") if a != crit_attn]
    hf = {}

    def describe(what, fn, *args):
        # Once per case, on the first float32 model; a failure here still lets the log-probs run.
        try:
            fn(case, *args, rep)
        except Exception as e:  # noqa: BLE001
            rep.error(f"{case} {what}", e)

    for dname, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        for attn in attns:
            stage = f"{case} transformers {dname} {attn}"
            first = dname == "float32" and attn == crit_attn
            try:
                t0 = time.time()
                model = load_transformers(model_dir, dtype, attn, device)
                if first:
                    describe("transformers config and weights", describe_transformers, model,
                             model_dir)
                hf[("base", dname, attn)] = token_logprobs(model, ids)
                peft_model = load_peft(model, adapter_dir, device)
                if first:
                    describe("PEFT config and adapter", describe_peft, peft_model, adapter_dir)
                hf[("lora", dname, attn)] = token_logprobs(peft_model, ids)
                emit({"stage": stage, "seconds": round(time.time() - t0, 2)})
                del model, peft_model
            except Exception as e:  # noqa: BLE001 - every stage reports and the run goes on
                rep.error(stage, e)
            if device.startswith("cuda"):
                torch.cuda.empty_cache()

    def have(*keys):
        return all(k in hf for k in keys)

    for kind in ("base", "lora"):
        for dname in ("float32", "bfloat16"):
            mine = ref[f"{kind}.{dname}"]
            for attn in attns:
                if not have((kind, dname, attn)):
                    continue
                tol = None
                if attn == crit_attn:
                    tol = FP32_TOL if dname == "float32" else (
                        LORA_BF16_TOL if kind == "lora" else None)
                what = f"allot vs {'transformers+PEFT' if kind == 'lora' else 'transformers'}" \
                       f"[{attn}]"
                rep.compare(case, kind, dname, what, mine, hf[(kind, dname, attn)], tol)
        # How far bfloat16 is from float32 on each side, and how far two attention kernels of
        # transformers itself are apart in bfloat16.
        ref32 = (kind, "float32", crit_attn)
        if have(ref32):
            rep.compare(case, kind, "bfloat16", f"allot bf16 vs transformers[{crit_attn}] fp32",
                        ref[f"{kind}.bfloat16"], hf[ref32])
            if have((kind, "bfloat16", crit_attn)):
                rep.compare(case, kind, "bfloat16",
                            f"transformers[{crit_attn}] bf16 vs fp32",
                            hf[(kind, "bfloat16", crit_attn)], hf[ref32])
        rep.compare(case, kind, "bfloat16", "allot bf16 vs allot fp32",
                    ref[f"{kind}.bfloat16"], ref[f"{kind}.float32"])
        if have((kind, "bfloat16", "sdpa"), (kind, "bfloat16", "eager")):
            rep.compare(case, kind, "bfloat16", "noise floor: transformers sdpa vs eager",
                        hf[(kind, "bfloat16", "sdpa")], hf[(kind, "bfloat16", "eager")])
    # The adapter must matter, or the LoRA rows test nothing.
    rep.compare(case, "lora", "float32", "allot lora vs allot base (adapter effect)",
                ref["lora.float32"], ref["base.float32"])


def onnx_session(path, provider):
    import onnxruntime as ort
    if provider != "CUDAExecutionProvider":
        return ort.InferenceSession(path, providers=[provider]), {}
    # TF32 would round the Gemms' inputs to 10 mantissa bits; ask for float32 where supported.
    try:
        options = {"use_tf32": "0"}
        return ort.InferenceSession(path, providers=[(provider, options)]), options
    except Exception:  # noqa: BLE001 - older or newer builds without the option
        return ort.InferenceSession(path, providers=[provider]), {}


def run_onnx_case(nav_dir, rep):
    import numpy as np
    import onnxruntime as ort
    ref = json.load(open(os.path.join(nav_dir, "reference.json")))
    n, dim, na = ref["n"], ref["state_dim"], ref["num_actions"]
    states = np.asarray(ref["states"], dtype=np.float32).reshape(n, dim)
    refs = {k: np.asarray(ref[k], dtype=np.float32).reshape(n, na)
            for k in ("q_libtorch", "q_navigator_mlp")}
    path = os.path.join(nav_dir, "navigator.onnx")
    available = ort.get_available_providers()
    emit({"case": "navigator", "onnxruntime": ort.__version__, "providers": available})
    if "CPUExecutionProvider" not in available:
        rep.failures.append("navigator: onnxruntime has no CPUExecutionProvider")
    for provider in ("CPUExecutionProvider", "CUDAExecutionProvider"):
        if provider not in available:
            emit({"case": "navigator", "provider": provider, "skipped": "not available"})
            continue
        tol = NAV_TOL[provider]
        stage = f"navigator onnxruntime {provider}"
        try:
            sess, options = onnx_session(path, provider)
            used = sess.get_providers()
            if used[0] != provider:
                # onnxruntime falls back to the CPU quietly when a GPU provider cannot start.
                emit({"case": "navigator", "provider": provider,
                      "skipped": f"session fell back to {used}"})
                if provider == "CPUExecutionProvider":
                    rep.failures.append(f"navigator: {provider} not used ({used})")
                continue
            inp, out = sess.get_inputs()[0], sess.get_outputs()[0]
            q = sess.run([out.name], {inp.name: states})[0]
            emit({"case": "navigator", "provider": provider, "options": options,
                  "input": inp.name, "output": out.name, "shape": list(q.shape)})
            if tuple(q.shape) != (n, na):
                rep.failures.append(f"navigator {provider}: output shape {q.shape}, "
                                    f"expected {(n, na)}")
                continue
            for name, r in refs.items():
                top2 = np.sort(r, axis=1)[:, -2:]
                decisive = (top2[:, 1] - top2[:, 0]) > tol
                same = q.argmax(axis=1) == r.argmax(axis=1)
                row = {"case": "navigator", "kind": provider, "dtype": "float32",
                       "compare": f"onnxruntime vs allot {name[2:]}",
                       "max_abs": float(np.abs(q - r).max()),
                       "mean_abs": float(np.abs(q - r).mean()), "tol": tol,
                       "argmax_agree": float(same.mean()),
                       "decisive_rows": int(decisive.sum()),
                       "decisive_disagree": int((~same & decisive).sum())}
                row["pass"] = row["max_abs"] < tol and row["decisive_disagree"] == 0
                if not row["pass"]:
                    rep.failures.append(f"navigator {provider} vs {name}: max abs "
                                        f"{row['max_abs']:.3g}, {row['decisive_disagree']} "
                                        f"greedy actions differ")
                rep.rows.append(row)
                emit(row)
        except Exception as e:  # noqa: BLE001
            rep.error(stage, e)


def print_table(rep):
    print(f"\n{'case':<9} {'kind':<21} {'dtype':<9} {'compare':<44} {'max_abs':>10} "
          f"{'mean_abs':>10} {'tol':>9}  ok", flush=True)
    for r in rep.rows:
        tol = "-" if r["tol"] is None else f"{r['tol']:.0e}"
        ok = "-" if "pass" not in r else ("yes" if r["pass"] else "NO")
        print(f"{r['case']:<9} {r['kind']:<21} {r['dtype']:<9} {r['compare']:<44} "
              f"{r['max_abs']:>10.3e} {r['mean_abs']:>10.3e} {tol:>9}  {ok}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="*", help="directories written by allot_parity_dump --out")
    p.add_argument("--onnx", help="directory written by navigator_onnx_case.sh")
    p.add_argument("--device", help="torch device for transformers (default: cuda if available)")
    p.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"],
                   help="transformers attention the criteria apply to (the other is reported)")
    args = p.parse_args()
    if not args.dirs and not args.onnx:
        p.error("give at least one DIR or --onnx NAVDIR")
    rep = Report()
    t0 = time.time()
    if args.dirs:
        try:
            import torch
            device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
            # The comparison is of float32 arithmetic: no TF32 in transformers' matmuls (allot's
            # LibTorch leaves it off by default too).
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            versions = {"torch": torch.__version__, "device": device}
            if device.startswith("cuda"):
                versions["gpu"] = torch.cuda.get_device_name(0)
            for mod in ("transformers", "peft"):
                try:
                    versions[mod] = __import__(mod).__version__
                except Exception as e:  # noqa: BLE001
                    rep.error(f"import {mod}", e)
            emit({"versions": versions})
            for d in args.dirs:
                try:
                    run_lm_case(d, device, args.attn, rep)
                except Exception as e:  # noqa: BLE001
                    rep.error(f"case {d}", e)
        except Exception as e:  # noqa: BLE001
            rep.error("torch", e)
    if args.onnx:
        try:
            run_onnx_case(args.onnx, rep)
        except Exception as e:  # noqa: BLE001
            rep.error(f"navigator {args.onnx}", e)
    print_table(rep)
    ok = not rep.failures and not rep.errors
    emit({"summary": {"pass": ok, "failures": rep.failures, "errors": rep.errors,
                      "seconds": round(time.time() - t0, 1)}})
    print("\nPARITY " + ("PASS" if ok else "FAIL"), flush=True)
    for line in rep.failures + rep.errors:
        print("  " + line, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
