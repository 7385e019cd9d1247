/* ter.c: sacreBLEU 2.6.0-exact TER: tercom's tokenizer/normalizer
 * (tokenizer_ter.py), the edit distance with shifts of lib_ter.py
 * (translation_edit_rate), the statistics with several references
 * (ter.py) and the signature/line.
 *
 * The edit distance is lib_ter's BeamEditDistance: a word Levenshtein matrix
 * (rows: hypothesis words i = 0..nh, columns: reference words j = 0..nr)
 * computed only within a beam around the pseudo-diagonal j = i * nr / nh,
 * with tercom's preference among equal costs. The shift search is lib_ter's
 * greedy loop: each round tries every block of 1..10 hypothesis words that
 * also occurs in the reference (at most 50 positions away) at each place the
 * current alignment suggests, applies the one that lowers the edit distance
 * most (ties: longer, then earlier block, then earlier target), and stops
 * when none helps or 1000 candidates were tried in all.
 *
 * Speed, with the same numbers: sacreBLEU caches matrix rows of hypothesis
 * prefixes; here a candidate's distance starts from the current
 * hypothesis's row where the candidate first differs from it. When the
 * reference has at most 64 words the candidate's full (unbeamed) distance
 * is computed bit-parallel (Myers/Hyyrö) and taken when it is smaller than
 * the least cost of any path leaving the beam (then the beamed distance
 * equals it); otherwise the beamed rows are computed as sacreBLEU does. */
#include "data/ter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bleu.h"
#include "data/corpus.h"

/* lib_ter.py's limits */
#define TER_MAX_SHIFT_SIZE 10
#define TER_MAX_SHIFT_DIST 50
#define TER_BEAM_WIDTH 25
#define TER_MAX_SHIFT_CANDIDATES 1000
/* "infinite" cost of a cell outside the beam (lib_ter: 1e16); any real cost is smaller */
#define TER_INF (1 << 29)

/* Edit operations of the trace, rewriting the hypothesis into the reference */
enum { OP_NOP = ' ', OP_SUB = 's', OP_INS = 'i', OP_DEL = 'd', OP_UNDEF = 'x' };

void ter_stats_clear(TerStats *s) { memset(s, 0, sizeof *s); }

void ter_stats_add(TerStats *acc, const TerStats *s) {
    acc->edits += s->edits;
    acc->ref_len += s->ref_len;
    acc->ref_words += s->ref_words;
}

void ter_stats_to_array(const TerStats *s, int64_t out[TER_N_STATS]) {
    out[0] = s->edits;
    out[1] = s->ref_words;
}

/* ------------------------------------------------------------------ */
/* Tokenizer (TercomTokenizer)                                         */
/* ------------------------------------------------------------------ */

/* One regular-expression pass: reads in[0..n), writes at most 3n + 3 bytes
 * to out, returns the length written. */
typedef size_t (*TerPass)(const char *in, size_t n, char *out, const void *arg);

static NmtStatus run_pass(char **s, size_t *n, TerPass pass, const void *arg) {
    char *out = nmt_malloc(3 * *n + 4);
    if (!out) return nmt_fail_nomem("TER tokenizer");
    *n = pass(*s, *n, out, arg);
    out[*n] = '\0';
    nmt_free(*s);
    *s = out;
    return NMT_OK;
}

/* re.sub with a literal pattern: arg is {from, to}. */
static size_t pass_literal(const char *in, size_t n, char *out, const void *arg) {
    const char *const *ft = arg;
    size_t fl = strlen(ft[0]), tl = strlen(ft[1]), w = 0;
    for (size_t i = 0; i < n;) {
        if (i + fl <= n && !memcmp(in + i, ft[0], fl)) {
            memcpy(out + w, ft[1], tl);
            w += tl;
            i += fl;
        } else {
            out[w++] = in[i++];
        }
    }
    return w;
}

/* f" {sent} " */
static size_t pass_pad(const char *in, size_t n, char *out, const void *arg) {
    (void)arg;
    out[0] = ' ';
    memcpy(out + 1, in, n);
    out[n + 1] = ' ';
    return n + 2;
}

