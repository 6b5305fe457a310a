#!/usr/bin/env python3
"""Asynchronous GRPO against synchronous: the same run with grpo.async.max_lag 0, 1 and 2.

The run is the chaos suite's (tests/chaos/chaos.py: a CogER GRPO run on the tiny world's t0 tier,
2 prompts x 8 completions a step, one in-process rollout worker of 4 threads) against one
`allot serve` (t0, one sequence at a time) behind bench/trainer/delay_proxy.py, which adds D ms
to every generation request and records when the endpoint had a request in flight.

  1. Calibration (synchronous, D = 0 and D = --probe-ms): the update time U (median over steps
     2.. of time/fwd_bwd_s + time/optimizer_s), the rollout time R(D) (median time/rollout_wait_s)
     and its slope in D; D for each target ratio R/U (--ratios, default 0.5 1 3) from the line
     through the two points (0 where the endpoint alone is already slower than the target).
  2. For each ratio, --repeats rounds of the modes (sync, max_lag 1, max_lag 2), the order
     reversed every other round; figures are the medians over the rounds.

From each run's own RUN/metrics.jsonl, over steps 2..N (step 1 holds the start-up):
  steps/min            60 (N - 1) / (time of step N's record - time of step 1's)
  learner idle         sum time/rollout_wait_s / sum time/step_s
  endpoint idle        share of that window with no generation request in flight (the proxy's)
  vs sync              steps/min over the synchronous run's (medians)
  reward               mean reward/mean over all steps
The achieved ratio is the synchronous runs' median rollout_wait_s over U.

  bench/trainer/async_bench.py [--allot build/apps/allot] [--steps 12] [--repeats 2]
      [--ratios 0.5,1,3] [--updates-per-batch 16] [--lr 2e-3] [--delay-ms D] [--json FILE]
      [--set KEY=VALUE ...]

--delay-ms D skips the calibration and runs one ratio with that delay (the smoke test). The t0
tier comes from scripts/make_tiny_world.sh; without it the script exits 77 (skipped).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))
import chaos  # noqa: E402  (its serve, recipe and process handling)
sys.path.insert(0, HERE)
from delay_proxy import busy_seconds  # noqa: E402

MODES = (0, 1, 2)


def mode_name(lag):
    return "sync" if lag == 0 else f"max_lag {lag}"


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = a.work
        self.serve = chaos.Serve(a.allot, self.work)
        self.n = 0

    def run(self, lag, delay_ms, steps):
        """One `allot train` behind a fresh proxy adding `delay_ms`; its figures."""
        self.n += 1
        name = f"r{self.n:02d}-lag{lag}-d{int(delay_ms)}"
        work = os.path.join(self.work, name)
        os.makedirs(work)
        ivf = os.path.join(work, "intervals.txt")
        plog = os.path.join(work, "proxy.log")
        proxy = chaos.start([sys.executable, os.path.join(HERE, "delay_proxy.py"), "--upstream",
                             self.serve.url, "--delay-ms", str(delay_ms), "--log", ivf], plog)
        url = chaos.wait_for(lambda: re.search(r"listening on (http://[0-9.:]+)",
                                               chaos.slurp(plog)), 30, "delay proxy", proxy)
        recipe = chaos.write_recipe(work, url.group(1), steps=steps)
        sets = {"grpo.async.max_lag": lag, "checkpoint.every": steps,
                "grpo.updates_per_batch": self.a.updates_per_batch, "grpo.lr": self.a.lr}
        args = []
        for k, v in sets.items():
            args += ["--set", f"{k}={v}"]
        for kv in self.a.set:
            args += ["--set", kv]
        r = chaos.Run(self.a.allot, work, recipe, "run", args=args)
        code = r.wait(timeout=1800)
        proxy.send_signal(signal.SIGTERM)
        proxy.wait()
        if code != 0:
            chaos.fail(f"{name} failed ({code}):\n{r.log()[-3000:]}")
        m = chaos.jsonl(os.path.join(r.dir, "metrics.jsonl"))
        if [x["step"] for x in m] != list(range(1, steps + 1)):
            chaos.fail(f"{name}: metrics.jsonl steps {[x['step'] for x in m]}")
        body = m[1:]
        lo, hi = m[0]["time"], m[-1]["time"]
        iv = [tuple(map(float, line.split())) for line in chaos.slurp(ivf).splitlines() if line]
        out = {
            "name": name, "lag": lag, "delay_ms": delay_ms, "wall_s": r.wall,
            "steps_per_min": 60.0 * len(body) / (hi - lo),
            "learner_idle": sum(x["time/rollout_wait_s"] for x in body)
            / sum(x["time/step_s"] for x in body),
            "endpoint_idle": 1.0 - busy_seconds(iv, lo, hi) / (hi - lo),
            "reward": statistics.mean(x["reward/mean"] for x in m),
            "rewards": [x["reward/mean"] for x in m],
            "update_s": statistics.median(x["time/fwd_bwd_s"] + x["time/optimizer_s"]
                                          for x in body),
            "rollout_s": statistics.median(x["time/rollout_wait_s"] for x in body),
            "step_s": statistics.median(x["time/step_s"] for x in body),
            "sync_s": statistics.median(x.get("time/sync_s", 0.0) for x in body),
            "requests": len(iv),
            "shortest_request_s": min((e - s for s, e in iv), default=0.0),
            "groups_in_flight": max(x["rollout/groups_in_flight"] for x in m),
        }
        chaos.log(f"{name}: {out['steps_per_min']:.1f} steps/min, learner idle "
                  f"{out['learner_idle']:.2f}, endpoint idle {out['endpoint_idle']:.2f}, "
                  f"update {out['update_s']:.3f} s, rollout wait {out['rollout_s']:.3f} s, "
                  f"reward {out['reward']:.3f}")
        return out


def check(runs):
    """What the smoke test asserts: the figures come from the set-up they claim."""
    for r in runs:
        if r["requests"] == 0:
            chaos.fail(f"{r['name']}: no generation request went through the delay proxy")
        if r["shortest_request_s"] < r["delay_ms"] / 1000.0:
            chaos.fail(f"{r['name']}: a request took {r['shortest_request_s']:.3f} s, less than "
                       f"the proxy's delay of {r['delay_ms']:g} ms")
        if (r["groups_in_flight"] > 0) != (r["lag"] > 0):
            chaos.fail(f"{r['name']}: max_lag {r['lag']} but rollout/groups_in_flight reached "
                       f"{r['groups_in_flight']:g}")
        if not 0.0 <= r["endpoint_idle"] <= 1.0 or not 0.0 <= r["learner_idle"] <= 1.0:
            chaos.fail(f"{r['name']}: an idle fraction outside [0, 1]: {r}")
    chaos.log(f"check: {len(runs)} runs through the proxy, sampled ahead where asynchronous")


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allot", default=os.path.join(ROOT, "build", "apps", "allot"))
    ap.add_argument("--work", default="", help="kept when given (default: a temporary folder)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ratios", default="0.5,1,3", help="targets of rollout time / update time")
    ap.add_argument("--modes", default="0,1,2", help="max_lag values (0: synchronous)")
    ap.add_argument("--updates-per-batch", type=int, default=16,
                    help="passes over each batch: the update time the rollouts are set against")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--calibration-steps", type=int, default=6)
    ap.add_argument("--probe-ms", type=float, default=200.0,
                    help="the second calibration point's delay")
    ap.add_argument("--delay-ms", type=float, default=None,
                    help="skip the calibration: one ratio at this delay")
    ap.add_argument("--json", default="", help="every run's figures and the table's rows")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to every run's allot train (repeatable)")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every run went through the proxy with its delay and the "
                         "asynchronous runs sampled ahead (the smoke test)")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(chaos.T0, "model.safetensors")):
        print(f"SKIP: no tiny-world tier at {chaos.T0} (scripts/make_tiny_world.sh)")
        return 77
    keep = bool(a.work)
    a.work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="async-bench-")
    if keep:
        shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    a.allot = os.path.abspath(a.allot)
    signal.signal(signal.SIGTERM, chaos.on_signal)
    signal.signal(signal.SIGINT, chaos.on_signal)
    modes = [int(x) for x in a.modes.split(",")]
    load_start = os.getloadavg()
    t_start = time.time()
    try:
        b = Bench(a)
        calib = {}
        if a.delay_ms is not None:
            plan = [("-", a.delay_ms)]
        else:
            c0 = b.run(0, 0.0, a.calibration_steps)
            c1 = b.run(0, a.probe_ms, a.calibration_steps)
            u = statistics.median([c0["update_s"], c1["update_s"]])
            slope = max((c1["rollout_s"] - c0["rollout_s"]) / a.probe_ms, 1e-6)
            calib = {"update_s": u, "rollout_s_at_0": c0["rollout_s"],
                     "rollout_s_per_ms": slope, "runs": [c0, c1]}
            chaos.log(f"calibration: update {u:.3f} s, rollout {c0['rollout_s']:.3f} s at 0 ms "
                      f"+ {slope * 1000:.3f} s per s of delay")
            plan = []
            for r in (float(x) for x in a.ratios.split(",")):
                plan.append((r, max(0.0, round((r * u - c0["rollout_s"]) / slope))))
        rows, runs = [], []
        for target, delay in plan:
            by_mode = {m: [] for m in modes}
            for rep in range(a.repeats):
                order = modes if rep % 2 == 0 else list(reversed(modes))
                for lag in order:
                    res = b.run(lag, delay, a.steps)
                    res.update(target=target, repeat=rep)
                    by_mode[lag].append(res)
                    runs.append(res)
            sync_spm = med(by_mode[0], "steps_per_min") if 0 in by_mode else None
            achieved = (med(by_mode[0], "rollout_s") / med(by_mode[0], "update_s")
                        if 0 in by_mode else None)
            for lag in modes:
                rs = by_mode[lag]
                rows.append({
                    "target": target, "achieved": achieved, "delay_ms": delay,
                    "mode": mode_name(lag), "steps_per_min": med(rs, "steps_per_min"),
                    "learner_idle": med(rs, "learner_idle"),
                    "endpoint_idle": med(rs, "endpoint_idle"),
                    "vs_sync": med(rs, "steps_per_min") / sync_spm if sync_spm else None,
                    "reward": med(rs, "reward"), "update_s": med(rs, "update_s"),
                    "n": len(rs)})
        if a.check:
            check(runs)
    finally:
        chaos.cleanup()
    load_end = os.getloadavg()
    minutes = (time.time() - t_start) / 60
    print(f"\nload average {load_start[0]:.2f} / {load_start[1]:.2f} / {load_start[2]:.2f} "
          f"(1 / 5 / 15 min) at the start, {load_end[0]:.2f} / {load_end[1]:.2f} / "
          f"{load_end[2]:.2f} at the end, {os.cpu_count()} CPUs, {minutes:.1f} minutes")
    if calib:
        print(f"calibration: update U {calib['update_s']:.3f} s, rollout "
              f"{calib['rollout_s_at_0']:.3f} s at D = 0, "
              f"+{calib['rollout_s_per_ms'] * 1000:.3f} s per s of D")
    print("\n| ratio R/U (target / achieved) | D ms | mode | steps/min | learner idle | "
          "endpoint idle | vs sync | mean reward |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ach = f"{r['achieved']:.2f}" if r["achieved"] is not None else "-"
        vs = f"{r['vs_sync']:.2f}x" if r["vs_sync"] is not None else "-"
        print(f"| {r['target']} / {ach} | {r['delay_ms']:g} | {r['mode']} | "
              f"{r['steps_per_min']:.1f} | {r['learner_idle']:.2f} | {r['endpoint_idle']:.2f} | "
              f"{vs} | {r['reward']:.3f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "runs": runs, "calibration": calib,
                       "load_start": load_start, "load_end": load_end,
                       "args": vars(a)}, f, indent=1)
    if not keep:
        shutil.rmtree(a.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
