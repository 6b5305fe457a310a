#!/usr/bin/env python3
"""Helpers of tests/scripts/tinyworld_deeptool_test.sh: DeepTool's pipeline in the tiny world.

  experts IN OUT [--limit N] [--kinds arith,word]
      expert trajectories (envs/deeptool/expert_trajectory.h) from tiny-world items that carry
      an "expression": step 1 thinks "Compute <expression>." and runs `print(<expression>)`,
      its observation what that program prints; step 2 answers \\boxed{<answer>} (a choice
      item: the think names the option, the answer is its letter). Items of other kinds (the
      facts: DeepTool's env has only the code sandbox) are skipped.
  items IN OUT [--limit N] [--kinds arith,word]
      the items of those kinds, round-robin over the difficulties (the evaluation split)
  curve METRICS_JSONL
      the GRPO run's reward curve: per step the mean action reward (Eq. 6), the accuracy of the
      answer-step instances' outcome and the share of zero-variance groups, then the means of
      the first and last quarter
  check BASE_JSON COLD_JSON TRAINED_JSON
      the table of three `allot eval --method tir --json` files, and exit 0 when the trained
      policy is strictly more accurate than the cold start it was trained from, 1 when not

The expressions are evaluated here, not run: only digits, spaces, + - * ( ) are allowed, and
anything else is refused with the file and line. Only the Python standard library is used.
"""
import json
import re
import sys

from quickstart_tools import round_robin  # scripts/: the tiny world's shared helpers

ALLOWED = re.compile(r"^[0-9 +\-*()]+$")


class ExpressionError(ValueError):
    pass


def evaluate(expression):
    """The integer value of an expression of digits, spaces, + - * and parentheses, as Python
    computes it (unary minus included)."""
    if not ALLOWED.match(expression):
        bad = sorted(set(c for c in expression if not ALLOWED.match(c)))
        raise ExpressionError(f"only digits, spaces, + - * ( ) are allowed, not {bad!r}")
    tokens = re.findall(r"\d+|[+\-*()]", expression)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        if pos >= len(tokens):
            raise ExpressionError("ends early")
        pos += 1
        return tokens[pos - 1]

    def atom():
        t = take()
        if t == "(":
            v = total()
            if take() != ")":
                raise ExpressionError("unbalanced parentheses")
            return v
        if t == "-":
            return -atom()
        if t == "+":
            return atom()
        if t.isdigit():
            return int(t)
        raise ExpressionError(f"unexpected {t!r}")

    def product():
        v = atom()
        while peek() == "*":
            take()
            v *= atom()
        return v

    def total():
        v = product()
        while peek() in ("+", "-"):
            v = v + product() if take() == "+" else v - product()
        return v

    if not tokens:
        raise ExpressionError("empty")
    value = total()
    if pos != len(tokens):
        raise ExpressionError(f"unexpected {tokens[pos]!r}")
    return value


