"""Where the GPU time of a profiled region goes, from a Chrome trace of torch.profiler or of
LibTorch's Kineto profiler (allot_grpo_bench --profile, grpo_hf.py --profile).

  python3 bench/gpu/trace_summary.py TRACE.json [--top 25] [--label NAME]

Prints, for the GPU kernels of the trace (memory copies and sets included):
  * the span from the first kernel's start to the last one's end, the time some kernel ran
    (busy) and the rest (idle: the GPU waited for the host - launch overhead or a sync);
  * kernel time by kind (matrix products, attention, softmax/log-sum-exp, reductions, casts and
    copies, other element-wise, index/scatter/gather, cat, memcpy/memset);
  * kernel time by the top-level operator that launched it (the outermost aten:: operator on the
    launching thread, or the autograd node for backward kernels), so that a forward op and its
    backward show as separate rows;
  * the --top kernels by total time.
"""
import argparse
import bisect
import collections
import json
import re
import sys

KINDS = [  # first match wins; matched against the lower-cased kernel name
    ("attention", re.compile(r"flash|fmha|attention|mem_eff|cutlass.*attn")),
    ("matmul", re.compile(r"gemm|cutlass|nvjet|xmma|sm90_|sm80_|cublas|splitk|wgmma")),
    ("softmax/lse", re.compile(r"softmax|logsumexp")),
    ("cat", re.compile(r"catarray|cat_")),
    ("index/scatter/gather", re.compile(r"index|scatter|gather|embedding")),
    ("reduce", re.compile(r"reduce|norm_kernel|welford")),
    ("cast/copy", re.compile(r"copy")),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise")),
    ("memcpy/memset", re.compile(r"memcpy|memset")),
]


def kind_of(name):
    low = name.lower()
    for kind, pattern in KINDS:
        if pattern.search(low):
            return kind
    return "other"


def short(name, width=110):
    """A kernel name without template arguments' noise, cut to width."""
    s = re.sub(r"\(anonymous namespace\)::", "", name)
    s = re.sub(r"at::native::", "", s)
    return s if len(s) <= width else s[: width - 3] + "..."


def top_level_ops(events):
    """{(pid, tid): (starts, ops)} of outermost aten::/autograd operators per host thread."""
    per_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") != "X" or str(e.get("cat", "")).lower() != "cpu_op":
            continue
        per_thread[(e.get("pid"), e.get("tid"))].append(
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("name", "?")))
    out = {}
    for key, ops in per_thread.items():
        ops.sort(key=lambda o: (o[0], -o[1]))
        outer = []
        for start, end, name in ops:
            if outer and start < outer[-1][1]:
                continue  # nested inside the current outermost operator
            outer.append((start, end, name))
        out[key] = ([o[0] for o in outer], outer)
    return out


def owner(ops, key, ts):
    starts, outer = ops.get(key, ([], []))
    i = bisect.bisect_right(starts, ts) - 1
    if i >= 0 and outer[i][0] <= ts <= outer[i][1]:
        name = outer[i][2]
        return name.replace("autograd::engine::evaluate_function: ", "bwd ")
    return "(no operator)"


def summarize(path, top, label):
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    kernels = [e for e in events
               if e.get("ph") == "X" and str(e.get("cat", "")).lower() in gpu_cats]
    if not kernels:
        print(f"{label}: no GPU kernels in {path}")
        return 1
    launches = {}
    for e in events:
        # cuBLASLt and cuDNN launch through the driver API: "cuda_driver" events.
        if str(e.get("cat", "")).lower() in ("cuda_runtime", "cuda_driver"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launches[corr] = ((e.get("pid"), e.get("tid")), float(e["ts"]))
    ops = top_level_ops(events)
    total = 0.0
    by_kind = collections.Counter()
    by_op = collections.Counter()
    by_name = collections.Counter()
    count = collections.Counter()
    intervals = []
    for k in kernels:
        dur = float(k.get("dur", 0))
        ts = float(k["ts"])
        intervals.append((ts, ts + dur))
        total += dur
        by_kind[kind_of(k["name"])] += dur
        by_name[k["name"]] += dur
        count[k["name"]] += 1
        corr = (k.get("args") or {}).get("correlation")
        launch = launches.get(corr)
        by_op[owner(ops, launch[0], launch[1]) if launch else "(no launch event)"] += dur
    intervals.sort()
    busy, cur_s, cur_e = 0.0, intervals[0][0], intervals[0][1]
    for s, e in intervals[1:]:
        if s > cur_e:
            busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    span = intervals[-1][1] - intervals[0][0]
    print(f"== {label}: {len(kernels)} kernels; span {span / 1e3:.1f} ms, busy {busy / 1e3:.1f} ms "
          f"({100 * busy / span:.0f}%), idle {(span - busy) / 1e3:.1f} ms; kernel sum "
          f"{total / 1e3:.1f} ms")
    print("   by kind:")
    for kind, t in by_kind.most_common():
        print(f"     {kind:22s} {t / 1e3:9.1f} ms {100 * t / total:5.1f}%")
    print("   by top-level operator:")
    for op, t in by_op.most_common(top):
        print(f"     {op[:60]:60s} {t / 1e3:9.1f} ms {100 * t / total:5.1f}%")
    print(f"   top {top} kernels:")
    for name, t in by_name.most_common(top):
        print(f"     {t / 1e3:8.1f} ms {100 * t / total:5.1f}% x{count[name]:<5d} {short(name)}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--label", default=None)
    args = ap.parse_args()
    try:
        return summarize(args.trace, args.top, args.label or args.trace)
    except (OSError, ValueError, KeyError) as e:
        print(f"trace_summary: {args.trace}: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
