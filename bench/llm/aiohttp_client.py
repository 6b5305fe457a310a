"""Closed-loop asyncio + aiohttp client: the comparison for allot's C++ client.

Keeps --concurrency completions in flight against --url until --requests have finished, parses
each JSON body, and prints one JSON line with the same fields as allot_llm_bench (CPU time is
process_time: user + sys of this process).
"""
import argparse
import asyncio
import json
import resource
import time

import aiohttp


async def main(args):
    url = args.url.rstrip("/") + "/v1/completions"
    body = {
        "model": "bench",
        "prompt": "Question: what is 2 + 2? Think step by step, then answer.",
        "max_tokens": 16,
        "temperature": 0.0,
    }
    remaining = args.requests
    errors = 0
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker():
            nonlocal remaining, errors
            while remaining > 0:
                remaining -= 1
                try:
                    async with session.post(url, json=body) as resp:
                        data = await resp.json()
                        if resp.status != 200 or not data.get("choices"):
                            errors += 1
                except Exception:  # count, keep going: the benchmark reports errors
                    errors += 1

        cpu0 = time.process_time()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({
        "client": "python-aiohttp", "requests": args.requests, "concurrency": args.concurrency,
        "errors": errors, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "req_per_s": round(args.requests / wall), "req_per_cpu_s": round(args.requests / cpu),
        "cpu_us_per_req": round(cpu / args.requests * 1e6, 2), "max_rss_mb": round(rss_mb, 1),
    }))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=64)
    asyncio.run(main(p.parse_args()))