/* ([{-~[-` -&(-+:-@/]) -> " \1 ": ASCII punctuation but ' , - . (and the space itself) */
static int tercom_punct(unsigned char c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static size_t pass_punct(const char *in, size_t n, char *out, const void *arg) {
    (void)arg;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (tercom_punct((unsigned char)in[i])) {
            out[w++] = ' ';
            out[w++] = in[i];
            out[w++] = ' ';
        } else {
            out[w++] = in[i];
        }
    }
    return w;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_dot_comma(char c) { return c == '.' || c == ','; }

/* The three two-character rules, each one left-to-right pass of re.sub:
 *   0: ([^0-9])([\.,]) -> "\1 \2 "   period/comma split unless after a digit
 *   1: ([\.,])([^0-9]) -> " \1 \2"   ... unless before a digit
 *   2: ([0-9])(-)      -> "\1 \2 "   dash after a digit
 * The classes are ASCII and [^0-9] matches any code point, so matching
 * bytes gives the same text as Python's matching of code points (a match
 * never starts or ends inside a multi-byte character's ASCII-free bytes
 * differently). */
static size_t pass_pair(const char *in, size_t n, char *out, const void *arg) {
    int rule = *(const int *)arg;
    size_t w = 0, i = 0;
    while (i < n) {
        int match = 0;
        if (i + 1 < n) {
            char a = in[i], b = in[i + 1];
            if (rule == 0) match = !is_digit(a) && is_dot_comma(b);
            else if (rule == 1) match = is_dot_comma(a) && !is_digit(b);
            else match = is_digit(a) && b == '-';
        }
        if (!match) {
            out[w++] = in[i++];
            continue;
        }
        if (rule == 1) out[w++] = ' ';
        out[w++] = in[i];
        out[w++] = ' ';
        out[w++] = in[i + 1];
        if (rule != 1) out[w++] = ' ';
        i += 2;
    }
    return w;
}

/* TercomTokenizer.ASIAN_PUNCT and FULL_WIDTH_PUNCT */
static int asian_punct(uint32_t c) {
    return c == 0x3001 || c == 0x3002 || (c >= 0x3008 && c <= 0x3011) ||
           (c >= 0x3014 && c <= 0x301F) || (c >= 0xFF61 && c <= 0xFF65) || c == 0x30FB ||
           c == 0xFF0E || c == 0xFF0C || c == 0xFF1F || c == 0xFF1A || c == 0xFF1B ||
           c == 0xFF01 || c == 0xFF02 || c == 0xFF08 || c == 0xFF09;
}

/* The characters _normalize_asian surrounds with spaces: CJK ideographs
 * (4E00-9FFF, 3400-4DBF), strokes and radicals (31C0-31EF, 2E80-2EFF),
 * compatibility blocks (3300-33FF, F900-FAFF, FE30-FE4F), 3200-3F22 (as
 * written in sacreBLEU, beyond the enclosed letters block) and the
 * punctuation above. Its Hiragana/Katakana rules never match: their
 * pattern needs the whole text to be kana, and normalization has padded it
 * with spaces. */
static int asian_split(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x31C0 && c <= 0x31EF) || (c >= 0x2E80 && c <= 0x2EFF) ||
           (c >= 0x3300 && c <= 0x33FF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0x3200 && c <= 0x3F22) || asian_punct(c);
}

static size_t pass_asian(const char *in, size_t n, char *out, const void *arg) {
    (void)arg;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_decode((const unsigned char *)in + i, n - i, &cp);
        int pad = asian_split(cp);
        if (pad) out[w++] = ' ';
        memcpy(out + w, in + i, k);
        w += k;
        if (pad) out[w++] = ' ';
        i += k;
    }
    return w;
}

/* _remove_punct ([\.,\?:;!\"\(\)] -> ""), and with asian support
 * _remove_asian_punct; arg: int asian. */
static size_t pass_remove_punct(const char *in, size_t n, char *out, const void *arg) {
    int asian = *(const int *)arg;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_decode((const unsigned char *)in + i, n - i, &cp);
        int drop = cp < 0x80 ? strchr(".,?:;!\"()", (int)cp) != NULL && cp != 0
                             : asian && asian_punct(cp);
        if (!drop) {
            memcpy(out + w, in + i, k);
            w += k;
        }
        i += k;
    }
    return w;
}

/* Python's str.isspace() for an ASCII byte */
static int ascii_space(unsigned char c) { return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20); }

/* Python's ' '.join(s.split()) in place (bleu_collapse_spaces with a
 * shortcut for ASCII); returns the new length. */
static size_t collapse(char *s, size_t n) {
    size_t w = 0;
    int need_sep = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t space = c < 0x80 ? (size_t)ascii_space(c) : bleu_space_len(s + i, n - i);
        if (space) {
            need_sep = w > 0;
            i += space;
            continue;
        }
        if (need_sep) s[w++] = ' ';
        need_sep = 0;
        size_t k = c < 0x80 ? 1 : bleu_char_len(s + i, n - i);
        memmove(s + w, s + i, k);
        w += k;
        i += k;
    }
    return w;
}

