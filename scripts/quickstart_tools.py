#!/usr/bin/env python3
"""Helpers of scripts/quickstart.sh (standard library only).

  data-ok DIR MANIFEST                   exit 0 when every file of MANIFEST is in DIR unchanged
  split-data TEST TRAIN OUT_DIR N SEED   eval subset (N items spread over every difficulty) and
                                         a seeded shuffle of the training items
  wait-http URL SECONDS                  until GET URL answers 200
  latest-adapter BASE_URL PREFIX         the newest "<PREFIX>-v<N>" listed by BASE_URL/v1/models
  train-summary METRICS                  reward and cost per episode, first and last quarter
  keep-tool-free JSONL...                keep the items solvable without a tool (min_level <= 3)
  add-items TEST TRAIN OUT_DIR N SEED    append N items of TEST (a stride) to the eval subset
                                         and its shards, and TRAIN's items, shuffled, to the
                                         training items, difficulties interleaved again (RLoT:
                                         the long sums of long_test.jsonl / long_train.jsonl)
  rlot-table OUT BEFORE.json... -- AFTER.json...
                                         RLoT's table: direct, cot, the fixed block sequences
                                         (the best marked) and the trained navigator
  rlot-own-sequences N AFTER.json... -- BEFORE.json...
                                         the trained navigator's N commonest block patterns as
                                         fixed:... methods, those not evaluated yet
"""
import hashlib
import itertools
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request


EVAL_SHARDS = 3  # scripts/quickstart.sh runs one `allot eval` per method and shard


def data_ok(data_dir, manifest):
    with open(manifest) as f:
        files = json.load(f).get("files", {})
    for name, entry in files.items():
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            return 1
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != entry.get("sha256"):
            return 1
    return 0 if files else 1


def read_rows(path):
    with open(path) as f:
        return [line for line in f if line.strip()]


