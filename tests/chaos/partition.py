"""The chaos suite's partition scenario: learner-0, worker-a, worker-b and the endpoint as network
namespaces ("chaos-<pid>-<host>") on a bridge in a namespace of its own (the layout of
tests/multihost/hosts.sh); learner-0 and worker-a lose every packet between them for 10 s
(a blackhole route to the peer's address on both sides: iproute2 alone, where a kernel has
neither iptables nor tc's netem and prio qdiscs, as this project's CI machine has not), then the
link heals. Needs root and iproute2; otherwise skipped."""
import os
import re
import shutil
import subprocess
import time

PREFIX = f"chaos-{os.getpid()}"
SUBNET = f"10.{os.getpid() % 200 + 20}.{(os.getpid() // 200) % 250 + 1}"


def sh(*args, check=True):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


class Hosts:
    def __init__(self, c, names):
        self.ns = {}
        self.ip = {}
        self.made = []
        c._cleanups.append(self.down)
        hub = f"{PREFIX}-switch"
        sh("ip", "netns", "add", hub)
        self.made.append(hub)
        sh("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            ns = f"{PREFIX}-{name}"
            sh("ip", "netns", "add", ns)
            self.made.append(ns)
            sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}",
               "netns", hub)
            sh("ip", "-n", hub, "link", "set", f"p{i}", "master", "br0")
            sh("ip", "-n", hub, "link", "set", f"p{i}", "up")
            ip = f"{SUBNET}.{10 + i}"
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            self.ns[name], self.ip[name] = ns, ip

    def down(self):
        for ns in reversed(self.made):
            pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
            for p in pids:
                try:
                    os.kill(int(p), 9)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
        self.made = []

    def drop_between(self, a, b):
        """Every packet between a and b is lost: a blackhole route to the other on each side
        (packets dropped without an error, as a cut cable or a DROP rule would)."""
        for src, dst in ((a, b), (b, a)):
            sh("ip", "-n", self.ns[src], "route", "add", "blackhole", f"{self.ip[dst]}/32")

    def heal(self, a, b):
        for src, dst in ((a, b), (b, a)):
            sh("ip", "-n", self.ns[src], "route", "del", "blackhole", f"{self.ip[dst]}/32")


def sc_partition(a, work, c):
    base = c.baseline("remote")
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise c.Skip("a partition needs root and ip (iproute2)")
    probe = f"{PREFIX}-probe"
    if sh("ip", "netns", "add", probe, check=False).returncode != 0:
        raise c.Skip("cannot make network namespaces here")
    sh("ip", "netns", "del", probe, check=False)
    # Namespaces of an earlier run of this scenario that was killed before its cleanup.
    for line in sh("ip", "netns", "list", check=False).stdout.splitlines():
        m = re.match(r"(chaos-(\d+)-\S+)", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            sh("ip", "netns", "del", m.group(1), check=False)
    hosts = Hosts(c, ["learner-0", "worker-a", "worker-b", "endpoint"])

    def on(host, args):
        return ["ip", "netns", "exec", hosts.ns[host]] + args

    logf = os.path.join(work, "serve.log")
    serve = c.start(on("endpoint", [a.allot, "serve", "--model", c.T0, "--host",
                                    hosts.ip["endpoint"], "--port", "0", "--served-model-name",
                                    "tiny", "--threads", "1", "--max-batch", "1"]), logf)
    url = c.wait_for(lambda: re.search(r"listening on (http://[0-9.:]+)", c.slurp(logf)), 120,
                     "allot serve", serve).group(1)
    workers = []
    for w in ("worker-a", "worker-b"):
        _, addr = c.start_worker(a.allot, work, w, listen=f"{hosts.ip[w]}:0", netns=hosts.ns[w],
                                 token="chaos-partition")
        workers.append(addr)
    # Long enough to go on after the partition heals: its step STEPS is compared with the
    # undisturbed run's last.
    steps = 5 * c.STEPS
    recipe = c.write_recipe(work, url, steps=steps, workers=workers, token="chaos-partition")
    run = c.Run(a.allot, work, recipe, "partition", wrap=on("learner-0", []))
    c.wait_for(lambda: run.steps_done() >= 1, 300, "step 1", run.proc)
    hosts.drop_between("learner-0", "worker-a")
    cut_at = run.steps_done()
    c.log(f"partitioned learner-0 from worker-a for 10 s after step {cut_at}")
    time.sleep(10)
    hosts.heal("learner-0", "worker-a")
    healed_at = run.steps_done()
    c.log(f"healed at step {healed_at}")
    if healed_at >= steps - 2:
        c.fail(f"the run was at step {healed_at} of {steps} when the partition healed: too short "
               "to see worker-a come back")
    if run.wait() != 0:
        c.fail("run failed:\n" + run.log()[-3000:])
    acc = c.account(run, steps)
    c.expect_whole(run, acc, steps)
    during = [o for o in c.jsonl(os.path.join(run.dir, "episodes.jsonl"))
              if cut_at + 1 < o["step"] <= healed_at and o["worker"] == workers[0]]
    after = [o for o in c.jsonl(os.path.join(run.dir, "episodes.jsonl"))
             if o["step"] > healed_at + 1 and o["worker"] == workers[0]]
    if during:
        c.fail(f"worker-a delivered {len(during)} episodes while it was cut off")
    if not after:
        c.fail("worker-a ran no episode after the partition healed")
    if acc["redispatched"] < 1:
        c.fail("the partition caught no episode in flight (nothing re-dispatched)")
    got = c.sha(run.adapter(c.STEPS))
    if got != base["adapter_sha256"]:
        c.fail(f"step {c.STEPS}'s adapter differs from the undisturbed run's")
    same = f"step {c.STEPS} equal"
    c.row(work, "partition learner-0 / worker-a 10 s, healed",
          f"blackhole routes both ways after step {cut_at}, 10 s ({steps} steps; worker-a back "
          f"for {len(after)} episodes)", acc, run.wall,
          base["wall_s"] * steps / c.STEPS, same)
