#!/usr/bin/env python3
"""ckpt_same.py: do two nmt checkpoints hold the same weights and Adam
moments to the bit?

    python3 scripts/ckpt_same.py A.nmt B.nmt

Compares the PARM (weights) and OPTM (optimizer state) sections of the two
files, and TPRM (the training weights of a run with a moving average,
formats 2 and 3) when either has it (docs/checkpoint-format.md); the other
sections are left out (STAT
holds the wall-clock seconds of the run, CONF the save folder). Prints one
line: "identical: N weights, M optimizer values" or how many float32 values
differ and the largest difference; exit status 0 when identical, 1 when
not, 2 when a file cannot be read as a checkpoint. Standard library only
(gpu-check.sh runs it on the GPU machine, tests/test_gpu_emu.sh in CI)."""

import array
import struct
import sys

MAGIC = b"NMTCKPT\0"


def sections(path):
    """{tag: bytes} of a checkpoint's sections; SystemExit(2) on a bad file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        print("ckpt_same: %s: %s" % (path, e.strerror))
        sys.exit(2)
    if len(data) < 28 or data[:8] != MAGIC:
        print("ckpt_same: %s: not an nmt checkpoint" % path)
        sys.exit(2)
    (size,) = struct.unpack_from("<Q", data, 16)
    found, off = {}, 24
    while off + 12 <= min(len(data), 24 + size):
        (length,) = struct.unpack_from("<Q", data, off + 4)
        found[data[off:off + 4].decode("ascii", "replace")] = data[off + 12:off + 12 + length]
        off += 12 + length
    for tag in ("PARM", "OPTM"):
        if tag not in found:
            print("ckpt_same: %s: no %s section" % (path, tag))
            sys.exit(2)
    return found


def floats(raw):
    values = array.array("f")
    values.frombytes(raw[:len(raw) - len(raw) % 4])
    if sys.byteorder != "little":
        values.byteswap()
    return values


def main(argv):
    if len(argv) != 2:
        print("usage: ckpt_same.py A.nmt B.nmt")
        return 2
    a, b = sections(argv[0]), sections(argv[1])
    if ("TPRM" in a) != ("TPRM" in b):
        print("different: only %s holds training weights beside a moving average (TPRM)"
              % (argv[0] if "TPRM" in a else argv[1]))
        return 1
    counts, differ, worst = [], 0, 0.0
    for tag in ("PARM", "OPTM", "TPRM"):
        if tag not in a:
            counts.append(0)
            continue
        if len(a[tag]) != len(b[tag]):
            print("different: %s holds %d bytes in one, %d in the other" % (tag, len(a[tag]), len(b[tag])))
            return 1
        counts.append(len(a[tag]) // 4)
        if a[tag] == b[tag]:
            continue
        for x, y in zip(floats(a[tag]), floats(b[tag])):
            if struct.pack("<f", x) != struct.pack("<f", y):
                differ += 1
                worst = max(worst, abs(x - y))
    if differ:
        print("different: %d of %d float32 values (weights and optimizer state), largest difference %.3g"
              % (differ, sum(counts), worst))
        return 1
    print("identical: %d weights, %d optimizer values%s"
          % (counts[0], counts[1], ", %d training weights" % counts[2] if "TPRM" in a else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
