#!/usr/bin/env python3
"""Evaluates the tiny world's model pool over real HTTP.

For each tier in assets/tinyworld/pool/manifest.json it starts `allot serve` on a free loopback
port, asks the test split greedily through POST /v1/completions, stops the server, and prints
accuracy per difficulty (add1 add2 mul21 mul22 word mul33 fact fact2) and per format:

  direct     "Answer directly."                     graded on the final \\boxed{}
  cot        "Think step by step."                  graded on the final \\boxed{}
  tool       CoTool (CogER Sec. 4.4, Algorithm 1): generate until <|end_tool_query|>, run the
             tool (search: the best page of an SQLite FTS5 index of corpus.jsonl; calculate:
             the arithmetic), ask the same model to read the output (the reason_in_tool
             format), insert <|begin_tool_result|> reading <|end_tool_result|>, continue
  tool_query the share of tool items whose first query is the reference's, word for word
  tool_entity the share of fact items whose first query contains the entity's name (copied from
             the question; the tiers never saw a test entity)
  route      CogER App. B.1 level tag: the share of well-formed tags (the SFT labels are
             random levels, so only the format is learned)
  self_eval  RLoT Table 1: the share of replies with all seven "K score=S reason=..." lines,
             and of those that score a correct newest step A3=3 (arithmetic steps)
  steps      where chains break, teacher-forced: step k of the reference chain asked with RLoT's
             Reason prompt after the reference steps before it (rows step1, step2, ...), and
             the final answer asked with the Terminate prompt after the whole chain (final)
  ops        each reference step's operation asked on its own as the step drill asks it
             ("What is 24 - 9?" answered directly; rows op1, op2, ...): is a wrong step the
             arithmetic or the chain?

Only the Python standard library is used. Example:
  scripts/eval_tiny_pool.py --data runs/tinyworld/data --limit 50 --json runs/pool_eval.json
"""
import argparse
import concurrent.futures as futures
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

DIFFICULTIES = ["add1", "add2", "mul21", "mul22", "word", "mul33", "fact", "fact2"]
# The strings of tinyworld/formats.h and rlot_templates.h.
ASK = {
    "direct": "Answer directly.",
    "cot": "Think step by step.",
    "tool": "Think step by step; use a tool when needed.",
    "route": "Classify the level L1-L4.",
}
ASK_READ_TOOL = "Say what the tool output tells."
TOOL_QUERY_OPEN, TOOL_QUERY_CLOSE = "<|begin_tool_query|>", "<|end_tool_query|>"
TOOL_RESULT_OPEN, TOOL_RESULT_CLOSE = "<|begin_tool_result|>", "<|end_tool_result|>"
SELF_EVAL_KEYS = ["A1", "A2", "A3", "B1", "B2", "C1", "C2"]
MAX_TOKENS = {"direct": 48, "cot": 256, "tool": 256, "read": 96, "route": 48, "self_eval": 256,
              "steps": 48}


def prompt(question, context, ask):
    """Prompt() of formats.h: question, optional context line(s), the one-line instruction."""
    return question + "\n" + (context + "\n" if context else "") + ask + "\n"


def full_question(item):
    """datasets/ Example::PromptText(): the options as "A) ..." lines after a blank line."""
    q = item["question"]
    if item.get("choices"):
        q += "\n\n" + "\n".join(
            "%s) %s" % (chr(ord("A") + i), c) for i, c in enumerate(item["choices"]))
    return q