def write_data(test, train, out_dir, n, seed, append):
    """N items of TEST (a stride) into eval.jsonl and its shards, TRAIN's items shuffled into
    train.jsonl, the difficulties interleaved; with `append`, after what is there already.
    Returns (items taken, test items, train items written)."""
    items = read_rows(test)
    n = min(int(n), len(items))
    # The test split is ordered by difficulty: a stride keeps every bucket in the subset.
    subset = [items[(i * len(items)) // n] for i in range(n)]
    mode = "a" if append else "w"
    with open(f"{out_dir}/eval.jsonl", mode) as f:
        f.writelines(subset)
    # Shards for parallel `allot eval` processes (every shard spans every difficulty).
    for k in range(EVAL_SHARDS):
        with open(f"{out_dir}/eval-{k}.jsonl", mode) as f:
            f.writelines(subset[k::EVAL_SHARDS])
    rows = read_rows(train)
    random.Random(int(seed)).shuffle(rows)
    if append:
        rows = read_rows(f"{out_dir}/train.jsonl") + rows
    rows = interleave_difficulties(rows)
    with open(f"{out_dir}/train.jsonl", "w") as f:
        f.writelines(rows)
    return n, len(items), len(rows)


def split_data(test, train, out_dir, n, seed):
    n, total, rows = write_data(test, train, out_dir, n, seed, append=False)
    print(f"eval subset: {n} of {total} test items; train: {rows} shuffled, "
          "difficulties interleaved")


def add_items(test, train, out_dir, n, seed):
    n, total, _ = write_data(test, train, out_dir, n, seed, append=True)
    print(f"added {n} of {total} items of {os.path.basename(test)} to the eval subset and "
          f"the items of {os.path.basename(train)} to the training items")


def interleave_difficulties(rows):
    """Round-robin over the items' difficulties (each bucket keeps its shuffled order).

    GRPO draws prompts in file order. With the buckets interleaved, every step's prompts span
    the difficulties, so each update weighs the queries that only a large level answers against
    those a small one handles; in plain shuffled order many steps hold no such query at all, and
    the optimizer follows the steps that only say "cheaper". The router never sees the field."""
    buckets = {}
    for r in rows:
        buckets.setdefault(json.loads(r).get("difficulty", ""), []).append(r)
    rounds = itertools.zip_longest(*buckets.values())
    return [r for one_round in rounds for r in one_round if r is not None]


def round_robin(items, difficulty=lambda item: item.get("difficulty", "")):
    """The items one per difficulty in turn, the difficulties in sorted order, each keeping its
    own order: the first N items span every difficulty (the result tests' subsets)."""
    by = {}
    for it in items:
        by.setdefault(difficulty(it), []).append(it)
    out, k = [], 0
    while any(k < len(v) for v in by.values()):
        for d in sorted(by):
            if k < len(by[d]):
                out.append(by[d][k])
        k += 1
    return out


def wait_http(url, seconds):
    deadline = time.time() + float(seconds)
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return 0
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    print(f"{url}: no answer within {seconds} s", file=sys.stderr)
    return 1


def latest_adapter(base_url, prefix):
    with urllib.request.urlopen(base_url.rstrip("/") + "/v1/models", timeout=10) as r:
        models = json.load(r).get("data", [])
    best, best_v = None, -1
    for m in models:
        name = m.get("id", "")
        head = prefix + "-v"
        if name.startswith(head) and name[len(head):].isdigit():
            v = int(name[len(head):])
            if v > best_v:
                best, best_v = name, v
    if best is None:
        print(f"{base_url}: no adapter named {prefix}-v<N> is served", file=sys.stderr)
        return 1
    print(best)
    return 0


def filter_items(path, keep, what):
    """Keeps the JSONL items of `path` for which keep(item) holds, in place: (kept, all), or None
    (and a message) when none is left."""
    with open(path) as f:
        rows = [line for line in f if line.strip()]
    kept = [r for r in rows if keep(json.loads(r))]
    if not kept:
        print(f"{path}: no item {what}", file=sys.stderr)
        return None
    with open(path, "w") as f:
        f.writelines(kept)
    return len(kept), len(rows)


def keep_tool_free(paths):
    # RLoT's logic blocks call no tool, and the tiny world taught them only on the items that
    # need none (tinyworld/sft_records.cc): the items that need the knowledge tool (min_level
    # 4) score 0 under every method and would only add minutes. A data filter, never seen by
    # the navigator.
    for path in paths:
        counts = filter_items(path, lambda j: j.get("min_level", 1) <= 3, "with min_level <= 3")
        if counts is None:
            return 1
        print(f"{os.path.basename(path)}: {counts[0]} of {counts[1]} items need no tool")
    return 0


def load_rlot(paths):
    """Per-method RLoT reports (`allot eval --json` of an rlot recipe), the shards summed."""
    merged = {}
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        m = merged.setdefault(r["method"], {"method": r["method"], "problems": 0, "voted": 0.0,
                                            "trails": r["trails"], "trail_total": 0,
                                            "trail_correct": 0.0, "failed": 0, "tokens": 0,
                                            "cost_usd": 0.0, "blocks": 0.0, "patterns": {},
                                            "solved": set(), "item_ids": set()})
        n, t = r["problems"], r["problems"] * r["trails"]
        m["problems"] += n
        m["voted"] += r["self_consistent_accuracy"] * n
        m["trail_total"] += t
        m["trail_correct"] += r["trail_accuracy"] * t
        m["failed"] += r["failed_trails"]
        m["tokens"] += r["prompt_tokens"] + r["completion_tokens"]
        m["cost_usd"] += r["cost_usd"]
        m["blocks"] += r["mean_blocks"] * t
        for by_len in r.get("patterns", {}).values():
            for pat, c in by_len.items():
                m["patterns"][pat] = m["patterns"].get(pat, 0) + c
        for item in r.get("items", []):  # per problem, from allot builds that keep them
            m["item_ids"].add(item["id"])
            if item["voted_correct"]:
                m["solved"].add(item["id"])
    for m in merged.values():
        n, t = max(m["problems"], 1), max(m["trail_total"], 1)
        m.update(accuracy=m["voted"] / n, trail_accuracy=m["trail_correct"] / t,
                 tokens_per_problem=m["tokens"] / n, cost_per_problem=m["cost_usd"] / n,
                 mean_blocks=m["blocks"] / t)
    return merged


def best_fixed(results):
    """The most accurate fixed block sequence (self-consistent accuracy; fewer tokens on a tie)."""
    fixed = [r for m, r in results.items() if m.startswith("fixed:")]
    return max(fixed, key=lambda r: (r["accuracy"], -r["tokens_per_problem"])) if fixed else None


def rlot_own_sequences(n, args):
    """The navigator's commonest block patterns as fixed sequences, for the baselines: a
    navigator that learned one fixed sequence then ties it instead of beating a list of others."""
    split = args.index("--")
    after, before = load_rlot(args[:split]), load_rlot(args[split + 1:])
    if "navigator" not in after:
        print("rlot-own-sequences: no navigator evaluation in " + " ".join(args[:split]),
              file=sys.stderr)
        return 1
    pats = sorted(after["navigator"]["patterns"].items(), key=lambda kv: (-kv[1], kv[0]))
    methods = ["fixed:" + p.lower() for p, _ in pats]
    for m in [m for m in methods if m not in before][:int(n)]:
        print(m)
    return 0


def rlot_problem_lines(before, after):
    """Problem by problem: how much any choice of fixed sequence per problem could gain (the
    oracle that knows the answers, the ceiling for a navigator that only picks among them), and
    what the trained navigator wins and loses against the best fixed sequence."""
    fixed = [r for m, r in before.items() if m.startswith("fixed:")]
    if not fixed or any(not r["item_ids"] for r in fixed):
        return []  # reports without per-problem items
    ids = set.intersection(*(r["item_ids"] for r in fixed))
    oracle = set.union(*(r["solved"] for r in fixed)) & ids
    best = best_fixed(before)
    lines = [f"per-problem best of the {len(fixed)} fixed sequences (an oracle that knows the "
             f"answers, not a method): {len(oracle)} of {len(ids)}; best single sequence "
             f"{len(best['solved'] & ids)}"]
    nav = after.get("navigator")
    if nav is not None and nav["item_ids"]:
        won = (nav["solved"] - best["solved"]) & ids
        lost = (best["solved"] - nav["solved"]) & ids
        beyond = (nav["solved"] - oracle) & ids
        lines.append(f"trained navigator against {best['method']}: wins {len(won)} problems, "
                     f"loses {len(lost)}; solves {len(beyond)} that no fixed sequence solves")
    return lines


def rlot_table(out_dir, args):
    split = args.index("--")
    before, after = load_rlot(args[:split]), load_rlot(args[split + 1:])
    best = best_fixed(before)
    rows = [(m, before[m]) for m in ("direct", "cot", "cot-sc") if m in before]
    rows += sorted(((m, r) for m, r in before.items() if m.startswith("fixed:")),
                   key=lambda mr: mr[0])
    rows += [("navigator (untrained)", before["navigator"])] if "navigator" in before else []
    rows += [("navigator (trained)", after["navigator"])] if "navigator" in after else []
    marked = [(label + (" (best fixed)" if best is not None and r is best else ""), r)
              for label, r in rows]
    w = max([34] + [len(label) + 1 for label, _ in marked])  # long fixed:... patterns
    lines = [f"{'method':<{w}} {'n':>4} {'accuracy':>8} {'trail acc':>9} {'failed':>6} "
             f"{'blocks':>6} {'tokens/problem':>14} {'cost $/problem':>14}"]
    for label, r in marked:
        lines.append(f"{label:<{w}} {r['problems']:>4} {r['accuracy']:>8.3f} "
                     f"{r['trail_accuracy']:>9.3f} {r['failed']:>6} {r['mean_blocks']:>6.2f} "
                     f"{r['tokens_per_problem']:>14.0f} {r['cost_per_problem']:>14.3e}")
    if "navigator" in after:
        pats = sorted(after["navigator"]["patterns"].items(), key=lambda kv: -kv[1])[:6]
        lines.append("trained navigator's block patterns (trails): " +
                     (", ".join(f"{p} {c}" for p, c in pats) or "none (answered at once)"))
    lines += rlot_problem_lines(before, after)
    text = "\n".join(lines) + "\n"
    with open(f"{out_dir}/table.txt", "w") as f:
        f.write(text)
    print(text, end="")
    return 0


def train_summary(metrics):
    rows = []
    with open(metrics) as f:
        for line in f:
            try:
                j = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "reward/mean" in j:
                rows.append(j)
    if not rows:
        print(f"{metrics}: no reward/mean logged", file=sys.stderr)
        return 1
    q = max(len(rows) // 4, 1)

    def mean(part, key):
        vals = [r[key] for r in part if isinstance(r.get(key), (int, float))]
        return sum(vals) / len(vals) if vals else float("nan")
    cost_key = next((k for k in ("cost_usd_per_episode", "cost/usd_per_episode")
                     if any(k in r for r in rows)), None)
    for label, part in (("first", rows[:q]), ("last", rows[-q:])):
        line = f"{label} {len(part)} steps: reward/mean {mean(part, 'reward/mean'):.3f}"
        if cost_key:
            line += f", {cost_key} {mean(part, cost_key):.3e}"
        print(line)
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "data-ok" and len(args) == 2:
        return data_ok(*args)
    if cmd == "split-data" and len(args) == 5:
        split_data(*args)
        return 0
    if cmd == "wait-http" and len(args) == 2:
        return wait_http(*args)
    if cmd == "latest-adapter" and len(args) == 2:
        return latest_adapter(*args)
    if cmd == "train-summary" and len(args) == 1:
        return train_summary(*args)
    if cmd == "add-items" and len(args) == 5:
        add_items(*args)
        return 0
    if cmd == "keep-tool-free" and args:
        return keep_tool_free(args)
    if cmd == "rlot-table" and len(args) >= 3 and "--" in args:
        return rlot_table(args[0], args[1:])
    if cmd == "rlot-own-sequences" and len(args) >= 3 and "--" in args:
        return rlot_own_sequences(args[0], args[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