NmtStatus ter_tokenize(const char *line, const TerOptions *opt, char **out) {
    *out = NULL;
    size_t len = strlen(line), n = len;
    unsigned char last = len ? (unsigned char)line[len - 1] : 0;
    if (len && (last >= 0x80 || ascii_space(last))) { /* line.rstrip() */
        n = 0;
        for (size_t at = 0, w; at < len; at += w) {
            size_t space = bleu_space_len(line + at, len - at);
            w = space ? space : bleu_char_len(line + at, len - at);
            if (!space) n = at + w;
        }
    }
    char *s;
    NmtStatus st = NMT_OK;
    if (!opt->case_sensitive) {
        if ((st = bleu_lower(line, n, &s)) != NMT_OK) return st;
        n = strlen(s);
    } else if (!(s = nmt_strndup(line, n))) {
        return nmt_fail_nomem("TER segment");
    }
    if (opt->normalized) {
        static const char *const literal[][2] = {
            {"\n-", ""}, {"\n", " "}, {"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};
        static const char *const possessive[2] = {"'s ", " 's "};
        static const int rules[3] = {0, 1, 2};
        for (size_t k = 0; k < NMT_ARRAY_LEN(literal) && !st; k++)
            st = run_pass(&s, &n, pass_literal, literal[k]);
        if (!st) st = run_pass(&s, &n, pass_pad, NULL);
        if (!st) st = run_pass(&s, &n, pass_punct, NULL);
        /* "'s$" -> " 's" never matches: the padded text ends in a space */
        if (!st) st = run_pass(&s, &n, pass_literal, possessive);
        for (int k = 0; k < 3 && !st; k++) st = run_pass(&s, &n, pass_pair, &rules[k]);
        if (!st && opt->asian_support) st = run_pass(&s, &n, pass_asian, NULL);
    }
    if (!st && opt->no_punct) st = run_pass(&s, &n, pass_remove_punct, &opt->asian_support);
    if (st) {
        nmt_free(s);
        return st;
    }
    n = collapse(s, n);
    s[n] = '\0';
    *out = s;
    return NMT_OK;
}

/* ------------------------------------------------------------------ */
/* Words as integer ids                                                */
/* ------------------------------------------------------------------ */

/* Interns the space-separated words of tokenized segments as ids 0, 1, ...
 * (equal words, equal ids). */
typedef struct {
    const char **word; /* (cap) first byte of the word of each slot; NULL: free */
    uint32_t *len;     /* (cap) its bytes */
    int *id;           /* (cap) its id */
    size_t cap;        /* power of two, more than twice the words */
    int n_ids;
} WordTable;

static size_t count_words(const char *s) {
    size_t n = *s ? 1 : 0;
    for (; *s; s++) n += *s == ' ';
    return n;
}

static NmtStatus table_init(WordTable *t, size_t words) {
    memset(t, 0, sizeof *t);
    t->cap = 16;
    while (t->cap < 2 * words + 2) t->cap *= 2;
    t->word = nmt_calloc(t->cap, sizeof *t->word);
    t->len = nmt_malloc(t->cap * sizeof *t->len);
    t->id = nmt_malloc(t->cap * sizeof *t->id);
    if (!t->word || !t->len || !t->id) return nmt_fail_nomem("TER words");
    return NMT_OK;
}

static void table_free(WordTable *t) {
    nmt_free(t->word);
    nmt_free(t->len);
    nmt_free(t->id);
    memset(t, 0, sizeof *t);
}

/* The ids of the words of s, into ids (count_words(s) entries). */
static int table_ids(WordTable *t, const char *s, int *ids) {
    int n = 0;
    while (*s) {
        const char *e = strchr(s, ' ');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        uint64_t h = 1469598103934665603ull; /* FNV-1a */
        for (size_t k = 0; k < l; k++) h = (h ^ (unsigned char)s[k]) * 1099511628211ull;
        size_t slot = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
        while (t->word[slot] && !(t->len[slot] == l && !memcmp(t->word[slot], s, l)))
            slot = (slot + 1) & (t->cap - 1);
        if (!t->word[slot]) {
            t->word[slot] = s;
            t->len[slot] = (uint32_t)l;
            t->id[slot] = t->n_ids++;
        }
        ids[n++] = t->id[slot];
        s += l + (e ? 1 : 0);
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Beam edit distance                                                  */
/* ------------------------------------------------------------------ */

/* One hypothesis length against one reference. The rows of the current
 * hypothesis ("base") are kept: row i holds columns [lo[i], hi[i]) at
 * cost[off[i]...] (and the operation that reached each cell in op). */
typedef struct {
    int nh, nr;
    const int *ref;   /* (nr) reference word ids */
    int *lo, *hi;     /* (nh + 1) the beam of each row (lib_ter's min_j, max_j) */
    size_t *off;      /* (nh + 1) where each row starts in cost/op */
    int *cost;        /* (sum of beam widths) the base's costs */
    char *op;         /* (same) the base's operations */
    int band_ok;      /* rows 0..band_ok of cost/op are the current base's */
    int *row_a, *row_b; /* (nr + 1) scratch rows, TER_INF outside the cells being computed */
    int fast;         /* nr <= 64: bit-parallel full distances */
    int min_out;      /* least cost of any path through a cell outside the beam */
    int *first, *next; /* (n_ids), (nr) the reference positions of each word id: first[id],
                        * next[j] (-1: no more) */
    uint64_t *peq;    /* (n_ids) reference positions of each word id as bits (fast) */
    uint64_t *vp, *vn; /* (nh + 1) the base's full-distance rows as Myers deltas (fast) */
    int *vscore;      /* (nh + 1) their last cell */
} BeamEd;

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

static void beam_free(BeamEd *e) {
    nmt_free(e->lo);
    nmt_free(e->hi);
    nmt_free(e->off);
    nmt_free(e->cost);
    nmt_free(e->op);
    nmt_free(e->row_a);
    nmt_free(e->row_b);
    nmt_free(e->first);
    nmt_free(e->next);
    nmt_free(e->peq);
    nmt_free(e->vp);
    nmt_free(e->vn);
    nmt_free(e->vscore);
    memset(e, 0, sizeof *e);
}

/* The beam of every row: BeamEditDistance._edit_distance's min_j/max_j
 * (they depend on the lengths only, and shifts keep the length). */
static NmtStatus beam_init(BeamEd *e, int nh, const int *ref, int nr, int n_ids) {
    memset(e, 0, sizeof *e);
    e->nh = nh;
    e->nr = nr;
    e->ref = ref;
    e->lo = nmt_malloc((size_t)(nh + 1) * sizeof *e->lo);
    e->hi = nmt_malloc((size_t)(nh + 1) * sizeof *e->hi);
    e->off = nmt_malloc((size_t)(nh + 2) * sizeof *e->off);
    e->row_a = nmt_malloc((size_t)(nr + 1) * sizeof *e->row_a);
    e->row_b = nmt_malloc((size_t)(nr + 1) * sizeof *e->row_b);
    if (!e->lo || !e->hi || !e->off || !e->row_a || !e->row_b) return nmt_fail_nomem("TER rows");
    double ratio = nh ? (double)nr / (double)nh : 1.0;
    int beam = TER_BEAM_WIDTH < ratio / 2 ? (int)ceil(ratio / 2 + TER_BEAM_WIDTH) : TER_BEAM_WIDTH;
    e->lo[0] = 0;
    e->hi[0] = nr + 1;
    for (int i = 1; i <= nh; i++) {
        int diag = (int)floor((double)i * ratio);
        e->lo[i] = imax(0, diag - beam);
        e->hi[i] = i == nh ? nr + 1 : imin(nr + 1, diag + beam);
    }
    e->off[0] = 0;
    for (int i = 0; i <= nh; i++) e->off[i + 1] = e->off[i] + (size_t)(e->hi[i] - e->lo[i]);
    e->cost = nmt_malloc(e->off[nh + 1] * sizeof *e->cost);
    e->op = nmt_malloc(e->off[nh + 1]);
    if (!e->cost || !e->op) return nmt_fail_nomem("TER rows");
    for (int j = 0; j <= nr; j++) {
        e->row_a[j] = e->row_b[j] = TER_INF;
        e->cost[j] = j; /* the first row: j insertions */
        e->op[j] = OP_INS;
    }
    e->band_ok = 0;
    e->first = nmt_malloc((size_t)(n_ids ? n_ids : 1) * sizeof *e->first);
    e->next = nmt_malloc((size_t)nr * sizeof *e->next);
    if (!e->first || !e->next) return nmt_fail_nomem("TER rows");
    for (int k = 0; k < n_ids; k++) e->first[k] = -1;
    for (int j = nr - 1; j >= 0; j--) {
        e->next[j] = e->first[ref[j]];
        e->first[ref[j]] = j;
    }
    e->fast = nr <= 64;
    if (!e->fast) return NMT_OK;
    /* A path through (i, j) costs at least the length differences of its
     * two parts, |i - j| + |(nh - i) - (nr - j)|. */
    e->min_out = TER_INF;
    for (int i = 1; i <= nh; i++) { /* over j < lo and j >= hi; convex in t = j - i */
        int gap_lo = imin(0, nr - nh), spans[2][2] = {{0, e->lo[i] - 1}, {e->hi[i], nr}};
        for (int k = 0; k < 2; k++) {
            if (spans[k][0] > spans[k][1]) continue;
            int t = imax(spans[k][0] - i, imin(spans[k][1] - i, gap_lo));
            e->min_out = imin(e->min_out, abs(t) + abs((nr - nh) - t));
        }
    }
    e->peq = nmt_calloc((size_t)(n_ids ? n_ids : 1), sizeof *e->peq);
    e->vp = nmt_malloc((size_t)(nh + 1) * sizeof *e->vp);
    e->vn = nmt_malloc((size_t)(nh + 1) * sizeof *e->vn);
    e->vscore = nmt_malloc((size_t)(nh + 1) * sizeof *e->vscore);
    if (!e->peq || !e->vp || !e->vn || !e->vscore) return nmt_fail_nomem("TER rows");
    e->vp[0] = ~0ull; /* the first row: +1 at every column */
    e->vn[0] = 0;
    e->vscore[0] = nr;
    for (int j = 0; j < nr; j++) e->peq[ref[j]] |= 1ull << j;
    return NMT_OK;
}

/* Row i of the beamed matrix (BeamEditDistance._edit_distance's inner loop)
 * for hypothesis word w: prev holds row i - 1 and cur receives row i, both
 * full width (nr + 1) and TER_INF outside their beams. With ops, the
 * operation reaching each cell goes to ops[j] (tercom's preference on equal
 * costs: match/substitution, deletion, insertion; cells no path reaches
 * keep TER_INF). */
static inline void beam_row(const BeamEd *e, int i, int w, const int *prev, int *cur, char *ops) {
    const int lo = e->lo[i], hi = e->hi[i];
    const int *ref = e->ref;
    int left = TER_INF; /* cur[j - 1] */
    for (int j = lo; j < hi; j++) {
        if (j == 0) {
            cur[0] = left = prev[0] + 1;
            if (ops) ops[0] = OP_DEL;
            continue;
        }
        int mismatch = w != ref[j - 1];
        int sub = prev[j - 1] + mismatch, del = prev[j] + 1, ins = left + 1;
        int v = imin(imin(sub, del), ins);
        if (ops) ops[j] = sub <= del && sub <= ins ? (mismatch ? OP_SUB : OP_NOP)
                        : del <= ins ? OP_DEL : OP_INS;
        cur[j] = left = imin(v, TER_INF);
    }
}

/* Sets cells [lo, hi) of a scratch row back to TER_INF. */
static void row_clear(int *row, int lo, int hi) {
    for (int j = lo; j < hi; j++) row[j] = TER_INF;
}

/* One hypothesis word of Hyyrö's bit-parallel Levenshtein: the deltas
 * D[i][j] - D[i][j-1] of a row as bit vectors over j (vp: +1, vn: -1),
 * D[i][nr] in *score; the first column D[i][0] = i. */
static void myers_step(uint64_t eq, uint64_t top, uint64_t *vp, uint64_t *vn, int *score) {
    uint64_t xv = eq | *vn;
    uint64_t xh = (((eq & *vp) + *vp) ^ *vp) | eq;
    uint64_t ph = *vn | ~(xh | *vp);
    uint64_t mh = *vp & xh;
    *score += (ph & top) ? 1 : (mh & top) ? -1 : 0;
    ph = (ph << 1) | 1;
    mh <<= 1;
    *vp = mh | ~(xv | ph);
    *vn = ph & xv;
}

/* Beamed rows (with operations) of the base from row band_ok + 1 to row
 * `to`: the rows 0..band_ok already hold the base's. */
static void band_rows(BeamEd *e, const int *h, int to) {
    if (e->band_ok >= to) return;
    int p = e->band_ok, *prev = e->row_a, *cur = e->row_b;
    memcpy(prev + e->lo[p], e->cost + e->off[p], (size_t)(e->hi[p] - e->lo[p]) * sizeof *prev);
    for (int i = p + 1; i <= to; i++) {
        beam_row(e, i, h[i - 1], prev, cur, e->op + e->off[i] - e->lo[i]);
        memcpy(e->cost + e->off[i], cur + e->lo[i], (size_t)(e->hi[i] - e->lo[i]) * sizeof *cur);
        row_clear(prev, e->lo[i - 1], e->hi[i - 1]);
        int *t = prev;
        prev = cur;
        cur = t;
    }
    row_clear(prev, e->lo[to], e->hi[to]);
    e->band_ok = to;
}

static int popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (int)((x * 0x0101010101010101ull) >> 56);
}

/* Cell (i, j) of the base's full (unbeamed) matrix from its Myers rows. */
static int full_cell(const BeamEd *e, int i, int j) {
    uint64_t low = j >= 64 ? ~0ull : (1ull << j) - 1;
    return i + popcount64(e->vp[i] & low) - popcount64(e->vn[i] & low);
}

/* The edit distance of a new base hypothesis h (nh) that equals the
 * previous one in its first p words (p = 0 the first time), as
 * BeamEditDistance computes it, and its trace (first cell to last) into
 * trace, its length to *n_trace.
 *
 * When the full distance is below min_out, the beamed matrix agrees with
 * the full one on every cell of the trace and on every neighbour that
 * could have been preferred there (such a cell lies on a path as cheap as
 * the best, which cannot leave the beam), so the trace is read from the
 * full matrix's Myers rows; the beamed rows are then computed only if a
 * candidate needs them. Otherwise the beamed rows with their operations. */
static int beam_base(BeamEd *e, const int *h, int p, char *trace, int *n_trace) {
    const int nh = e->nh, nr = e->nr;
    if (e->band_ok > p) e->band_ok = p;
    int full = 0, d;
    if (e->fast) {
        uint64_t top = 1ull << (nr - 1);
        for (int r = p + 1; r <= nh; r++) {
            e->vp[r] = e->vp[r - 1];
            e->vn[r] = e->vn[r - 1];
            e->vscore[r] = e->vscore[r - 1];
            myers_step(e->peq[h[r - 1]], top, &e->vp[r], &e->vn[r], &e->vscore[r]);
        }
        full = e->vscore[nh] < e->min_out;
    }
    if (!full) band_rows(e, h, nh);
    int i = nh, j = nr, n = 0;
    while (i > 0 || j > 0) { /* the trace, backwards */
        char op;
        if (!full) {
            NMT_ASSERT(j >= e->lo[i] && j < e->hi[i]);
            op = e->op[e->off[i] + (size_t)(j - e->lo[i])];
        } else if (i == 0) {
            op = OP_INS;
        } else if (j == 0) {
            op = OP_DEL;
        } else { /* the first of match/substitution, deletion, insertion reaching the cell */
            int v = full_cell(e, i, j), mismatch = h[i - 1] != e->ref[j - 1];
            op = full_cell(e, i - 1, j - 1) + mismatch == v ? (mismatch ? OP_SUB : OP_NOP)
                 : full_cell(e, i - 1, j) + 1 == v         ? OP_DEL
                                                           : OP_INS;
        }
        NMT_ASSERT(i > 0 || op == OP_INS);
        trace[n++] = op;
        if (op == OP_SUB || op == OP_NOP) i--, j--;
        else if (op == OP_INS) j--;
        else i--;
    }
    for (int k = 0; k < n / 2; k++) {
        char t = trace[k];
        trace[k] = trace[n - 1 - k];
        trace[n - 1 - k] = t;
    }
    *n_trace = n;
    d = full ? e->vscore[nh] : e->cost[e->off[nh] + (size_t)(nr - e->lo[nh])];
    return d;
}

/* The beamed distance of a candidate h (nh words) that equals the base
 * `base` in its first p words (p < nh): rows p+1..nh from the base's row p. */
static int beam_rest(BeamEd *e, const int *base, const int *h, int p) {
    const int nr = e->nr;
    if (e->fast) {
        uint64_t vp = e->vp[p], vn = e->vn[p], top = 1ull << (nr - 1);
        int d = e->vscore[p];
        for (int i = p; i < e->nh; i++) myers_step(e->peq[h[i]], top, &vp, &vn, &d);
        if (d < e->min_out) return d; /* no path leaving the beam is that cheap */
    }
    band_rows(e, base, p);
    int *prev = e->row_a, *cur = e->row_b;
    memcpy(prev + e->lo[p], e->cost + e->off[p], (size_t)(e->hi[p] - e->lo[p]) * sizeof *prev);
    for (int i = p + 1; i <= e->nh; i++) {
        beam_row(e, i, h[i - 1], prev, cur, NULL);
        row_clear(prev, e->lo[i - 1], e->hi[i - 1]);
        int *t = prev;
        prev = cur;
        cur = t;
    }
    int d = prev[nr];
    row_clear(prev, e->lo[e->nh], e->hi[e->nh]);
    return d;
}

/* ------------------------------------------------------------------ */
/* Shifts (lib_ter.translation_edit_rate)                              */
/* ------------------------------------------------------------------ */

/* _perform_shift: the words of w (n) with w[start, start + len) moved to
 * target, into out. */
static void perform_shift(const int *w, int n, int start, int len, int target, int *out) {
    int k = 0;
#define PUT(a, b) for (int q_ = (a); q_ < (b); q_++) out[k++] = w[q_]
    if (target < start) {
        PUT(0, target);
        PUT(start, start + len);
        PUT(target, start);
        PUT(start + len, n);
    } else if (target > start + len) {
        PUT(0, start);
        PUT(start + len, target);
        PUT(start, start + len);
        PUT(target, n);
    } else { /* within the block itself: lib_ter's third case, as written */
        int mid = imin(n, len + target);
        PUT(0, start);
        PUT(start + len, mid);
        PUT(start, start + len);
        PUT(mid, n);
    }
#undef PUT
    NMT_ASSERT(k == n);
}

typedef struct {
    int *words;   /* (nh) the current hypothesis */
    int *cand;    /* (nh) a candidate */
    int *best;    /* (nh) the best candidate so far */
    int *herr;    /* (nh + 1) prefix sums of hypothesis words in error */
    int *rerr;    /* (nr + 1) prefix sums of reference words in error */
    int *align;   /* (nr) hypothesis position aligned to each reference word (-1: before all) */
    char *trace;  /* (nh + nr) */
} ShiftWork;

/* One round of _shift: the best shift of e's base `words`, whose distance
 * is pre. Returns the gain (0 without a candidate), its words in sw->best;
 * *checked counts the candidates tried (all rounds together). */
static int best_shift(BeamEd *e, ShiftWork *sw, int pre, int n_trace, int *checked) {
    const int nh = e->nh, nr = e->nr;
    const int *h = sw->words, *r = e->ref;
    /* the trace read as rewriting the reference into the hypothesis
     * (_flip_trace, trace_to_alignment) */
    int ph = -1, pr = -1, nhe = 0, nre = 0;
    sw->herr[0] = sw->rerr[0] = 0;
    for (int k = 0; k < n_trace; k++) {
        char op = sw->trace[k];
        if (op == OP_NOP || op == OP_SUB) {
            int err = op == OP_SUB;
            ph++, pr++;
            sw->align[pr] = ph;
            sw->herr[nhe + 1] = sw->herr[nhe] + err, nhe++;
            sw->rerr[nre + 1] = sw->rerr[nre] + err, nre++;
        } else if (op == OP_DEL) { /* a hypothesis word only */
            ph++;
            sw->herr[nhe + 1] = sw->herr[nhe] + 1, nhe++;
        } else { /* a reference word only */
            pr++;
            sw->align[pr] = ph;
            sw->rerr[nre + 1] = sw->rerr[nre] + 1, nre++;
        }
    }
    NMT_ASSERT(nhe == nh && nre == nr);
    int have = 0, b_gain = 0, b_len = 0, b_start = 0, b_idx = 0;
    /* _find_shifted_pairs: h[sh, sh + len) == r[sr, sr + len) */
    for (int sh = 0; sh < nh; sh++) {
        for (int sr = e->first[h[sh]]; sr >= 0; sr = e->next[sr]) { /* r[sr] == h[sh], ascending */
            if (abs(sr - sh) > TER_MAX_SHIFT_DIST) continue;
            for (int len = 1; len <= TER_MAX_SHIFT_SIZE && h[sh + len - 1] == r[sr + len - 1]; len++) {
                /* only where the hypothesis is wrong, the reference is not
                 * matched there, and not within the block itself */
                if (sw->herr[sh + len] - sw->herr[sh] > 0 && sw->rerr[sr + len] - sw->rerr[sr] > 0 &&
                    !(sh <= sw->align[sr] && sw->align[sr] < sh + len)) {
                    int prev_idx = -1;
                    for (int off = -1; off < len; off++) {
                        /* lib_ter inserts before the index (tercom: after) */
                        int idx = sr + off == -1 ? 0 : sw->align[sr + off] + 1;
                        if (idx == prev_idx) continue;
                        prev_idx = idx;
                        perform_shift(h, nh, sh, len, idx, sw->cand);
                        int p = 0;
                        while (p < nh && sw->cand[p] == h[p]) p++;
                        int gain = pre - (p == nh ? pre : beam_rest(e, h, sw->cand, p));
                        (*checked)++;
                        /* (gain, len, -start, -target) compared as a tuple */
                        if (!have || gain > b_gain ||
                            (gain == b_gain && (len > b_len || (len == b_len && (sh < b_start ||
                                                (sh == b_start && idx < b_idx)))))) {
                            have = 1, b_gain = gain, b_len = len, b_start = sh, b_idx = idx;
                            memcpy(sw->best, sw->cand, (size_t)nh * sizeof *sw->best);
                        }
                    }
                    if (*checked >= TER_MAX_SHIFT_CANDIDATES) return have ? b_gain : 0;
                }
                if (sh + len == nh || sr + len == nr) break;
            }
        }
    }
    return have ? b_gain : 0;
}

/* translation_edit_rate on word ids: hyp (nh) against ref (nr >= 1). */
static NmtStatus edits_of(const int *hyp, int nh, const int *ref, int nr, int n_ids, int64_t *out) {
    BeamEd e;
    ShiftWork sw;
    memset(&sw, 0, sizeof sw);
    NmtStatus st = beam_init(&e, nh, ref, nr, n_ids);
    size_t hn = (size_t)(nh ? nh : 1);
    if (!st) {
        sw.words = nmt_malloc(hn * sizeof *sw.words);
        sw.cand = nmt_malloc(hn * sizeof *sw.cand);
        sw.best = nmt_malloc(hn * sizeof *sw.best);
        sw.herr = nmt_malloc((size_t)(nh + 1) * sizeof *sw.herr);
        sw.rerr = nmt_malloc((size_t)(nr + 1) * sizeof *sw.rerr);
        sw.align = nmt_malloc((size_t)nr * sizeof *sw.align);
        sw.trace = nmt_malloc((size_t)(nh + nr));
        if (!sw.words || !sw.cand || !sw.best || !sw.herr || !sw.rerr || !sw.align || !sw.trace)
            st = nmt_fail_nomem("TER shifts");
    }
    if (!st) {
        memcpy(sw.words, hyp, (size_t)nh * sizeof *hyp);
        int shifts = 0, checked = 0, pre, n_trace, p = 0;
        for (;;) { /* shift while it lowers the distance */
            pre = beam_base(&e, sw.words, p, sw.trace, &n_trace);
            int gain = best_shift(&e, &sw, pre, n_trace, &checked);
            if (checked >= TER_MAX_SHIFT_CANDIDATES || gain <= 0) break;
            shifts++;
            for (p = 0; p < nh && sw.best[p] == sw.words[p];) p++; /* rows 0..p stay */
            int *t = sw.words;
            sw.words = sw.best;
            sw.best = t;
        }
        *out = shifts + pre;
    }
    beam_free(&e);
    nmt_free(sw.words);
    nmt_free(sw.cand);
    nmt_free(sw.best);
    nmt_free(sw.herr);
    nmt_free(sw.rerr);
    nmt_free(sw.align);
    nmt_free(sw.trace);
    return st;
}

NmtStatus ter_edits(const char *hyp_tok, const char *ref_tok, int64_t *edits, int64_t *ref_words) {
    size_t nh = count_words(hyp_tok), nr = count_words(ref_tok);
    *edits = 0;
    *ref_words = (int64_t)nr;
    if (nr == 0) { /* lib_ter: every hypothesis word is deleted */
        *edits = (int64_t)nh;
        return NMT_OK;
    }
    if (nh + nr > (size_t)TER_INF / 4)
        return nmt_fail(NMT_ERR_USAGE, "TER: a segment of %zu words is too long", nh + nr);
    WordTable t;
    int *ids = NULL;
    NmtStatus st = table_init(&t, nh + nr);
    if (!st && !(ids = nmt_malloc((nh + nr) * sizeof *ids))) st = nmt_fail_nomem("TER words");
    if (!st) {
        table_ids(&t, hyp_tok, ids);
        table_ids(&t, ref_tok, ids + nh);
        st = edits_of(ids, (int)nh, ids + nh, (int)nr, t.n_ids, edits);
    }
    nmt_free(ids);
    table_free(&t);
    return st;
}

/* ------------------------------------------------------------------ */
/* Segments and scores                                                 */
/* ------------------------------------------------------------------ */

NmtStatus ter_sentence_stats(const char *hyp, const char *const *refs, int n_refs,
                             const TerOptions *opt, TerStats *out) {
    if (n_refs < 1) return nmt_fail(NMT_ERR_USAGE, "TER needs at least one reference");
    char *h = NULL;
    NmtStatus st = ter_tokenize(hyp, opt, &h);
    int64_t best = INT64_MAX, words = 0;
    for (int k = 0; k < n_refs && !st; k++) {
        /* sacreBLEU preprocesses references twice (Metric._cache_references,
         * then TER._extract_reference_info), which matters with
         * normalization: "it's." is "it's ." after one pass, "it 's ." after
         * two. Without it the second pass changes nothing (str.lower is
         * idempotent) and is skipped. */
        char *once = NULL, *r = NULL;
        st = ter_tokenize(refs[k] ? refs[k] : "", opt, &once);
        if (!st && opt->normalized) st = ter_tokenize(once, opt, &r);
        else r = once, once = NULL;
        int64_t e = 0, n = 0;
        if (!st) st = ter_edits(h, r, &e, &n);
        if (!st) {
            words += n;
            if (e < best) best = e;
        }
        nmt_free(once);
        nmt_free(r);
    }
    nmt_free(h);
    if (st) return st;
    out->edits = best;
    out->ref_words = words;
    out->ref_len = (double)words / n_refs;
    return NMT_OK;
}

NmtStatus ter_add_sentence(TerStats *acc, const char *hyp, const char *const *refs, int n_refs,
                           const TerOptions *opt) {
    TerStats s;
    NmtStatus st = ter_sentence_stats(hyp, refs, n_refs, opt, &s);
    if (st == NMT_OK) ter_stats_add(acc, &s);
    return st;
}

double ter_score(const TerStats *s) {
    double score;
    if (s->ref_len > 0) score = (double)s->edits / s->ref_len;
    else if (s->edits > 0) score = 1.0; /* empty references, non-empty hypothesis */
    else score = 0.0;
    return 100 * score;
}

double ter_score_numpy_f32(const float *stats, int *python_float) {
    float edits = stats[0], ref_len = stats[1];
    *python_float = !(ref_len > 0);
    if (ref_len > 0) {
        float score = edits / ref_len;
        return (float)(100.0f * score);
    }
    return edits > 0 ? 100.0 : 0.0;
}

int ter_signature(const TerOptions *opt, int n_refs, int n_bootstrap, const char *seed, char *buf,
                  size_t cap) {
    char bs[32] = "", sd[64] = "";
    if (n_bootstrap > 0) snprintf(bs, sizeof bs, "bs:%d|", n_bootstrap);
    if (seed) snprintf(sd, sizeof sd, "seed:%s|", seed);
    return snprintf(buf, cap, "nrefs:%d|%s%scase:%s|tok:tercom|norm:%s|punct:%s|asian:%s|version:%s",
                    n_refs, bs, sd, opt->case_sensitive ? "mixed" : "lc", opt->normalized ? "yes" : "no",
                    opt->no_punct ? "no" : "yes", opt->asian_support ? "yes" : "no",
                    NMT_SACREBLEU_VERSION);
}

int ter_format_line(double score, const char *signature, int width, char *buf, size_t cap) {
    return bleu_format_score("TER", signature, score, width, NULL, NULL, buf, cap);
}
