#!/usr/bin/env python3
"""Helper of the quantize/dequantize CLI tests (standard library only, no numpy).

    affine_check.py make W N K SEED [NPY_VERSION]   # random float32 [N, K]: raw, or .npy (1|2)
    affine_check.py bad-npy KIND OUT.npy            # a malformed .npy of the given kind
    affine_check.py check W DIR DEQ                 # round trip of `hone quantize W DIR` and
                                                    # `hone dequantize DIR DEQ`

check unpacks DIR's q.bin by the documented layout (32 / bits values per uint32 word along k,
lowest bits first), recomputes w = q * scale + bias in float64, and requires DEQ to equal it
(to float32 rounding) and every |w - DEQ| to be within its group's bound:
scale / 2 + 2^-8 * (1 + 2^-7) * (q_max * scale + |bias|) + float32 rounding.
"""
import json
import os
import random
import struct
import sys


def npy_bytes(shape, payload, descr="<f4", fortran=False, version=1, extra=""):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), %s}" % (
        descr, "True" if fortran else "False", dims, extra)
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + payload


def read_floats(path):
    data = open(path, "rb").read()
    if path.endswith(".npy"):
        assert data[:6] == b"\x93NUMPY", path
        if data[6] == 1:
            offset = 10 + struct.unpack("<H", data[8:10])[0]
        else:
            offset = 12 + struct.unpack("<I", data[8:12])[0]
        data = data[offset:]
    return struct.unpack("<%df" % (len(data) // 4), data)


def bf16(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def make(path, n, k, seed, version=1):
    rng = random.Random(seed)
    # Mixed magnitudes, an offset, and one constant group per row, as real weights have.
    values = []
    for r in range(n):
        row = [rng.gauss(0.3, 1.0) * (1 + r % 5) for _ in range(k)]
        row[:32] = [0.75] * 32
        values += row
    payload = struct.pack("<%df" % len(values), *values)
    with open(path, "wb") as f:
        f.write(npy_bytes((n, k), payload, version=version) if path.endswith(".npy") else payload)


def bad_npy(kind, path):
    payload = struct.pack("<%df" % (8 * 64), *([1.0] * (8 * 64)))
    data = {
        "magic": lambda: b"\x93NUMPX" + npy_bytes((8, 64), payload)[6:],
        "version": lambda: npy_bytes((8, 64), payload)[:6] + b"\x09\x00" +
        npy_bytes((8, 64), payload)[8:],
        "dtype": lambda: npy_bytes((8, 64), payload * 2, descr="<f8"),
        "fortran": lambda: npy_bytes((8, 64), payload, fortran=True),
        "rank": lambda: npy_bytes((2, 4, 64), payload),
        "extra_key": lambda: npy_bytes((8, 64), payload, extra="'order': 1, "),
        "syntax": lambda: npy_bytes((8, 64), payload).replace(b"'shape': (8, 64)",
                                                              b"'shape': [8, 64]"),
        "truncated_header": lambda: npy_bytes((8, 64), payload)[:40],
        "truncated_data": lambda: npy_bytes((8, 64), payload)[:-4],
    }[kind]()
    with open(path, "wb") as f:
        f.write(data)


def check(w_path, directory, deq_path):
    header = json.load(open(os.path.join(directory, "affine.json")))
    assert header["format"] == "hone.affine" and header["format_version"] == 1, header
    n, k, bits, group = header["n"], header["k"], header["bits"], header["group"]
    words = struct.unpack("<%dI" % (n * k * bits // 32),
                          open(os.path.join(directory, "q.bin"), "rb").read())
    groups = n * (k // group)

    def halves(name):
        return struct.unpack("<%dH" % groups, open(os.path.join(directory, name), "rb").read())

    scales, biases = halves("scales.bin"), halves("biases.bin")
    w, deq = read_floats(w_path), read_floats(deq_path)
    if len(w) != n * k or len(deq) != n * k:
        sys.exit("FAIL: sizes: w %d, dequantized %d, n * k %d" % (len(w), len(deq), n * k))
    per_word, mask, q_max = 32 // bits, (1 << bits) - 1, (1 << bits) - 1
    max_error = max_ratio = 0.0
    for i in range(n * k):
        row, col = divmod(i, k)
        q = (words[i // per_word] >> ((col % per_word) * bits)) & mask
        g = row * (k // group) + col // group
        scale, bias = bf16(scales[g]), bf16(biases[g])
        expected = q * scale + bias
        if abs(deq[i] - expected) > 1e-6 * (abs(expected) + 1e-30) + 1e-37:
            sys.exit("FAIL: dequantized[%d, %d] = %r, q * scale + bias = %r (q=%d)" %
                     (row, col, deq[i], expected, q))
        bound = scale / 2 + (q_max * scale + abs(bias)) * (2 ** -8 * (1 + 2 ** -7) + 2 ** -22)
        error = abs(w[i] - deq[i])
        if error > bound:
            sys.exit("FAIL: |w - dequantized| at [%d, %d] = %g exceeds the bound %g "
                     "(scale %g, bias %g)" % (row, col, error, bound, scale, bias))
        max_error = max(max_error, error)
        max_ratio = max(max_ratio, error / bound if bound > 0 else 0.0)
    print("ok: n=%d k=%d bits=%d group=%d max_error=%.4g max_ratio=%.3f" %
          (n, k, bits, group, max_error, max_ratio))


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "make":
        make(args[0], int(args[1]), int(args[2]), int(args[3]),
             int(args[4]) if len(args) > 4 else 1)
    elif command == "bad-npy":
        bad_npy(args[0], args[1])
    elif command == "check":
        check(*args)
    else:
        sys.exit("unknown command %r" % command)


if __name__ == "__main__":
    main()
