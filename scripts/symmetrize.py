#!/usr/bin/env python3
"""symmetrize.py: joins the two directional word alignments of an aligner
(fast_align -d and -r, eflomal's -f and -r; Pharaoh "i-j" lines, source
word i, target word j) into one, for data.train_align (docs/user-guide.md,
"Guided alignment"), where fast_align's atools is not at hand (Debian
packages neither).

    symmetrize.py FORWARD REVERSE [--method grow-diag-final-and] > joined.align

Methods: intersection, union, grow-diag, grow-diag-final,
grow-diag-final-and (the default; Koehn et al. 2005, as Moses and atools
do it). Each output line lists its pairs by target word, then source word.
The two files must have as many lines; a malformed pair stops it naming
the file and line (exit 1)."""
import argparse
import sys

NEIGHBOURS = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]


def parse(line, path, line_no):
    pairs = set()
    for item in line.split():
        parts = item.split("-")
        if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit():
            sys.exit(f"symmetrize.py: {path}:{line_no}: '{item}' is not a pair i-j")
        pairs.add((int(parts[0]), int(parts[1])))
    return pairs


def grow_diag(forward, reverse, final, final_and):
    union = forward | reverse
    points = forward & reverse
    src_aligned = {i for i, _ in points}
    tgt_aligned = {j for _, j in points}
    added = True
    while added:
        added = False
        for i, j in sorted(points):
            for di, dj in NEIGHBOURS:
                p = (i + di, j + dj)
                if p in union and p not in points and (p[0] not in src_aligned or p[1] not in tgt_aligned):
                    points.add(p)
                    src_aligned.add(p[0])
                    tgt_aligned.add(p[1])
                    added = True
    if final:
        for direction in (forward, reverse):
            for i, j in sorted(direction):
                free = (i not in src_aligned and j not in tgt_aligned) if final_and else \
                       (i not in src_aligned or j not in tgt_aligned)
                if free and (i, j) not in points:
                    points.add((i, j))
                    src_aligned.add(i)
                    tgt_aligned.add(j)
    return points


def symmetrize(forward, reverse, method):
    if method == "intersection":
        return forward & reverse
    if method == "union":
        return forward | reverse
    return grow_diag(forward, reverse, final=method != "grow-diag", final_and=method == "grow-diag-final-and")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("forward")
    ap.add_argument("reverse")
    ap.add_argument("--method", default="grow-diag-final-and",
                    choices=["intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and"])
    args = ap.parse_args()
    with open(args.forward, encoding="utf-8") as f, open(args.reverse, encoding="utf-8") as r:
        line_no = 0
        out = sys.stdout
        for a, b in zip(f, r):
            line_no += 1
            points = symmetrize(parse(a, args.forward, line_no), parse(b, args.reverse, line_no), args.method)
            out.write(" ".join(f"{i}-{j}" for i, j in sorted(points, key=lambda p: (p[1], p[0]))) + "\n")
        rest_f, rest_r = f.readline(), r.readline()
        if rest_f or rest_r:
            longer = args.forward if rest_f else args.reverse
            sys.exit(f"symmetrize.py: {longer}: more lines than the other file ({line_no})")


if __name__ == "__main__":
    main()