def read_items(path):
    """(line number, item) for every non-empty line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}:{n}: not valid JSON: {e}")
    return out


def selected(path, kinds, limit):
    items = [(n, it) for n, it in read_items(path) if it.get("kind") in kinds]
    items = round_robin(items, lambda numbered: numbered[1].get("difficulty", ""))
    return items[:limit] if limit > 0 else items


def expert(item, where):
    expression = item.get("expression")
    if not isinstance(expression, str) or not expression.strip():
        raise SystemExit(f"{where}: no expression")
    try:
        value = evaluate(expression)
    except ExpressionError as e:
        raise SystemExit(f"{where}: expression {expression!r}: {e}")
    answer = str(item["answer"])
    choices = item.get("choices") or []
    if choices:
        # A choice item's answer is the letter of the option that holds the value.
        at = ord(answer) - ord("A") if len(answer) == 1 else -1
        if not 0 <= at < len(choices) or str(choices[at]) != str(value):
            raise SystemExit(f"{where}: option {answer} is not {value} (choices {choices})")
        think = f"{value} is option {answer}."
    else:
        if str(value) != answer:
            raise SystemExit(f"{where}: expression {expression!r} gives {value}, answer {answer}")
        think = f"The result is {value}."
    t = {"id": item.get("id", where), "question": item["question"], "answer": answer,
         "steps": [{"think": f"Compute {expression}.", "code": f"print({expression})",
                    "observation": str(value)},
                   {"think": think, "answer": "\\boxed{" + answer + "}"}]}
    for key in ("kind", "difficulty", "answer_format"):
        if key in item:
            t[key] = item[key]
    if choices:
        t["options"] = choices  # env deeptool lists them under the question as "A) ..."
    return t


def options(args):
    """(positional args, limit, kinds)"""
    pos, limit, kinds = [], 0, ["arith", "word"]
    i = 0
    while i < len(args):
        if args[i] == "--limit":
            limit = int(args[i + 1])
            i += 2
        elif args[i] == "--kinds":
            kinds = [k for k in args[i + 1].split(",") if k]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    return pos, limit, kinds


def experts(args):
    (src, dst), limit, kinds = options(args)
    items = selected(src, kinds, limit)
    with open(dst, "w") as f:
        for n, it in items:
            f.write(json.dumps(expert(it, f"{src}:{n}")) + "\n")
    print(f"wrote {len(items)} expert trajectories ({','.join(kinds)}) to {dst}")


def items(args):
    (src, dst), limit, kinds = options(args)
    chosen = selected(src, kinds, limit)
    with open(dst, "w") as f:
        f.writelines(json.dumps(it) + "\n" for _, it in chosen)
    print(f"wrote {len(chosen)} items ({','.join(kinds)}) to {dst}")


def curve(path):
    rows = []
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if "reward/action/mean" in j:
                rows.append(j)
    if not rows:
        raise SystemExit(f"{path}: no reward/action/mean")
    print("step  action  accuracy  zero-var groups  failed")
    for j in rows:
        print(f"{int(j['step']):4d}  {j['reward/action/mean']:6.3f}  "
              f"{j.get('reward/accuracy/mean', 0.0):8.3f}  {int(j.get('groups/zero_variance', 0)):15d}"
              f"  {int(j.get('episodes/failed', 0)):6d}")
    q = max(1, len(rows) // 4)
    mean = lambda part, key: sum(r.get(key, 0.0) for r in part) / len(part)
    print(f"action reward: first {q} steps {mean(rows[:q], 'reward/action/mean'):.3f}, "
          f"last {q} steps {mean(rows[-q:], 'reward/action/mean'):.3f}")


def check(paths):
    names = ["base t0", "cold start (SFT)", "GRPO"]
    results = []
    for name, p in zip(names, paths):
        with open(p) as f:
            r = json.load(f)
        results.append((name, r[0] if isinstance(r, list) else r))
    print(f"{'policy':17s} {'n':>4s} {'accuracy':>8s} {'answered':>8s} {'malformed':>9s} "
          f"{'failed':>6s} {'steps':>5s} {'code runs':>9s} {'tokens':>6s} {'cost $/problem':>14s}")
    for name, r in results:
        print(f"{name:17s} {int(r.get('episodes', 0)):4d} {float(r.get('accuracy', 0.0)):8.3f} "
              f"{int(r.get('answered', 0)):8d} {int(r.get('malformed', 0)):9d} "
              f"{int(r.get('failed', 0)):6d} {float(r.get('steps_per_problem', 0.0)):5.2f} "
              f"{float(r.get('code_runs_per_problem', 0.0)):9.2f} "
              f"{float(r.get('tokens_per_problem', 0.0)):6.0f} "
              f"{float(r.get('mean_cost_usd', 0.0)):14.3e}")
    by = {}
    for col, (_, r) in enumerate(results):
        for it in r.get("items", []):
            d = by.setdefault(it.get("difficulty", "?"), [[0, 0] for _ in results])
            d[col][0] += 1 if it.get("correct") else 0
            d[col][1] += 1
    if by:
        print("correct/items by difficulty: " + "; ".join(
            f"{d} " + " ".join(f"{c}/{n}" for c, n in by[d]) for d in sorted(by)))
    # GRPO is judged against what it started from: the cold start, not the untrained base.
    cold, trained = float(results[1][1]["accuracy"]), float(results[-1][1]["accuracy"])
    return 0 if trained > cold else 1


def main(argv):
    cmd, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "experts" and len(args) >= 2:
        experts(args)
    elif cmd == "items" and len(args) >= 2:
        items(args)
    elif cmd == "curve" and len(args) == 1:
        curve(args[0])
    elif cmd == "check" and len(args) == 3:
        return check(args)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
