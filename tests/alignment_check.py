#!/usr/bin/env python3
"""alignment_check.py: the checks of tests/test_alignment_cli.sh that need
Python: `nmt translate --alignment` against an independent reading of the
same decode's --attention-out (JSON lines: pieces and weights).

  alignment_check.py tokens INPUT ATTN OUT THRESHOLD
      OUT (--alignment-units tokens) picks, for every output token, the
      source tokens of its attention row: the largest (THRESHOLD 0, hard;
      JSON weights have 4 decimals, so a pick within 1e-4 of the largest
      counts as right) or all weights >= THRESHOLD (those within 1e-4 of it
      may go either way).
  alignment_check.py words INPUT ATTN TOKENS_OUT WORDS_OUT
      WORDS_OUT (word units) is TOKENS_OUT's pairs mapped to words: a
      source piece starting with U+2581 starts a word; an output token's
      words are those of the text rebuilt from the pieces that its
      characters fall in (a lone U+2581 takes the next token's word).
      Indices stay below the word counts of the input and output lines.
  alignment_check.py soft INPUT ATTN SOFT_TOKENS_OUT SOFT_WORDS_OUT
      --alignment soft: SOFT_TOKENS_OUT's groups are ATTN's rows (within
      2e-4: both have 4 decimals); SOFT_WORDS_OUT's are those rows summed
      into source words (a piece starting with U+2581 starts one) and
      averaged over the pieces of each output word (within 1e-3), one group
      per output word and one weight per input word, each summing to 1.

Prints what is wrong and exits 1; exits 0 when all lines agree."""
import json
import re
import sys

WS = "\u2581"


def parse_line(line):
    text, _, pairs = line.rstrip("\n").rpartition(" ||| ")
    got = [tuple(map(int, p.split("-"))) for p in pairs.split()]
    return text, got


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f]


def lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")[:-1]


def check_tokens(inp, attn, out, threshold):
    bad = 0
    for rec, line in zip(records(attn), lines(out)):
        _, got = parse_line(line)
        a = rec["attention"]
        per_t = {}
        for s, t in got:
            per_t.setdefault(t, set()).add(s)
        for t, row in enumerate(a):
            picked = per_t.pop(t, set())
            if not row:
                ok = not picked
            elif threshold == 0:
                ok = len(picked) == 1 and row[next(iter(picked))] >= max(row) - 1e-4
            else:
                must = {s for s, w in enumerate(row) if w >= threshold + 1e-4}
                may = {s for s, w in enumerate(row) if w >= threshold - 1e-4}
                ok = must <= picked <= may
            if not ok:
                bad += 1
                print(f"line {rec['line']} token {t}: picked {sorted(picked)} of row {row}")
        if per_t:
            bad += 1
            print(f"line {rec['line']}: pairs of output tokens that do not exist: {per_t}")
    return bad


def source_words(pieces):
    words, w = [], -1
    for k, p in enumerate(pieces):
        if p.startswith(WS) or k == 0:
            w += 1
        words.append(w)
    return words


def target_words(pieces, text):
    """each piece's output words, from the text the pieces rebuild"""
    surf = [" \u2047 " if p == "<unk>" else p.replace(WS, " ") for p in pieces]
    if surf and surf[0].startswith(" "):
        surf[0] = surf[0][1:]
    if "".join(surf) != text:
        return None
    starts = [m.span() for m in re.finditer(r"\S+", text)]
    word_of = {}
    for w, (b, e) in enumerate(starts):
        for i in range(b, e):
            word_of[i] = w
    out, at = [], 0
    for s in surf:
        out.append(sorted({word_of[i] for i in range(at, at + len(s)) if i in word_of}))
        at += len(s)
    nxt = None
    for k in range(len(out) - 1, -1, -1):  # a piece without a word: the next one's first
        if out[k]:
            nxt = out[k][0]
        elif nxt is not None:
            out[k] = [nxt]
    prev = 0
    for k in range(len(out)):  # else the previous one's last
        if not out[k]:
            out[k] = [prev]
        prev = out[k][-1]
    return out


def word_maps(rec, text):
    """(source words, output words) of each piece of the record; None, said
    on stdout, when the output pieces do not rebuild text"""
    tw = target_words(rec["target"], text)
    if tw is None:
        print(f"line {rec['line']}: the pieces {rec['target']} do not rebuild [{text}]")
        return None
    return source_words(rec["source"]), tw


def check_words(inp, attn, tokens_out, words_out):
    bad = 0
    for rec, src, tl, wl in zip(records(attn), lines(inp), lines(tokens_out), lines(words_out)):
        _, tok_pairs = parse_line(tl)
        text, got = parse_line(wl)
        maps = word_maps(rec, text)
        if maps is None:
            bad += 1
            continue
        sw, tw = maps
        want = sorted({(sw[s], w) for s, t in tok_pairs for w in tw[t]}, key=lambda p: (p[1], p[0]))
        if got != want:
            bad += 1
            print(f"line {rec['line']}: words {got}, want {want} (pieces {rec['source']} -> {rec['target']})")
        n_src, n_out = len(src.split()), len(text.split())
        if any(s >= n_src or t >= n_out for s, t in got):
            bad += 1
            print(f"line {rec['line']}: a pair beyond {n_src} source / {n_out} output words: {got}")
    return bad


def soft_rows(line):
    text, _, groups = line.rstrip("\n").rpartition(" ||| ")
    return text, [[float(w) for w in g.split(",")] for g in groups.split()]


def check_soft(inp, attn, tokens_out, words_out):
    bad = 0
    for rec, src, tl, wl in zip(records(attn), lines(inp), lines(tokens_out), lines(words_out)):
        _, tok_rows = soft_rows(tl)
        text, word_rows = soft_rows(wl)
        a = [row for row in rec["attention"] if row]
        if len(tok_rows) != len(a) or any(len(r) != len(x) or max(abs(u - v) for u, v in zip(r, x)) > 2e-4
                                          for r, x in zip(tok_rows, a)):
            bad += 1
            print(f"line {rec['line']}: token rows {tok_rows} vs --attention-out's {a}")
            continue
        maps = word_maps(rec, text)
        if maps is None:
            bad += 1
            continue
        sw, tw = maps
        n_src, n_out = len(src.split()), len(text.split())
        want = []
        for j in range(n_out):
            toks = [t for t in range(len(a)) if j in tw[t]]
            row = [0.0] * n_src
            for t in toks:
                for s, w in enumerate(a[t]):
                    row[sw[s]] += w / len(toks)
            want.append(row)
        if len(word_rows) != n_out or any(len(r) != n_src or max(abs(u - v) for u, v in zip(r, x)) > 1e-3
                                          or abs(sum(r) - 1) > 1e-3 for r, x in zip(word_rows, want)):
            bad += 1
            print(f"line {rec['line']}: word rows {word_rows}, want {want}")
    return bad


def main():
    mode = sys.argv[1]
    if mode == "tokens":
        bad = check_tokens(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    elif mode == "soft":
        bad = check_soft(*sys.argv[2:6])
    else:
        bad = check_words(*sys.argv[2:6])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
