#!/usr/bin/env python3
"""The chaos suite (ctest label "chaos"): short GRPO runs on the tiny world's t0 tier, disturbed.

Each scenario starts `allot serve` (t0, one sequence at a time, so seeded sampling repeats bit for
bit), runs `allot train` with a CogER recipe, injects its faults, and asserts from the run's own
records (RUN/episodes.jsonl, RUN/metrics.jsonl, RUN/restarts.jsonl) that
  - the run completes (or, for a full disk, fails with a clear message and a valid checkpoint);
  - no episode is lost: every step's issued episodes have one outcome each, trained or failed
    with a reason, and the draws cover 0..last with every group index;
  - none is duplicated: no (draw, index) has two outcomes;
  - where the scenario allows, the final adapter equals the undisturbed run's byte for byte.
The undisturbed runs (one learner with two remote workers; two learner ranks) are the fixture
scenario "baseline". Every scenario appends a row to WORK/table.md.

Exit 77 (skipped) when a capability a scenario needs is missing: the t0 tier, root for a tmpfs
mount, ip netns and iptables or tc for a partition.
"""
import argparse
import atexit
import ctypes
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
T0 = os.path.join(ROOT, "assets", "tinyworld", "pool", "t0")
PROMPTS = os.path.join(ROOT, "configs", "prompts", "tinyworld", "coger")
STEPS = 5
GROUP = 8
PROMPTS_PER_STEP = 2

_procs = []      # every process this script started (killed at exit, by pid)
_cleanups = []   # callables run at exit, newest first (umount, netns delete)


class Skip(Exception):
    pass


def fail(msg):
    raise AssertionError(msg)


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cleanup():
    for p in reversed(_procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 10
    for p in reversed(_procs):
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:  # cleanup must go on
            print(f"cleanup: {e}", file=sys.stderr)


def on_signal(sig, _frame):
    cleanup()
    sys.exit(128 + sig)


def _child_setup():
    # Its own process group (its children go with it), and killed if this script dies without
    # its cleanup (ctest's timeout kills it with SIGKILL): PR_SET_PDEATHSIG.
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(args, logfile, **kw):
    """A process of this scenario, logged to `logfile` (stopped at exit)."""
    out = open(logfile, "wb")
    p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_child_setup,
                         **kw)
    _procs.append(p)
    return p


def unmount_under(path):
    """Mounts a killed earlier run of the suite left under `path` (its tmpfs)."""
    path = os.path.abspath(path)
    for line in slurp("/proc/mounts").splitlines():
        mnt = line.split()[1] if len(line.split()) > 1 else ""
        if mnt == path or mnt.startswith(path + "/"):
            subprocess.run(["umount", "-l", mnt], check=False)


def wait_for(pred, timeout, what, proc=None):
    until = time.time() + timeout
    while time.time() < until:
        v = pred()
        if v:
            return v
        if proc is not None and proc.poll() is not None:
            fail(f"{what}: the process exited with {proc.returncode} first")
        time.sleep(0.05)
    fail(f"{what}: not within {timeout} s")


