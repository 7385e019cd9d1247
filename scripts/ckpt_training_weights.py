#!/usr/bin/env python3
"""ckpt_training_weights.py: the training weights of a checkpoint written
with a moving average (train.ema_decay > 0) as a model of their own.

    python3 scripts/ckpt_training_weights.py IN.nmt OUT.nmt

Such a checkpoint (format 2, or 3 when its validation records hold chrF;
docs/checkpoint-format.md) holds the moving average as its model (PARAMS)
and the weights training updates in TRAIN_PARAMS. OUT is IN with PARAMS
replaced by TRAIN_PARAMS, that section dropped and the format set back to
1 (3 stays 3), so that `nmt translate --model OUT`
translates with the training weights: to compare them with the average
(docs/results.md). Exit status 2 when IN is not such a checkpoint. Standard
library only."""

import struct
import sys
import zlib

MAGIC = b"NMTCKPT\0"


def main(argv):
    if len(argv) != 2:
        print("usage: ckpt_training_weights.py IN.nmt OUT.nmt")
        return 2
    with open(argv[0], "rb") as f:
        data = f.read()
    if len(data) < 28 or data[:8] != MAGIC:
        print("ckpt_training_weights: %s: not an nmt checkpoint" % argv[0])
        return 2
    (version,) = struct.unpack_from("<I", data, 8)
    (size,) = struct.unpack_from("<Q", data, 16)
    if zlib.crc32(data[:24 + size]) != struct.unpack_from("<I", data, 24 + size)[0]:
        print("ckpt_training_weights: %s: corrupt (checksum mismatch)" % argv[0])
        return 2
    sections, off = [], 24
    while off < 24 + size:
        (length,) = struct.unpack_from("<Q", data, off + 4)
        sections.append((data[off:off + 4], data[off + 12:off + 12 + length]))
        off += 12 + length
    tags = dict(sections)
    if version not in (2, 3) or b"TPRM" not in tags:
        print("ckpt_training_weights: %s: no training weights (format %d; written without train.ema_decay?)"
              % (argv[0], version))
        return 2
    body = b""
    for tag, payload in sections:
        if tag == b"TPRM":
            continue
        if tag == b"PARM":
            payload = tags[b"TPRM"]
        body += tag + struct.pack("<Q", len(payload)) + payload
    # without TPRM: format 1, or 3 when the validation records hold chrF
    out = MAGIC + struct.pack("<IIQ", 3 if version == 3 else 1, 0, len(body)) + body
    out += struct.pack("<I", zlib.crc32(out))
    with open(argv[1], "wb") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
