#!/usr/bin/env python3
"""Instruction counts of a kernel's hottest loop, from nvdisasm's SASS listing.

The loop is the backward branch whose body holds the most HMMA instructions (or, with --op,
the most of that opcode). Prints its instruction count, the count per weight when
--weights (weights one lane handles per iteration) is given, and an opcode histogram.

  nvcc -std=c++20 -O3 -arch=sm_90a -Iinclude -Isrc -cubin \
      src/cuda/kernels/qmv_affine/qmv_affine.cu -o /tmp/qmv.cubin
  nvdisasm /tmp/qmv.cubin > /tmp/qmv.sass
  scripts/sass_loops.py /tmp/qmv.sass qmv_affine_grouped_kernelILi1ELi2ELi1ELi2 --weights 256
"""

import argparse
import collections
import re
import sys

LABEL = re.compile(r"^(\.L_x_\d+):")
INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P[0-9T]\s+)?([A-Z0-9_]+)\S*\s*(.*)")
BRANCH_TARGET = re.compile(r"\((\.L_x_\d+)\)")


def kernel_lines(lines, name):
    """The listing of the first kernel whose .text section name contains `name`."""
    start = next((i for i, line in enumerate(lines)
                  if line.startswith(".text.") and name in line), None)
    if start is None:
        raise SystemExit(f"no kernel matching '{name}' in the listing")
    body = []
    for line in lines[start + 1:]:
        if line.startswith(".text."):
            break
        body.append(line)
    return body


def instructions(body):
    """[(address, opcode, operands)] and {label: address of the next instruction}."""
    out, labels, pending = [], {}, []
    for line in body:
        label = LABEL.match(line.strip())
        if label:
            pending.append(label.group(1))
            continue
        m = INSTRUCTION.match(line)
        if m:
            address = int(m.group(1), 16)
            for name in pending:
                labels[name] = address
            pending = []
            out.append((address, m.group(2), m.group(3)))
    return out, labels


def hottest_loop(ins, labels, opcode):
    """The instructions of the backward branch's body with the most `opcode` instructions."""
    best = None
    for address, op, operands in ins:
        if op != "BRA":
            continue
        target = BRANCH_TARGET.search(operands)
        if not target or labels.get(target.group(1), address + 1) >= address:
            continue
        top = labels[target.group(1)]
        loop = [x for x in ins if top <= x[0] <= address]
        count = sum(1 for x in loop if x[1] == opcode)
        if best is None or count > best[0]:
            best = (count, top, address, loop)
    return best


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sass", help="nvdisasm output")
    parser.add_argument("kernel", help="a substring of the kernel's mangled name")
    parser.add_argument("--weights", type=int, help="weights one lane handles per iteration")
    parser.add_argument("--op", default="HMMA", help="the opcode that marks the loop (HMMA)")
    parser.add_argument("--top", type=int, default=12, help="opcodes listed")
    args = parser.parse_args(argv)
    with open(args.sass) as f:
        ins, labels = instructions(kernel_lines(f.read().split("\n"), args.kernel))
    best = hottest_loop(ins, labels, args.op)
    if best is None:
        raise SystemExit("no backward branch in the kernel")
    count, top, bottom, loop = best
    histogram = collections.Counter(x[1] for x in loop)
    per = f", {len(loop) / args.weights:.2f} per weight" if args.weights else ""
    print(f"loop {top:#06x}-{bottom:#06x}: {len(loop)} instructions, {count} {args.op}{per}")
    print(" ".join(f"{op} {n}" for op, n in histogram.most_common(args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
