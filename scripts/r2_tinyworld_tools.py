#!/usr/bin/env python3
"""Helpers of tests/scripts/tinyworld_r2_test.sh: R2-Reasoner's cold start in the tiny world.

  data SPLIT TEST TRAIN OUT_DIR N_EVAL N_ALLOC
      eval.jsonl        the items evaluated: with SPLIT test, N_EVAL decomposable test items,
                        round-robin over the difficulties; with SPLIT val, the validation items
                        (the settings are chosen on these; TEST is read only to check
                        that no validation question is a test question)
      val.jsonl         the validation split: N_EVAL decomposable train items, round-robin
                        over the difficulties, taken from the end of the train items' order
                        and held out of everything below (no cold-start example, no GRPO
                        prompt comes from them)
      train.jsonl       every other decomposable train item (the GRPO prompts)
      decomposer_in.jsonl   `allot r2 decomposer-data` input: each train item with its
                        reference decomposition as the one candidate: one operation per step
                        of its solution ("80 * 6", "9 * 6", "#1 + #2"; "#k" is result k)
      allocator_in.jsonl    `allot r2 allocator-data` input: N_ALLOC train items with those
                        subtasks and their reference results (the baseline's difficulty
                        prompts show the earlier ones; the grouped search labels them on the
                        pool)
  sft-mix DECOMPOSER ALLOCATOR OUT   the two roles' SFT examples in one file (one policy): 600
                        decomposer examples, each followed by an allocator one (cycled)
  check EVAL_JSON [EVAL_JSON...]      the table, and exit 0 when the allocator's accuracy is at
                        least the best single model's at a lower C_API, 1 when not
                        (several allocators, one per GRPO seed, "-- ALLOC_JSON..." after the
                        single models: exit 0 only when every one passes)

"Decomposable" is R2's domain in the tiny world: min_level <= 3 (no knowledge tool needed) and a
solution of two steps or more. Only the Python standard library is used.
"""
import json
import re
import sys

from quickstart_tools import round_robin  # scripts/: the tiny world's shared helpers


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def decomposable(item):
    return item.get("min_level", 1) <= 3 and item.get("solution", "").count("Step ") >= 2


STEP = re.compile(r"^Step \d+: (\d+) ([-+*]) (\d+) = (\d+)$")


def operations(item):
    """The item's solution steps ("Step i: a op b = c") as (operation, result) pairs, an
    operand that an earlier step computed written "#k" (its latest such step): what the R2
    executor fills in (configs/prompts/tinyworld/r2/subtask.txt's {{subtask_filled}}). None
    when a step is not an operation."""
    out = []
    for line in item.get("solution", "").split("\n"):
        if not line.startswith("Step "):
            continue
        m = STEP.match(line)
        if not m:
            return None
        a, op, b, c = m.groups()

        def ref(x):
            for k in range(len(out), 0, -1):
                if out[k - 1][1] == x:
                    return "#%d" % k
            return x
        out.append(("%s %s %s" % (ref(a), op, ref(b)), c))
    return out or None


