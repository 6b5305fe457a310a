#!/usr/bin/env python3
"""Which symbols a process binds across library families: reads LD_DEBUG=bindings output on
stdin and prints, per (from, to) pair of families, how many symbols and the first ones.

Families: 'wheel' (PyTorch's libraries and the nvidia-* wheels), 'debian' (the Debian packages
scripts/gpu/build.sh unpacked into BUILD/deps), 'allot' (this build's programs and libraries),
'system' (everything else). A symbol that a Debian library takes from the wheel, or the wheel
from Debian, or allot's code from the wheel outside LibTorch's own namespaces, is a library
present twice in one process: the usual cause of crashes at exit.

    LD_DEBUG=bindings PROGRAM 2>&1 >/dev/null | scripts/gpu/foreign_bindings.py BUILD_DIR
"""
import collections
import re
import sys

LINE = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: \w+ symbol `([^']+)'")
# LibTorch's own symbols (mangled names of c10::, at::, torch::, caffe2::) and the CUDA stack's.
OWN = re.compile(r"^(_ZN(K?)(3c10|2at|5torch|6caffe2|4cuda)|_ZTV|_ZTI|_ZTS|cu|nccl|nv|__cuda)")


def family(path, build):
    if "/deps/" in path:
        return "debian"
    if "/torch/" in path or "/nvidia/" in path or "torch" in path.rsplit("/", 1)[-1]:
        return "wheel"
    if build and path.startswith(build):
        return "allot"
    return "system"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else ""
    pairs = collections.defaultdict(list)
    for line in sys.stdin:
        m = LINE.search(line)
        if not m:
            continue
        src, dst, sym = m.groups()
        a, b = family(src, build), family(dst, build)
        foreign = (a, b) in (("debian", "wheel"), ("wheel", "debian")) or (
            a in ("allot", "debian") and b == "wheel" and not OWN.match(sym))
        if foreign:
            pairs[(src.rsplit("/", 1)[-1], dst.rsplit("/", 1)[-1])].append(sym)
    if not pairs:
        print("no symbol crosses between the wheel's libraries and Debian's")
    for (src, dst), syms in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(syms):6d} {src} -> {dst}")
        for s in sorted(set(syms))[:25]:
            print(f"         {s}")


if __name__ == "__main__":
    main()