def slurp(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def jsonl(path):
    out = []
    for line in slurp(path).splitlines():
        line = line.strip()
        if line:
            out.append(json.loads(line))
    return out


class Serve:
    """`allot serve` with t0 on a free loopback port."""

    def __init__(self, allot, work, name="serve"):
        logf = os.path.join(work, name + ".log")
        self.proc = start([allot, "serve", "--model", T0, "--port", "0", "--served-model-name",
                           "tiny", "--threads", "1", "--max-batch", "1"], logf)
        m = wait_for(lambda: re.search(r"listening on (http://[0-9.:]+)", slurp(logf)), 120,
                     "allot serve", self.proc)
        self.url = m.group(1)


def start_worker(allot, work, name, listen="127.0.0.1:0", netns=None, token=None):
    """`token`: off loopback a worker needs one (a private test bridge: no TLS)."""
    cfg = os.path.join(work, "worker.yaml")
    with open(cfg, "w") as f:
        auth = f", auth: {{token: {token}, allow_insecure_transport: true}}" if token else ""
        f.write(f"rollout:\n  worker: {{threads: 4, metrics_listen: '127.0.0.1:0'{auth}}}\n")
    addr_file = os.path.join(work, name + ".addr")
    if os.path.exists(addr_file):
        os.remove(addr_file)
    args = [allot, "rollout-worker", "-c", cfg, "--listen", listen, "--set",
            "rollout.worker.port_file=" + addr_file, "--set", "rollout.worker.worker_id=" + name]
    if netns:
        args = ["ip", "netns", "exec", netns] + args
    p = start(args, os.path.join(work, name + ".log"))
    addr = wait_for(lambda: slurp(addr_file).strip(), 60, "rollout worker " + name, p)
    return p, addr


def in_flight(work, name):
    """Episodes the worker runs now, from its own /metrics (allot_worker_in_flight_episodes)."""
    m = re.search(r"metrics port (\d+)", slurp(os.path.join(work, name + ".log")))
    if not m:
        return 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/metrics", timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return 0
    g = re.search(r"^allot_worker_in_flight_episodes (\S+)", text, re.M)
    return float(g.group(1)) if g else 0


def write_recipe(work, url, steps=STEPS, workers=(), token=None):
    data = os.path.join(work, "train.jsonl")
    with open(data, "w") as f:
        f.write('{"question": "What is 2+3?", "answer": "5", "min_level": 1}\n'
                '{"question": "What is 17*6?", "answer": "102", "min_level": 2}\n'
                '{"question": "What is 37*46?", "answer": "1702", "min_level": 3}\n')
    if workers:
        rollout = ("rollout:\n  in_process_workers: 0\n  dispatcher:\n"
                   f"    workers: [{', '.join(workers)}]\n"
                   "    heartbeat_interval_ms: 200\n    missed_heartbeats: 5\n"
                   "    reconnect_initial_ms: 100\n    reconnect_max_ms: 500\n")
        if token:
            rollout += f"    auth: {{token: {token}, allow_insecure_transport: true}}\n"
    else:
        rollout = "rollout:\n  in_process_workers: 1\n  worker: {threads: 4}\n"
    recipe = os.path.join(work, "grpo.yaml")
    with open(recipe, "w") as f:
        f.write(f"""run:
  output_dir: {work}/runs
  seed: 5
logging: {{log_every: 1, progress_bar: false, tensorboard: false}}
checkpoint: {{every: 1, keep_last: 0}}
trainer: {{algorithm: grpo, total_steps: {steps}}}
model: {{path: {T0}, dtype: float32}}
grpo:
  policy_endpoint: router
  group_size: {GROUP}
  prompts_per_step: {PROMPTS_PER_STEP}
  grad_accum: 1
  updates_per_batch: 1
  lr: 2.0e-2
  temperature: 1.0
  loss_aggregation: token_mean
  sync_timeout_s: 20
  rollout_timeout_s: 120
  lora: {{r: 8, lora_alpha: 16, lora_dropout: 0.0, seed: 3}}
rewards:
  terms:
    - {{name: format, weight: 1.0}}
    - {{name: accuracy, weight: 1.0}}
    - {{name: hierarchy, weight: 1.0}}
  hierarchy: {{oracle: dataset}}
env:
  name: coger
  coger:
    router_endpoint: router
    router_max_tokens: 48
    l2: {{endpoint: medium, max_tokens: 16}}
    l3: {{endpoint: large, max_tokens: 16}}
    cotool:
      model: {{endpoint: large, max_tokens: 16}}
      selector: rules
    lmin: {{oracle: dataset, l1_endpoint: router}}
    prompts: {{dir: {PROMPTS}}}
tools: {{code: false}}
train_data:
  path: {data}
  fields: {{extra: [min_level]}}
{rollout}endpoints:
""")
        for name in ("router", "medium", "large"):
            f.write(f'  - {{name: {name}, base_url: "{url}", model: tiny, params_b: 0.001, '
                    f'limits: {{deadline_s: 60, timeout_s: 30, backoff_initial_s: 0.05}}}}\n')
    return recipe


class Run:
    """`allot train` of one recipe as a background process."""

    def __init__(self, allot, work, recipe, name, args=(), wrap=()):
        """`wrap`: a command the run goes through (ip netns exec NS)."""
        self.name = name
        self.dir = os.path.join(work, "runs", name)
        self.logf = os.path.join(work, name + ".log")
        self.t0 = time.time()
        self.proc = start([*wrap, allot, "train", "-c", recipe, "--name", name, *args],
                          self.logf)
        self.wall = None
        self.ended = None
        # The wall time ends when the process does, not when the scenario looks.
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        self.proc.wait()
        self.ended = time.time()

    def wait(self, timeout=600):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            fail(f"run {self.name} did not finish within {timeout} s:\n{slurp(self.logf)[-3000:]}")
        while self.ended is None:
            time.sleep(0.01)
        self.wall = self.ended - self.t0
        return self.proc.returncode

    def log(self):
        return slurp(self.logf)

    def steps_done(self):
        """The last step with outcome records (rank 0 appends them as each step ends)."""
        last = 0
        for line in slurp(os.path.join(self.dir, "episodes.jsonl")).splitlines():
            try:
                last = max(last, int(json.loads(line)["step"]))
            except (ValueError, KeyError, TypeError):
                pass  # a line being written
        return last

    def rank_pids(self):
        """The newest pid of each learner rank, from the ranks' own start lines."""
        pids = {}
        for m in re.finditer(r"learner rank (\d+) of \d+ \(pid (\d+)\)", self.log()):
            pids[int(m.group(1))] = int(m.group(2))
        return pids

    def adapter(self, step=STEPS):
        """The adapter of checkpoint `step` (the undisturbed runs end at STEPS)."""
        return os.path.join(self.dir, "checkpoints", "step-%012d" % step, "adapter",
                            "adapter_model.safetensors")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def account(run, steps=STEPS):
    """What the run's records say became of its episodes."""
    metrics = {}
    for r in jsonl(os.path.join(run.dir, "metrics.jsonl")):
        if r["step"] in metrics:
            fail(f"{run.name}: metrics.jsonl has step {r['step']} twice")
        metrics[r["step"]] = r
    if sorted(metrics) != list(range(1, steps + 1)):
        fail(f"{run.name}: metrics.jsonl steps {sorted(metrics)}, not 1..{steps}")
    outcomes = jsonl(os.path.join(run.dir, "episodes.jsonl"))
    seen, dup, by_step = {}, [], {}
    for o in outcomes:
        key = (o["draw"], o["index"])
        if key in seen:
            dup.append(key)
        seen[key] = o
        by_step[o["step"]] = by_step.get(o["step"], 0) + 1
    issued = 0
    for s, r in metrics.items():
        n = int(r.get("rollout/issued", -1))
        issued += n
        if n != by_step.get(s, 0):
            fail(f"{run.name}: step {s} issued {n} episodes, {by_step.get(s, 0)} have an outcome")
    last = max((k[0] for k in seen), default=-1)
    missing = [(d, i) for d in range(last + 1) for i in range(GROUP) if (d, i) not in seen]
    trained = sum(1 for o in outcomes if o["outcome"] == "trained")
    failed = [o for o in outcomes if o["outcome"] != "trained"]
    unexplained = [o for o in failed if not o["reason"]]
    reasons = {}
    for o in failed:
        reasons[o["outcome"] + ": " + o["reason"]] = reasons.get(o["outcome"] + ": " + o["reason"],
                                                                 0) + 1
    return {
        "issued": issued,
        "trained": trained,
        "failed": len(failed),
        "reasons": reasons,
        "duplicated": len(dup),
        "missing": len(missing),
        "unexplained": len(unexplained),
        "redispatched": int(sum(r.get("rollout/redispatched", 0) for r in metrics.values())),
        "duplicates_dropped": int(sum(r.get("rollout/duplicates_dropped", 0)
                                      for r in metrics.values())),
        "worker_losses": int(sum(r.get("rollout/worker_losses", 0) for r in metrics.values())),
        "restarts": jsonl(os.path.join(run.dir, "restarts.jsonl")),
    }


def expect_whole(run, acc, steps=STEPS):
    """No episode lost, none duplicated, every failure with its reason."""
    if acc["duplicated"]:
        fail(f"{run.name}: {acc['duplicated']} episodes have two outcomes")
    if acc["missing"]:
        fail(f"{run.name}: {acc['missing']} episodes of the issued draws have no outcome")
    if acc["unexplained"]:
        fail(f"{run.name}: {acc['unexplained']} episodes left out without a reason")
    if acc["issued"] != acc["trained"] + acc["failed"]:
        fail(f"{run.name}: issued {acc['issued']} != trained {acc['trained']} + failed "
             f"{acc['failed']}")
    if acc["issued"] != steps * GROUP * PROMPTS_PER_STEP:
        fail(f"{run.name}: {acc['issued']} episodes issued, the recipe's steps draw "
             f"{steps * GROUP * PROMPTS_PER_STEP}")


SHARED = ""  # --work: the baseline's runs, baseline.json and table.md


def baseline(key):
    path = os.path.join(SHARED, "baseline.json")
    data = json.loads(slurp(path) or "{}")
    if key not in data:
        raise Skip(f"no undisturbed run '{key}' in {path} (the fixture scenario 'baseline' failed "
                   "or did not run)")
    return data[key]


def row(work, scenario, faults, acc, wall, base_wall, same):
    line = (f"| {scenario} | {faults} | {acc['issued']} / {acc['trained']} / {acc['failed']} / "
            f"{acc['duplicated']} | {acc['redispatched']} / {acc['duplicates_dropped']} | "
            f"{len(acc['restarts'])} | {wall:.1f} s vs {base_wall:.1f} s | {same} |\n")
    table = os.path.join(SHARED, "table.md")
    if not os.path.exists(table):
        with open(table, "w") as f:
            f.write("| scenario | faults injected | episodes issued / trained / failed / "
                    "duplicated | re-dispatched / duplicate trajectories dropped | restarts | "
                    "wall time vs undisturbed | final adapter |\n|---|---|---|---|---|---|---|\n")
    with open(table, "a") as f:
        f.write(line)
    log("row: " + line.strip())


def expect_same_adapter(run, base, what):
    got = sha(run.adapter())
    if got != base["adapter_sha256"]:
        fail(f"{run.name}: final adapter differs from the undisturbed run's ({what})")
    return "equal"


# ---------------------------------------------------------------------------------------------
# Scenarios


def sc_baseline(a, work):
    """The undisturbed runs every scenario compares against."""
    serve = Serve(a.allot, work)
    out = {}
    _, wa = start_worker(a.allot, work, "worker-a")
    _, wb = start_worker(a.allot, work, "worker-b")
    recipe = write_recipe(work, serve.url, workers=(wa, wb))
    run = Run(a.allot, work, recipe, "base-remote")
    if run.wait() != 0:
        fail("undisturbed run failed:\n" + run.log()[-3000:])
    acc = account(run)
    expect_whole(run, acc)
    initial = os.path.join(run.dir, "adapters", "v1", "adapter_model.safetensors")
    if sha(run.adapter()) == sha(initial):
        fail("the undisturbed run's adapter did not move: comparing adapters would prove nothing")
    out["remote"] = {"adapter_sha256": sha(run.adapter()), "wall_s": run.wall}
    row(work, "undisturbed, 1 learner + 2 workers", "none", acc, run.wall, run.wall, "-")
    recipe2 = write_recipe(work, serve.url)
    run2 = Run(a.allot, work, recipe2, "base-nproc2", ["--nproc", "2"])
    if run2.wait() != 0:
        fail("undisturbed --nproc 2 run failed:\n" + run2.log()[-3000:])
    acc2 = account(run2)
    expect_whole(run2, acc2)
    out["nproc2"] = {"adapter_sha256": sha(run2.adapter()), "wall_s": run2.wall}
    row(work, "undisturbed, 2 learner ranks", "none", acc2, run2.wall, run2.wall, "-")
    with open(os.path.join(work, "baseline.json"), "w") as f:
        json.dump(out, f, indent=1)


def cpu_ticks(pid):
    try:
        fields = slurp(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return -1


def sc_learner_kill(a, work):
    """kill -9 of learner rank 1 mid-update, then of rank 0 mid-checkpoint-write; the launcher
    restarts both times from the last verified checkpoint."""
    base = baseline("nproc2")
    serve = Serve(a.allot, work)
    recipe = write_recipe(work, serve.url)
    run = Run(a.allot, work, recipe, "learner-kill", ["--nproc", "2", "--max-restarts", "2"])
    # Rank 1 mid-update: after step 1, the moment rank 1 computes (it idles while rank 0
    # collects the rollouts, then trains on its shard).
    wait_for(lambda: run.steps_done() >= 1 and 1 in run.rank_pids(), 300, "step 1", run.proc)
    pid1 = run.rank_pids()[1]
    before = cpu_ticks(pid1)
    while True:
        time.sleep(0.05)
        now = cpu_ticks(pid1)
        if now < 0:
            fail("rank 1 ended before it could be killed:\n" + run.log()[-3000:])
        if now - before >= 2:  # busy for most of the last 50 ms: its update
            break
        before = now
    step_at_kill = run.steps_done()
    os.kill(pid1, signal.SIGKILL)
    log(f"killed rank 1 (pid {pid1}) in its update after step {step_at_kill}")
    # Rank 0 mid-checkpoint-write: the restarted ranks' next checkpoint, caught in its staging
    # directory (core/checkpoint_store.h: staged, then renamed into place).
    ck = os.path.join(run.dir, "checkpoints")
    wait_for(lambda: len(re.findall(r"learner rank 0 of 2", run.log())) >= 2 and
             len(re.findall(r"learner rank 1 of 2", run.log())) >= 2, 120,
             "the restarted ranks", run.proc)
    pid0 = run.rank_pids()[0]
    staged = None
    until = time.time() + 300
    while time.time() < until and staged is None and run.proc.poll() is None:
        for n in os.listdir(ck):
            if n.startswith(".staging-"):
                staged = n
                break
        time.sleep(0.001)
    if staged is None:
        fail("no checkpoint was seen being written after the restart:\n" + run.log()[-3000:])
    os.kill(pid0, signal.SIGKILL)
    mid_write = os.path.isdir(os.path.join(ck, staged))
    verified_before = sorted(n for n in os.listdir(ck) if n.startswith("step-"))
    log(f"killed rank 0 (pid {pid0}) writing {staged} (still staged: {mid_write}); "
        f"checkpoints then: {verified_before}")
    code = run.wait()
    if code != 0:
        fail(f"run ended with {code}:\n" + run.log()[-4000:])
    acc = account(run)
    expect_whole(run, acc)
    restarts = acc["restarts"]
    if len(restarts) != 2:
        fail(f"{len(restarts)} restarts logged, 2 expected: {restarts}")
    if "rank 1 was killed by signal 9" not in restarts[0]["cause"]:
        fail("first restart's cause: " + restarts[0]["cause"])
    if "rank 0 was killed by signal 9" not in restarts[1]["cause"]:
        fail("second restart's cause: " + restarts[1]["cause"])
    if mid_write:
        # The interrupted checkpoint never became one: the previous verified one was used.
        newest = max(int(n[5:]) for n in verified_before)
        if restarts[1]["step"] != newest:
            fail(f"second restart from step {restarts[1]['step']}, the newest verified checkpoint "
                 f"was step {newest}")
    for line in ("restart 1 of 2: rank 1 was killed by signal 9",
                 "restart 2 of 2: rank 0 was killed by signal 9", "finished after 2 restarts"):
        if line not in run.log():
            fail(f"the launcher did not log '{line}':\n" + run.log()[-3000:])
    same = expect_same_adapter(run, base, "deterministic synchronous GRPO, --nproc 2")
    row(work, "learner kill -9: rank 1 mid-update, then rank 0 mid-checkpoint-write",
        "2 x SIGKILL (restarts from steps " +
        ", ".join(str(r["step"]) for r in restarts) + ")", acc, run.wall, base["wall_s"], same)


def remote_run(a, work, name, args=()):
    serve = Serve(a.allot, work)
    wa_proc, wa = start_worker(a.allot, work, "worker-a")
    wb_proc, wb = start_worker(a.allot, work, "worker-b")
    recipe = write_recipe(work, serve.url, workers=(wa, wb))
    run = Run(a.allot, work, recipe, name, args)
    return run, wa_proc, wb_proc, serve, recipe


def sc_worker_kill(a, work):
    """kill -9 of a rollout worker with episodes in flight: the ledger re-issues them."""
    base = baseline("remote")
    run, wa, _, _, _ = remote_run(a, work, "worker-kill")
    wait_for(lambda: run.steps_done() >= 1, 300, "step 1", run.proc)
    n = wait_for(lambda: in_flight(work, "worker-a"), 60, "episodes on worker-a", run.proc)
    os.killpg(wa.pid, signal.SIGKILL)
    log(f"killed worker-a with {n:.0f} episodes in flight")
    if run.wait() != 0:
        fail("run failed:\n" + run.log()[-3000:])
    acc = account(run)
    expect_whole(run, acc)
    if acc["redispatched"] < 1 or acc["worker_losses"] < 1:
        fail(f"the kill did not catch episodes in flight (redispatched {acc['redispatched']}, "
             f"worker losses {acc['worker_losses']})")
    same = expect_same_adapter(run, base, "episodes are seeded per draw, not per worker")
    row(work, "rollout worker kill -9 with episodes in flight",
        f"SIGKILL worker-a with {n:.0f} episodes in flight", acc, run.wall, base["wall_s"], same)


def sc_worker_stop(a, work):
    """A worker that hangs (SIGSTOP) past the heartbeat bound and comes back (SIGCONT)."""
    base = baseline("remote")
    run, wa, _, _, _ = remote_run(a, work, "worker-stop")
    addr_a = slurp(os.path.join(work, "worker-a.addr")).strip()
    wait_for(lambda: run.steps_done() >= 1, 300, "step 1", run.proc)
    wait_for(lambda: in_flight(work, "worker-a"), 60, "episodes on worker-a", run.proc)
    os.killpg(wa.pid, signal.SIGSTOP)
    stopped_at = run.steps_done()
    log(f"stopped worker-a after step {stopped_at} for 2.5 s")
    time.sleep(2.5)
    os.killpg(wa.pid, signal.SIGCONT)
    continued_at = run.steps_done()
    log(f"worker-a continues (step {continued_at} done)")
    if run.wait() != 0:
        fail("run failed:\n" + run.log()[-3000:])
    acc = account(run)
    expect_whole(run, acc)
    if acc["redispatched"] < 1:
        fail("the stop did not catch episodes in flight (nothing re-dispatched)")
    # Back: worker-a runs episodes of the steps after it continued.
    later = [o for o in jsonl(os.path.join(run.dir, "episodes.jsonl"))
             if o["step"] > continued_at + 1 and o["worker"] == addr_a]
    if not later:
        fail(f"worker-a ran no episode after it continued (steps after {continued_at + 1})")
    same = expect_same_adapter(run, base, "a late trajectory is dropped as a duplicate")
    row(work, "rollout worker SIGSTOP 2.5 s, then SIGCONT",
        f"SIGSTOP worker-a after step {stopped_at}, SIGCONT 2.5 s later; it ran {len(later)} "
        "episodes after", acc, run.wall, base["wall_s"], same)


def sc_endpoint_faults(a, work):
    """20% endpoint faults from tests/chaos/fault_proxy.py in front of allot serve."""
    base = baseline("remote")
    serve = Serve(a.allot, work)
    stats = os.path.join(work, "proxy-stats.json")
    proxy_log = os.path.join(work, "proxy.log")
    proxy = start([sys.executable, os.path.join(ROOT, "tests", "chaos", "fault_proxy.py"),
                   "--upstream", serve.url, "--rate", "0.2", "--seed", "7", "--stats", stats],
                  proxy_log)
    m = wait_for(lambda: re.search(r"listening on (http://[0-9.:]+)", slurp(proxy_log)), 30,
                 "fault proxy", proxy)
    _, wa = start_worker(a.allot, work, "worker-a")
    _, wb = start_worker(a.allot, work, "worker-b")
    recipe = write_recipe(work, m.group(1), workers=(wa, wb))
    run = Run(a.allot, work, recipe, "endpoint-faults")
    if run.wait() != 0:
        fail("run failed:\n" + run.log()[-3000:])
    os.kill(proxy.pid, signal.SIGTERM)
    proxy.wait(timeout=10)
    faults = json.loads(slurp(stats) or "{}")
    acc = account(run)
    expect_whole(run, acc)
    injected = sum(v for k, v in faults.items() if k != "forwarded")
    if injected < 5:
        fail(f"the proxy injected only {injected} faults: {faults}")
    if acc["failed"] == 0:
        same = expect_same_adapter(run, base, "every call succeeded on a retry")
    else:
        same = f"differs ({acc['failed']} episodes failed: {acc['reasons']})"
    row(work, "20% endpoint faults (fault_proxy.py)",
        ", ".join(f"{k} {v}" for k, v in sorted(faults.items())), acc, run.wall, base["wall_s"],
        same)


def sc_full_disk(a, work):
    """A full tmpfs for the checkpoint directory during a save: the run fails with a clear
    message, the previous checkpoint stays valid and a resume from it ends where the
    undisturbed run ends."""
    base = baseline("remote")
    if os.geteuid() != 0 or shutil.which("mount") is None:
        raise Skip("mounting a tmpfs needs root and mount(8)")
    serve = Serve(a.allot, work)
    _, wa = start_worker(a.allot, work, "worker-a")
    _, wb = start_worker(a.allot, work, "worker-b")
    recipe = write_recipe(work, serve.url, workers=(wa, wb))
    # The size of one checkpoint, from the undisturbed run's.
    ref = sorted(glob.glob(os.path.join(SHARED, "runs", "base-remote", "checkpoints", "step-*")))
    if not ref:
        raise Skip("no undisturbed checkpoint to size the tmpfs by")
    one = sum(os.path.getsize(p) for p in glob.glob(ref[0] + "/**", recursive=True)
              if os.path.isfile(p))
    size_kb = (one * 3 // 2) // 1024 + 8  # one checkpoint fits, two do not
    run = Run(a.allot, work, recipe, "full-disk")
    ck = os.path.join(run.dir, "checkpoints")
    # Mounted over the run's checkpoint directory as soon as allot train has made it (the first
    # checkpoint follows the first step, seconds later).
    wait_for(lambda: os.path.isdir(ck), 120, "the run directory", run.proc)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "chaos-ckpt", ck],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.killpg(run.proc.pid, signal.SIGKILL)
        raise Skip("cannot mount a tmpfs: " + r.stderr.strip())
    _cleanups.append(lambda: subprocess.run(["umount", "-l", ck], check=False))
    if os.listdir(ck) or run.steps_done() > 0:
        fail("the tmpfs was mounted too late: the run had saved a checkpoint already")
    t0 = run.t0
    code = run.wait()
    text = run.log()
    if code == 0:
        fail("the run passed with a full checkpoint disk:\n" + text[-3000:])
    if "No space left on device" not in text or ck not in text:
        fail("the failure does not say the disk is full, naming the path:\n" + text[-3000:])
    steps = sorted(n for n in os.listdir(ck) if n.startswith("step-"))
    leftovers = [n for n in os.listdir(ck) if n.startswith(".staging-")]
    if steps != ["step-%012d" % 1]:
        fail(f"checkpoints after the failed save: {steps}")
    if leftovers:
        fail(f"the failed save left {leftovers} on the full disk")
    message = next((l for l in text.splitlines() if "No space left" in l), "")
    log("the failure: " + message)
    # Room again: the resume verifies step 1 and ends where the undisturbed run ends.
    subprocess.run(["mount", "-o", f"remount,size={size_kb * 8}k", ck], check=True)
    p2 = start([a.allot, "resume", "full-disk", "--output-dir", os.path.join(work, "runs")],
               os.path.join(work, "full-disk-resume.log"))
    if p2.wait(timeout=600) != 0:
        fail("resume after the full disk failed:\n" +
             slurp(os.path.join(work, "full-disk-resume.log"))[-3000:])
    wall = time.time() - t0

    class R:  # noqa: the run's records, as Run gives them
        name = "full-disk"
        dir = run.dir

        def adapter(self):
            return os.path.join(ck, "step-%012d" % STEPS, "adapter", "adapter_model.safetensors")

    acc = account(R())
    expect_whole(R(), acc)
    same = expect_same_adapter(R(), base, "resumed from the checkpoint the full disk left")
    row(work, "full checkpoint disk (tmpfs) during the step-2 save, then resume",
        f"ENOSPC: {size_kb} KiB tmpfs; the run fails: \"saving checkpoint step 2: write ...: No "
        "space left on device\"", acc, wall, base["wall_s"], same)


def sc_corrupt_checkpoint(a, work):
    """A corrupted newest checkpoint at resume: the previous verified one is used."""
    base = baseline("remote")
    src = os.path.join(SHARED, "runs", "base-remote")
    if not os.path.isdir(src):
        raise Skip("no undisturbed run to corrupt")
    dst = os.path.join(SHARED, "runs", "corrupt")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    newest = os.path.join(dst, "checkpoints", "step-%012d" % STEPS)
    target = os.path.join(newest, "adapter", "adapter_model.safetensors")
    with open(target, "r+b") as f:
        f.seek(os.path.getsize(target) - 3)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x55]))
    serve = Serve(a.allot, work)
    _, wa = start_worker(a.allot, work, "worker-a")
    _, wb = start_worker(a.allot, work, "worker-b")
    # The copied run's config names base-remote's workers and endpoint: these replace them.
    moved = ["--set", f"rollout.dispatcher.workers=[{wa},{wb}]"]
    moved += ["--set", "endpoints=[" + ", ".join(
        f'{{name: {n}, base_url: "{serve.url}", model: tiny, params_b: 0.001, limits: '
        '{deadline_s: 60, timeout_s: 30, backoff_initial_s: 0.05}}'
        for n in ("router", "medium", "large")) + "]"]
    t0 = time.time()
    logf = os.path.join(work, "corrupt.log")
    p = start([a.allot, "resume", "corrupt", "--output-dir", os.path.join(SHARED, "runs"), *moved],
              logf)
    code = p.wait(timeout=600)
    text = slurp(logf)
    if code != 0:
        fail("resume failed:\n" + text[-3000:])
    if f"resumed at step {STEPS - 1}" not in text:
        fail(f"the resume did not go back to step {STEPS - 1}:\n" + text[-3000:])
    if not re.search(r"skipping checkpoint \S*step-%012d.*sha256 does not match" % STEPS, text):
        fail("the resume did not say which checkpoint it skipped and why:\n" + text[-3000:])

    class R:
        name = "corrupt"
        dir = dst

        def adapter(self):
            return target

    acc = account(R())
    expect_whole(R(), acc)
    same = expect_same_adapter(R(), base, "step 3 trained again from the verified step 2")
    row(work, "corrupted newest checkpoint at resume", f"1 byte of step {STEPS}'s adapter flipped (resume: 1 step)", acc,
        time.time() - t0, base["wall_s"], same)