def make_data(split, test, train, out_dir, n_eval, n_alloc):
    if split not in ("test", "val"):
        print(f"data: SPLIT must be test or val, got '{split}'", file=sys.stderr)
        return 2
    n_eval, n_alloc = int(n_eval), int(n_alloc)
    ordered = round_robin([r for r in rows(train) if decomposable(r)])
    # The validation split: the last n_eval of the round-robin order (every difficulty in turn
    # from the end), so that the cold start's and GRPO's first items stay those they were.
    val_ids = {r["id"] for r in round_robin(ordered[::-1])[:n_eval]}
    val_items = [r for r in ordered if r["id"] in val_ids]
    train_items = [r for r in ordered if r["id"] not in val_ids]
    test_items = round_robin([r for r in rows(test) if decomposable(r)])[:n_eval]
    # No validation question may be trained on or be a test question.
    shared = {r["question"] for r in val_items} & (
        {r["question"] for r in train_items} | {r["question"] for r in test_items})
    if shared:
        print(f"data: {len(shared)} validation questions are also train or test questions, "
              f"e.g. {sorted(shared)[0]!r}", file=sys.stderr)
        return 2
    eval_items = test_items if split == "test" else val_items
    with open(f"{out_dir}/eval.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in eval_items)
    with open(f"{out_dir}/val.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in val_items)
    with open(f"{out_dir}/train.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in train_items)
    ops = {r["id"]: operations(r) for r in train_items}
    subs = {k: [o for o, _ in v] for k, v in ops.items() if v}
    have = [r for r in train_items if r["id"] in subs]
    with open(f"{out_dir}/decomposer_in.jsonl", "w") as f:
        for r in have:
            cand = {"subtasks": subs[r["id"]], "tokens": 0, "incoherent_pairs": 0, "correct": True}
            f.write(json.dumps({"question": r["question"], "candidates": [cand]}) + "\n")
    # The allocator data: the first n_alloc of the same items (the decomposer data has them all).
    with open(f"{out_dir}/allocator_in.jsonl", "w") as f:
        for r in have[:n_alloc]:
            f.write(json.dumps({"question": r["question"], "answer": r["answer"],
                                "subtasks": subs[r["id"]],
                                "results": [c for _, c in ops[r["id"]]]}) + "\n")
    print(f"eval ({split}) {len(eval_items)}, validation {len(val_items)}, train "
          f"{len(train_items)}, decomposer {len(have)}, allocator {min(n_alloc, len(have))} items")
    return 0


def sft_mix(decomposer, allocator, out, n_decomposer=600):
    d, a = rows(decomposer), rows(allocator)
    # One policy, both roles: each decomposer example (the first n_decomposer: the decomposer
    # must learn the operations of every difficulty) followed by an allocator example, the few
    # grouped-search ones cycled.
    d = d[:max(n_decomposer, len(a))]
    mixed = []
    for i in range(max(len(d), len(a))):
        if i < len(d):
            mixed.append(d[i])
        if a:
            mixed.append(a[i % len(a)])
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in mixed)
    print(f"sft: {len(d)} decomposer + {len(a)} allocator examples ({len(mixed)} in all)")
    return 0


def check(args):
    # Without "--" the last allocator given is judged; with it, every allocator after it.
    judged_from = args.index("--") if "--" in args else None
    paths = [a for a in args if a != "--"]
    methods, judged = {}, []
    for i, p in enumerate(paths):
        for m in json.load(open(p)):
            name = m["method"]
            if name == "allocator":
                name = "allocator" + ("" if len(paths) == 1 else "@" + p.rsplit("/", 1)[-1])
                if judged_from is not None and i >= judged_from:
                    judged.append(name)
            methods[name] = m
    print(f"{'method':36s} {'n':>4s} {'acc':>6s} {'C_API $/task':>13s} {'total $/task':>13s}")
    for name, m in methods.items():
        print(f"{name:36s} {m['episodes']:4d} {m['accuracy']:6.3f} "
              f"{m['mean_api_cost_usd']:13.4e} {m['mean_cost_usd']:13.4e}")
    singles = {k: v for k, v in methods.items() if not k.startswith("allocator")}
    allocs = [k for k in methods if k.startswith("allocator")]
    if judged_from is None:
        judged = allocs[-1:]  # the last allocator given (the trained one)
    if not singles or not judged:
        print("check: need the allocator and at least one single model", file=sys.stderr)
        return 2
    # The best single model: the highest accuracy, the cheapest of those.
    best = min(singles, key=lambda k: (-singles[k]["accuracy"], singles[k]["mean_api_cost_usd"]))
    b = singles[best]
    passed = 0
    for name in judged:
        a = methods[name]
        ok = a["accuracy"] >= b["accuracy"] and a["mean_api_cost_usd"] < b["mean_api_cost_usd"]
        passed += ok
        print(f"best single model {best}: accuracy {b['accuracy']:.3f}, C_API "
              f"{b['mean_api_cost_usd']:.4e}; {name}: accuracy {a['accuracy']:.3f}, C_API "
              f"{a['mean_api_cost_usd']:.4e} -> {'PASS' if ok else 'FAIL'}")
    if len(judged) > 1:
        print(f"{passed} of {len(judged)} trained allocators pass")
    return 0 if passed == len(judged) else 1


def main(argv):
    cmd, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "data" and len(args) == 6:
        return make_data(*args)
    if cmd == "sft-mix" and len(args) == 3:
        return sft_mix(*args)
    if cmd == "check" and args:
        return check(args)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