def last_boxed(text):
    """The content of the last \\boxed{...} (balanced braces), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    out = []
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return "".join(out).strip()
        out.append(c)
        i += 1
    return None


def correct(reply, answer):
    got = last_boxed(reply)
    return got is not None and got.strip().lower() == str(answer).strip().lower()


class Knowledge:
    """The knowledge search of the eval's CoTool: an SQLite FTS5 index over corpus.jsonl."""

    def __init__(self, corpus_path):
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE VIRTUAL TABLE pages USING fts5(title, text)")
        with open(corpus_path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        self.db.executemany("INSERT INTO pages VALUES (?, ?)", [(r["title"], r["text"]) for r in rows])

    def search(self, query):
        words = re.findall(r"[A-Za-z0-9]+", query)
        if not words:
            return "no result"
        match = " OR ".join('"%s"' % w for w in words)
        row = self.db.execute(
            "SELECT text FROM pages WHERE pages MATCH ? ORDER BY bm25(pages, 10.0, 1.0) LIMIT 1",
            (match,)).fetchone()
        return row[0] if row else "no result"


def calculate(expression):
    if not re.fullmatch(r"[0-9+\-*/() ]+", expression):
        return "error: not an arithmetic expression"
    try:
        value = eval(expression, {"__builtins__": {}}, {})  # digits and operators only
    except Exception as e:  # noqa: BLE001 - a bad expression is the model's mistake
        return "error: %s" % e
    return str(int(value)) if float(value).is_integer() else str(value)


class Server:
    """`allot serve` for one tier on a free loopback port; stopped on exit."""

    def __init__(self, allot, model_dir, threads, name):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.name = name
        self.proc = subprocess.Popen(
            [allot, "serve", "--model", model_dir, "--port", str(self.port), "--threads",
             str(threads), "--served-model-name", name, "--max-batch", "32"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.url = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("allot serve for %s exited: %s" %
                                   (model_dir, self.proc.stderr.read().decode()[-2000:]))
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        self.close()
        raise RuntimeError("allot serve for %s did not come up on %s" % (model_dir, self.url))

    def complete(self, text, max_tokens):
        body = json.dumps({"model": self.name, "prompt": text, "max_tokens": max_tokens,
                           "temperature": 0.0}).encode()
        req = urllib.request.Request(self.url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            reply = json.loads(r.read())
        return reply["choices"][0]["text"], reply.get("usage", {}).get("completion_tokens", 0)

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def run_tool(server, knowledge, item, max_calls=4):
    """CoTool over HTTP: returns the whole chain (with inserted results) and the queries."""
    q = full_question(item)
    start = prompt(q, "", ASK["tool"])
    done, queries = "", []
    while True:
        segment, _ = server.complete(start + done, MAX_TOKENS["tool"])
        if not segment.rstrip().endswith(TOOL_QUERY_CLOSE) or len(queries) >= max_calls:
            return done + segment, queries
        body = segment.rstrip()
        query = body[body.rfind(TOOL_QUERY_OPEN) + len(TOOL_QUERY_OPEN):-len(TOOL_QUERY_CLOSE)]
        query = query.strip()
        queries.append(query)
        if query.startswith("search "):
            raw = knowledge.search(query[len("search "):])
        elif query.startswith("calculate "):
            raw = calculate(query[len("calculate "):])
        else:
            raw = "error: unknown tool"
        reading, _ = server.complete(
            prompt(q, "Tool query: %s\nTool output: %s" % (query, raw), ASK_READ_TOOL),
            MAX_TOKENS["read"])
        done += body + "\n" + TOOL_RESULT_OPEN + " " + reading.strip() + " " + TOOL_RESULT_CLOSE + "\n"


def solution_steps(item):
    return [l for l in item["solution"].split("\n") if l.startswith("Step ")]


def rlot_prompt(question, steps, instruction):
    """An RLoT template of rlot_templates.h ({{question}}, "Reasoning so far:", {{steps}}, the
    instruction) as the env sends it: {{steps}} the "Step i: ..." lines or "(none yet)", and no
    trailing newline."""
    chain = "\n".join(steps) if steps else "(none yet)"
    return question + "\nReasoning so far:\n" + chain + "\n" + instruction


def reference_queries(item):
    return [q.strip() for q in re.findall(re.escape(TOOL_QUERY_OPEN) + "(.*?)" +
                                          re.escape(TOOL_QUERY_CLOSE), item["solution"])]


def evaluate_item(server, knowledge, item, fmt):
    """One (item, format): returns (score 0/1, reply). For "tool" the score is a triple: the
    answer, whether the first query equals the reference's (None without one), and whether it
    names the item's entity (None for items without one)."""
    q = full_question(item)
    if fmt in ("direct", "cot"):
        reply, _ = server.complete(prompt(q, "", ASK[fmt]), MAX_TOKENS[fmt])
        return int(correct(reply, item["answer"])), reply
    if fmt == "tool":
        reply, queries = run_tool(server, knowledge, item)
        ref = reference_queries(item)
        first = None if not ref else int(bool(queries) and queries[0] == ref[0])
        entity = item.get("entity") or None
        named = None if entity is None else int(bool(queries) and entity in queries[0])
        return (int(correct(reply, item["answer"])), first, named), reply
    if fmt == "route":
        reply, _ = server.complete(prompt(q, "", ASK["route"]), MAX_TOKENS["route"])
        ok = re.fullmatch(r"(?s)(.*\S )?<question_level>L[1-4]</question_level>\s*", reply)
        return int(bool(ok)), reply
    if fmt == "self_eval":
        text = rlot_prompt(q, solution_steps(item), "Evaluate the newest step.")
        reply, _ = server.complete(text, MAX_TOKENS["self_eval"])
        lines = [l for l in reply.strip().split("\n") if l]
        keys = [re.match(r"([A-C][1-3]) score=([0-3]) reason=", l) for l in lines]
        well_formed = len(lines) == 7 and all(keys) and [k.group(1) for k in keys] == SELF_EVAL_KEYS
        return int(well_formed), reply
    if fmt == "steps":
        # RLoT's Reason and Terminate calls; the reply is trimmed, as the env trims it.
        steps, cells, replies = solution_steps(item), [], []
        for k, step in enumerate(steps):
            text = rlot_prompt(q, steps[:k], "Reason one step.")
            reply, _ = server.complete(text, MAX_TOKENS["steps"])
            cells.append(("step%d" % (k + 1), int(reply.strip() == step.split(": ", 1)[1])))
            replies.append(reply)
        reply, _ = server.complete(rlot_prompt(q, steps, "Give the final answer."),
                                   MAX_TOKENS["direct"])
        cells.append(("final", int(correct(reply, item["answer"]))))
        return cells, replies + [reply]
    if fmt == "ops":
        cells, replies = [], []
        for k, step in enumerate(solution_steps(item)):
            m = re.fullmatch(r"Step \d+: (\d+) ([-+*]) (\d+) = (\d+)", step)
            if not m:
                continue
            question = "What is %s %s %s?" % m.group(1, 2, 3)
            reply, _ = server.complete(prompt(question, "", ASK["direct"]), MAX_TOKENS["direct"])
            cells.append(("op%d" % (k + 1), int(correct(reply, m.group(4)))))
            replies.append(reply)
        return cells, replies
    raise ValueError(fmt)


def applicable(item, fmt):
    if fmt in ("self_eval", "steps", "ops"):  # the navigator's states: steps without tools
        return "tool" not in item["solution"] and bool(solution_steps(item))
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pool", default="assets/tinyworld/pool")
    ap.add_argument("--data", default=os.environ.get("ALLOT_TINYWORLD_DIR", "runs/tinyworld/data"))
    ap.add_argument("--allot", default=os.environ.get("ALLOT", "build/apps/allot"))
    ap.add_argument("--tiers", default="", help="comma-separated tier names (default: all)")
    ap.add_argument("--formats", default="direct,cot,tool,route,self_eval")
    ap.add_argument("--limit", type=int, default=0,
                    help="items per difficulty and split (0 = the whole test split)")
    ap.add_argument("--mc", action="store_true", help="also ask the multiple-choice variants")
    ap.add_argument("--threads", type=int, default=2, help="allot serve --threads")
    ap.add_argument("--clients", type=int, default=32, help="requests in flight")
    ap.add_argument("--json", default="", help="write every score and reply here")
    args = ap.parse_args()

    with open(os.path.join(args.pool, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    tiers = [t["name"] for t in manifest["tiers"]]
    if args.tiers:
        tiers = [t for t in tiers if t in args.tiers.split(",")]
    formats = args.formats.split(",")
    files = ["test.jsonl"] + (["test_mc.jsonl"] if args.mc else [])
    items, taken = [], {}
    for name in files:
        with open(os.path.join(args.data, name), encoding="utf-8") as f:
            for line in f:
                item = json.loads(line)
                key = (name, item["difficulty"])
                taken[key] = taken.get(key, 0) + 1
                if args.limit <= 0 or taken[key] <= args.limit:
                    items.append(item)
    knowledge = Knowledge(os.path.join(args.data, "corpus.jsonl"))

    results = {}
    for tier in tiers:
        server = Server(args.allot, os.path.join(args.pool, tier), args.threads, tier)
        started = time.time()
        try:
            jobs = [(it, fmt) for fmt in formats for it in items if applicable(it, fmt)]
            with futures.ThreadPoolExecutor(args.clients) as pool:
                scores = list(pool.map(lambda j: evaluate_item(server, knowledge, *j), jobs))
        finally:
            server.close()
        table = {}
        for (it, fmt), (score, reply) in zip(jobs, scores):
            cells = [(fmt, score)]
            if fmt in ("steps", "ops"):
                cells = score
            elif fmt == "tool":
                cells = [("tool", score[0])] + [
                    (name, value) for name, value in (("tool_query", score[1]),
                                                      ("tool_entity", score[2]))
                    if value is not None]
            for name, value in cells:
                cell = table.setdefault(name, {}).setdefault(it["difficulty"], [0, 0])
                cell[0] += value
                cell[1] += 1
        results[tier] = {"table": table, "seconds": round(time.time() - started, 1),
                         "replies": [{"id": it["id"], "format": fmt, "score": s, "reply": r}
                                     for (it, fmt), (s, r) in zip(jobs, scores)]}
        print("%s: %d requests answered in %.0f s" % (tier, len(jobs), time.time() - started),
              file=sys.stderr)

    header = "| tier | format | " + " | ".join(DIFFICULTIES) + " | all |"
    print(header)
    print("|" + "---|" * (len(DIFFICULTIES) + 3))
    for tier in tiers:
        extra = ["tool_query", "tool_entity"] + sorted(
            (f for f in results[tier]["table"] if re.fullmatch(r"(step|op)\d+|final", f)),
            key=lambda f: (f[0], len(f), f))
        for fmt in [f for f in formats + extra if f in results[tier]["table"]]:
            row = results[tier]["table"].get(fmt, {})
            cells, right, total = [], 0, 0
            for d in DIFFICULTIES:
                r, n = row.get(d, [0, 0])
                right, total = right + r, total + n
                cells.append("%.2f" % (r / n) if n else "-")
            cells.append("%.2f" % (right / total) if total else "-")
            print("| %s | %s | %s |" % (tier, fmt, " | ".join(cells)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