SCENARIOS = {
    "baseline": sc_baseline,
    "learner_kill": sc_learner_kill,
    "worker_kill": sc_worker_kill,
    "worker_stop": sc_worker_stop,
    "endpoint_faults": sc_endpoint_faults,
    "full_disk": sc_full_disk,
    "corrupt_checkpoint": sc_corrupt_checkpoint,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allot", required=True)
    ap.add_argument("--work", required=True, help="shared by the scenarios (baseline, table)")
    ap.add_argument("scenario", choices=sorted(SCENARIOS) + ["partition"])
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    atexit.register(cleanup)
    if not os.path.exists(os.path.join(T0, "model.safetensors")):
        print(f"SKIP: no tiny-world tier at {T0} (scripts/make_tiny_world.sh)")
        return 77
    os.makedirs(a.work, exist_ok=True)
    global SHARED
    SHARED = os.path.abspath(a.work)
    work = os.path.join(a.work, a.scenario)
    if a.scenario == "baseline":
        work = a.work
    else:
        unmount_under(work)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    if a.scenario == "baseline":
        shutil.rmtree(os.path.join(work, "runs"), ignore_errors=True)
        for f in ("baseline.json", "table.md"):
            if os.path.exists(os.path.join(work, f)):
                os.remove(os.path.join(work, f))
    t0 = time.time()
    try:
        if a.scenario == "partition":
            sys.dont_write_bytecode = True  # no __pycache__ in the source tree
            from partition import sc_partition  # noqa: E402 (netns set-up lives apart)
            sc_partition(a, work, sys.modules[__name__])
        else:
            SCENARIOS[a.scenario](a, work if a.scenario == "baseline" else work)
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    log(f"{a.scenario}: passed in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
