/* demo_corpus.c: the generated demo translation task (demo_corpus.h,
 * docs/demo-corpus.md): the lexicon, the sentence sampler, the two
 * renderers (source, target), the source parser used by
 * demo_corpus_translate, concept extraction for tests, and the writer. */
#include "data/demo_corpus.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data/rng.h"
#include "fileio.h"

/* ---- lexicon ------------------------------------------------------------ */

/* Word classes (concept id = class * 1000 + index, numbers 8000 + value). */
enum {
    W_NONE = 0,
    W_NOUN = 1, W_ADJ, W_TVERB, W_IVERB, W_ADV, W_PREP, W_CONJ, W_NUM,
    W_DEF = 10, W_INDEF, W_PL, W_PAST, W_NEG /* source particles */
};

/* target forms: singular, plural */
static const char *const NOUNS[][2] = {
    {"dog", "dogs"}, {"cat", "cats"}, {"man", "men"}, {"woman", "women"},
    {"child", "children"}, {"teacher", "teachers"}, {"doctor", "doctors"},
    {"farmer", "farmers"}, {"bird", "birds"}, {"horse", "horses"}, {"apple", "apples"},
    {"egg", "eggs"}, {"owl", "owls"}, {"elephant", "elephants"}, {"island", "islands"},
    {"umbrella", "umbrellas"}, {"house", "houses"}, {"river", "rivers"}, {"tree", "trees"},
    {"garden", "gardens"}, {"book", "books"}, {"letter", "letters"}, {"car", "cars"},
    {"boat", "boats"}, {"city", "cities"}, {"village", "villages"}, {"table", "tables"},
    {"chair", "chairs"}, {"window", "windows"}, {"door", "doors"}, {"king", "kings"},
    {"queen", "queens"}, {"student", "students"}, {"friend", "friends"},
    {"mountain", "mountains"}, {"forest", "forests"}, {"road", "roads"},
    {"bridge", "bridges"}, {"girl", "girls"}, {"boy", "boys"}, {"engineer", "engineers"},
    {"artist", "artists"}, {"uncle", "uncles"}, {"ant", "ants"}, {"eagle", "eagles"},
    {"key", "keys"}, {"box", "boxes"}, {"lamp", "lamps"}, {"cup", "cups"}, {"song", "songs"},
    {"fire truck", "fire trucks"}, {"ice cream", "ice creams"}, {"bus stop", "bus stops"},
    {"post office", "post offices"}, {"train station", "train stations"},
    {"tea pot", "tea pots"}, {"school", "schools"}, {"baker", "bakers"},
    {"sister", "sisters"}, {"brother", "brothers"},
};
static const char *const ADJS[] = {
    "big", "small", "old", "young", "red", "green", "blue", "yellow", "happy", "sad",
    "tall", "short", "quiet", "new", "empty", "angry", "ugly", "elegant", "eager", "icy",
    "clever", "brave", "heavy", "warm", "cold", "dark", "bright", "strange", "famous", "kind",
};
/* target forms: base, third person singular, past */
static const char *const TVERBS[][3] = {
    {"see", "sees", "saw"}, {"find", "finds", "found"}, {"take", "takes", "took"},
    {"buy", "buys", "bought"}, {"sell", "sells", "sold"}, {"bring", "brings", "brought"},
    {"carry", "carries", "carried"}, {"paint", "paints", "painted"},
    {"visit", "visits", "visited"}, {"follow", "follows", "followed"},
    {"help", "helps", "helped"}, {"call", "calls", "called"}, {"watch", "watches", "watched"},
    {"open", "opens", "opened"}, {"close", "closes", "closed"}, {"build", "builds", "built"},
    {"write", "writes", "wrote"}, {"love", "loves", "loved"}, {"clean", "cleans", "cleaned"},
    {"catch", "catches", "caught"}, {"push", "pushes", "pushed"}, {"meet", "meets", "met"},
    {"know", "knows", "knew"}, {"draw", "draws", "drew"}, {"hide", "hides", "hid"},
    {"eat", "eats", "ate"}, {"look at", "looks at", "looked at"},
    {"wait for", "waits for", "waited for"}, {"listen to", "listens to", "listened to"},
    {"pick up", "picks up", "picked up"},
};
static const char *const IVERBS[][3] = {
    {"sleep", "sleeps", "slept"}, {"run", "runs", "ran"}, {"sing", "sings", "sang"},
    {"swim", "swims", "swam"}, {"laugh", "laughs", "laughed"}, {"cry", "cries", "cried"},
    {"dance", "dances", "danced"}, {"arrive", "arrives", "arrived"},
    {"leave", "leaves", "left"}, {"fall", "falls", "fell"}, {"smile", "smiles", "smiled"},
    {"work", "works", "worked"}, {"jump", "jumps", "jumped"},
    {"sit down", "sits down", "sat down"}, {"wake up", "wakes up", "woke up"},
};
static const char *const ADVS[] = {
    "quickly", "slowly", "quietly", "loudly", "happily", "sadly",
    "carefully", "often", "today", "yesterday", "again", "every day",
};
static const char *const PREPS[] = {"in", "on", "near", "behind", "under", "with", "in front of"};
static const char *const CONJS[] = {"because", "when", "while", "although", "before", "after"};

/* source function words (all at most 3 letters; content words have 4+) */
static const char *const SRC_POSTP[] = {"ul", "sep", "pa", "dor", "ves", "mi", "kan"};
static const char *const SRC_CONJ[] = {"zum", "fel", "gor", "lis", "bax", "tov"};
static const struct { const char *word; int cls; } SRC_PARTICLES[] = {
    {"na", W_DEF}, {"ki", W_INDEF}, {"ri", W_PL}, {"te", W_PAST}, {"mu", W_NEG},
};

#define N_NOUNS ((int)NMT_ARRAY_LEN(NOUNS))
#define N_ADJS ((int)NMT_ARRAY_LEN(ADJS))
#define N_TVERBS ((int)NMT_ARRAY_LEN(TVERBS))
#define N_IVERBS ((int)NMT_ARRAY_LEN(IVERBS))
#define N_ADVS ((int)NMT_ARRAY_LEN(ADVS))
#define N_PREPS ((int)NMT_ARRAY_LEN(PREPS))
#define N_CONJS ((int)NMT_ARRAY_LEN(CONJS))

/* Source content words are two consonant-vowel syllables plus a class
 * ending: nouns "kato", adjectives "-l", transitive verbs "-r",
 * intransitive verbs "-n", adverbs "-sh". The first syllable is
 * (index * mul + add) mod 70 with mul coprime to 70, hence unique per class. */
static const char SRC_CONS[] = "bdfgklmnprstvz"; /* 14 x 5 vowels = 70 syllables */
static const char SRC_VOWELS[] = "aeiou";
static const struct { int cls, mul1, add1, mul2, add2; const char *ending; } SRC_FORM[] = {
    {W_NOUN, 11, 3, 23, 7, ""}, {W_ADJ, 13, 5, 17, 1, "l"}, {W_TVERB, 19, 2, 29, 11, "r"},
    {W_IVERB, 31, 9, 37, 4, "n"}, {W_ADV, 41, 6, 43, 8, "sh"},
};

static int class_size(int cls) {
    switch (cls) {
    case W_NOUN: return N_NOUNS;
    case W_ADJ: return N_ADJS;
    case W_TVERB: return N_TVERBS;
    case W_IVERB: return N_IVERBS;
    case W_ADV: return N_ADVS;
    case W_PREP: return N_PREPS;
    case W_CONJ: return N_CONJS;
    default: return 0;
    }
}

/* The source word of (cls, idx) into out (at least 8 bytes). */
static const char *src_word(int cls, int idx, char *out) {
    if (cls == W_PREP) return SRC_POSTP[idx];
    if (cls == W_CONJ) return SRC_CONJ[idx];
    for (size_t f = 0; f < NMT_ARRAY_LEN(SRC_FORM); f++) {
        if (SRC_FORM[f].cls != cls) continue;
        int s1 = (idx * SRC_FORM[f].mul1 + SRC_FORM[f].add1) % 70;
        int s2 = (idx * SRC_FORM[f].mul2 + SRC_FORM[f].add2) % 70;
        snprintf(out, 8, "%c%c%c%c%s", SRC_CONS[s1 / 5], SRC_VOWELS[s1 % 5], SRC_CONS[s2 / 5],
                 SRC_VOWELS[s2 % 5], SRC_FORM[f].ending);
        return out;
    }
    NMT_ASSERT(!"src_word: no such class");
    return NULL;
}

/* A number token "2".."99" (no leading zero) -> value, else 0. */
static int number_value(const char *w) {
    size_t n = strlen(w);
    if (n < 1 || n > 2 || w[0] < '1' || w[0] > '9' || (n == 2 && (w[1] < '0' || w[1] > '9'))) return 0;
    int v = n == 1 ? w[0] - '0' : (w[0] - '0') * 10 + (w[1] - '0');
    return v >= 2 ? v : 0;
}

/* Classifies a source word: returns its class and sets *idx (the index, or
 * the value of a number); W_NONE when it is not in the lexicon. */
static int src_lookup(const char *w, int *idx) {
    int v = number_value(w);
    if (v) {
        *idx = v;
        return W_NUM;
    }
    for (size_t i = 0; i < NMT_ARRAY_LEN(SRC_PARTICLES); i++)
        if (!strcmp(w, SRC_PARTICLES[i].word)) {
            *idx = 0;
            return SRC_PARTICLES[i].cls;
        }
    for (int i = 0; i < N_PREPS; i++)
        if (!strcmp(w, SRC_POSTP[i])) return *idx = i, W_PREP;
    for (int i = 0; i < N_CONJS; i++)
        if (!strcmp(w, SRC_CONJ[i])) return *idx = i, W_CONJ;
    size_t n = strlen(w);
    if (n < 4 || n > 6) return W_NONE;
    for (size_t f = 0; f < NMT_ARRAY_LEN(SRC_FORM); f++) {
        if (strcmp(w + 4, SRC_FORM[f].ending)) continue;
        char buf[8];
        int cls = SRC_FORM[f].cls;
        for (int i = 0; i < class_size(cls); i++)
            if (!strcmp(w, src_word(cls, i, buf))) return *idx = i, cls;
    }
    return W_NONE;
}

/* ---- sentences ---------------------------------------------------------- */

typedef struct {
    int noun;
    int n_adj, adj[2]; /* source order; the target mirrors it */
    int definite;
    int number; /* 0, or 2..99 (implies plural, no plural particle) */
    int plural;
} DemoNP;

typedef struct {
    DemoNP subj;
    int transitive, verb; /* TVERBS index when transitive, else IVERBS */
    DemoNP obj;
    int has_pp, prep;
    DemoNP pp;
    int has_adv, adv;
    int past, neg;
} DemoClause;

typedef struct {
    DemoClause main;
    int has_sub, conj;
    DemoClause sub; /* source: before the conjunction; target: after it */
} DemoSentence;

static int chance(Rng *r, int percent) { return (int)rng_below(r, 100) < percent; }

static void np_sample(Rng *r, DemoNP *np) {
    memset(np, 0, sizeof *np);
    np->noun = (int)rng_below(r, N_NOUNS);
    np->definite = chance(r, 50);
    if (chance(r, 12)) {
        np->number = 2 + (int)rng_below(r, 98);
        np->plural = 1;
    } else {
        np->plural = chance(r, 30);
    }
    int u = (int)rng_below(r, 100);
    np->n_adj = u < 40 ? 0 : u < 75 ? 1 : 2;
    for (int i = 0; i < np->n_adj; i++) {
        do np->adj[i] = (int)rng_below(r, N_ADJS);
        while (i == 1 && np->adj[1] == np->adj[0]);
    }
}

static void clause_sample(Rng *r, DemoClause *c) {
    memset(c, 0, sizeof *c);
    np_sample(r, &c->subj);
    c->transitive = chance(r, 65);
    c->verb = (int)rng_below(r, c->transitive ? N_TVERBS : N_IVERBS);
    if (c->transitive) np_sample(r, &c->obj);
    c->has_pp = chance(r, 40);
    if (c->has_pp) {
        c->prep = (int)rng_below(r, N_PREPS);
        np_sample(r, &c->pp);
    }
    c->has_adv = chance(r, 30);
    if (c->has_adv) c->adv = (int)rng_below(r, N_ADVS);
    c->past = chance(r, 40);
    c->neg = chance(r, 20);
}

static void sentence_sample(Rng *r, DemoSentence *s) {
    memset(s, 0, sizeof *s);
    clause_sample(r, &s->main);
    s->has_sub = chance(r, 40);
    if (s->has_sub) {
        s->conj = (int)rng_below(r, N_CONJS);
        clause_sample(r, &s->sub);
    }
}

/* ---- rendering ------------------------------------------------------------ */

#define LINE_CAP 2048

typedef struct {
    char buf[LINE_CAP];
    size_t len;
    int words;
    int overflow;
} Line;

static void line_add(Line *l, const char *w) {
    size_t n = strlen(w);
    if (l->len + n + 2 > LINE_CAP) {
        l->overflow = 1;
        return;
    }
    if (l->len) l->buf[l->len++] = ' ';
    memcpy(l->buf + l->len, w, n + 1);
    l->len += n;
    l->words++;
    for (size_t i = 0; i < n; i++) l->words += w[i] == ' ';
}

static void line_add_number(Line *l, int v) {
    char b[8];
    snprintf(b, sizeof b, "%d", v);
    line_add(l, b);
}

static void line_add_src(Line *l, int cls, int idx) {
    char b[8];
    line_add(l, src_word(cls, idx, b));
}

/* source NP: [NUM] NOUN [ri] ADJ* (na | ki) */
static void np_src(Line *l, const DemoNP *np) {
    if (np->number) line_add_number(l, np->number);
    line_add_src(l, W_NOUN, np->noun);
    if (np->plural && !np->number) line_add(l, "ri");
    for (int i = 0; i < np->n_adj; i++) line_add_src(l, W_ADJ, np->adj[i]);
    line_add(l, np->definite ? "na" : "ki");
}

/* target NP: (the | a | an | -) [NUM] ADJ(mirrored)* NOUN */
static void np_tgt(Line *l, const DemoNP *np) {
    const char *noun = NOUNS[np->noun][np->plural ? 1 : 0];
    if (np->definite) {
        line_add(l, "the");
    } else if (!np->plural) {
        const char *next = np->n_adj ? ADJS[np->adj[np->n_adj - 1]] : noun;
        line_add(l, strchr("aeiou", next[0]) ? "an" : "a");
    }
    if (np->number) line_add_number(l, np->number);
    for (int i = np->n_adj - 1; i >= 0; i--) line_add(l, ADJS[np->adj[i]]);
    line_add(l, noun);
}

/* source clause: SUBJ [PP POSTP] [OBJ] [ADV] VERB [te] [mu] */
static void clause_src(Line *l, const DemoClause *c) {
    np_src(l, &c->subj);
    if (c->has_pp) {
        np_src(l, &c->pp);
        line_add_src(l, W_PREP, c->prep);
    }
    if (c->transitive) np_src(l, &c->obj);
    if (c->has_adv) line_add_src(l, W_ADV, c->adv);
    line_add_src(l, c->transitive ? W_TVERB : W_IVERB, c->verb);
    if (c->past) line_add(l, "te");
    if (c->neg) line_add(l, "mu");
}

/* target clause: SUBJ VERB-GROUP [OBJ] [PREP NP] [ADV] */
static void clause_tgt(Line *l, const DemoClause *c) {
    np_tgt(l, &c->subj);
    const char *const *forms = c->transitive ? TVERBS[c->verb] : IVERBS[c->verb];
    int plural_subj = c->subj.plural;
    if (c->neg) {
        line_add(l, c->past ? "did" : plural_subj ? "do" : "does");
        line_add(l, "not");
        line_add(l, forms[0]);
    } else {
        line_add(l, c->past ? forms[2] : plural_subj ? forms[0] : forms[1]);
    }
    if (c->transitive) np_tgt(l, &c->obj);
    if (c->has_pp) {
        line_add(l, PREPS[c->prep]);
        np_tgt(l, &c->pp);
    }
    if (c->has_adv) line_add(l, ADVS[c->adv]);
}

static void sentence_src(Line *l, const DemoSentence *s) {
    memset(l, 0, sizeof *l);
    if (s->has_sub) {
        clause_src(l, &s->sub);
        line_add_src(l, W_CONJ, s->conj);
    }
    clause_src(l, &s->main);
}

static void sentence_tgt(Line *l, const DemoSentence *s) {
    memset(l, 0, sizeof *l);
    clause_tgt(l, &s->main);
    if (s->has_sub) {
        line_add(l, CONJS[s->conj]);
        clause_tgt(l, &s->sub);
    }
}

/* ---- parsing the source ------------------------------------------------- */

#define MAX_TOKENS 256

typedef struct {
    int n;
    int cls[MAX_TOKENS], idx[MAX_TOKENS];
    const char *word[MAX_TOKENS];
    char store[LINE_CAP];
} Tokens;

/* Splits a line on blanks; NMT_ERR_FORMAT on an unknown or over-long input. */
static NmtStatus tokenize_src(const char *line, Tokens *t) {
    t->n = 0;
    size_t len = strlen(line);
    if (len >= LINE_CAP) return nmt_fail(NMT_ERR_FORMAT, "demo source: line longer than %d bytes", LINE_CAP - 1);
    memcpy(t->store, line, len + 1);
    char *save = NULL;
    for (char *w = strtok_r(t->store, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        if (t->n == MAX_TOKENS) return nmt_fail(NMT_ERR_FORMAT, "demo source: more than %d words", MAX_TOKENS);
        int idx = 0, cls = src_lookup(w, &idx);
        if (cls == W_NONE)
            return nmt_fail(NMT_ERR_FORMAT, "demo source: word %d ('%s') is not in the lexicon", t->n + 1, w);
        t->cls[t->n] = cls;
        t->idx[t->n] = idx;
        t->word[t->n] = w;
        t->n++;
    }
    return NMT_OK;
}

static NmtStatus parse_error(const Tokens *t, int i, const char *expected) {
    if (i >= t->n) return nmt_fail(NMT_ERR_FORMAT, "demo source: sentence ends where %s was expected", expected);
    return nmt_fail(NMT_ERR_FORMAT, "demo source: word %d ('%s'): expected %s", i + 1, t->word[i], expected);
}

/* NP over tokens [*i, end): [NUM] NOUN [ri] ADJ{0,2} (na | ki) */
static NmtStatus parse_np(const Tokens *t, int *i, int end, DemoNP *np) {
    memset(np, 0, sizeof *np);
    int p = *i;
    if (p < end && t->cls[p] == W_NUM) np->number = t->idx[p++], np->plural = 1;
    if (p >= end || t->cls[p] != W_NOUN) return parse_error(t, p < end ? p : t->n, "a noun");
    np->noun = t->idx[p++];
    if (p < end && t->cls[p] == W_PL) {
        if (np->number) return parse_error(t, p, "no plural particle after a number");
        np->plural = 1;
        p++;
    }
    while (p < end && t->cls[p] == W_ADJ) {
        if (np->n_adj == 2) return parse_error(t, p, "at most two adjectives");
        np->adj[np->n_adj++] = t->idx[p++];
    }
    if (p >= end || (t->cls[p] != W_DEF && t->cls[p] != W_INDEF))
        return parse_error(t, p < end ? p : t->n, "an adjective or a determiner (na, ki)");
    np->definite = t->cls[p++] == W_DEF;
    *i = p;
    return NMT_OK;
}

static int starts_np(const Tokens *t, int i, int end) {
    return i < end && (t->cls[i] == W_NOUN || t->cls[i] == W_NUM);
}

/* clause over tokens [i, end): SUBJ [NP POSTP] [OBJ] [ADV] VERB [te] [mu] */
static NmtStatus parse_clause(const Tokens *t, int i, int end, DemoClause *c) {
    memset(c, 0, sizeof *c);
    NmtStatus st = parse_np(t, &i, end, &c->subj);
    if (st) return st;
    int has_obj = 0;
    if (starts_np(t, i, end)) {
        DemoNP np;
        if ((st = parse_np(t, &i, end, &np))) return st;
        if (i < end && t->cls[i] == W_PREP) {
            c->has_pp = 1, c->prep = t->idx[i++], c->pp = np;
            if (starts_np(t, i, end)) {
                if ((st = parse_np(t, &i, end, &c->obj))) return st;
                has_obj = 1;
            }
        } else {
            c->obj = np, has_obj = 1;
        }
    }
    if (i < end && t->cls[i] == W_ADV) c->has_adv = 1, c->adv = t->idx[i++];
    if (i >= end || (t->cls[i] != W_TVERB && t->cls[i] != W_IVERB))
        return parse_error(t, i < end ? i : t->n, "a verb");
    c->transitive = t->cls[i] == W_TVERB;
    c->verb = t->idx[i];
    if (c->transitive != has_obj)
        return parse_error(t, i, has_obj ? "a verb that takes an object" : "a verb without an object");
    i++;
    if (i < end && t->cls[i] == W_PAST) c->past = 1, i++;
    if (i < end && t->cls[i] == W_NEG) c->neg = 1, i++;
    if (i < end) return parse_error(t, i, "the end of the clause");
    return NMT_OK;
}

static NmtStatus parse_sentence(const Tokens *t, DemoSentence *s) {
    memset(s, 0, sizeof *s);
    int conj_at = -1;
    for (int i = 0; i < t->n; i++)
        if (t->cls[i] == W_CONJ) {
            if (conj_at >= 0) return parse_error(t, i, "at most one conjunction");
            conj_at = i;
        }
    if (conj_at < 0) return parse_clause(t, 0, t->n, &s->main);
    s->has_sub = 1;
    s->conj = t->idx[conj_at];
    NmtStatus st = parse_clause(t, 0, conj_at, &s->sub);
    if (st) return st;
    return parse_clause(t, conj_at + 1, t->n, &s->main);
}

NmtStatus demo_corpus_translate(const char *src_line, char *out, size_t cap) {
    Tokens *t = nmt_malloc(sizeof *t);
    Line *l = nmt_malloc(sizeof *l);
    NmtStatus st = NMT_OK;
    DemoSentence s;
    if (!t || !l) {
        st = nmt_fail_nomem("translating a demo sentence");
    } else if (!(st = tokenize_src(src_line, t)) && !(st = parse_sentence(t, &s))) {
        sentence_tgt(l, &s);
        if (l->overflow || l->len + 1 > cap)
            st = nmt_fail(NMT_ERR_RUNTIME, "demo translation: output longer than %zu bytes", cap);
        else
            memcpy(out, l->buf, l->len + 1);
    }
    nmt_free(t);
    nmt_free(l);
    return st;
}

/* ---- concepts ------------------------------------------------------------ */

/* Words of `phrase` matched against words w[0..n): number of words, or 0. */
static int match_phrase(char *const *w, int n, const char *phrase) {
    int k = 0;
    const char *p = phrase;
    if (n < 1 || w[0][0] != p[0]) return 0;
    while (*p) {
        if (k >= n) return 0;
        size_t len = strcspn(p, " ");
        if (strlen(w[k]) != len || strncmp(w[k], p, len)) return 0;
        k++;
        p += len;
        if (*p == ' ') p++;
    }
    return k;
}

static void consider(char *const *w, int n, const char *phrase, int id, int *best_len, int *best_id) {
    int k = match_phrase(w, n, phrase);
    if (k > *best_len) *best_len = k, *best_id = id;
}

/* Longest target lexicon entry at w[0..n): its length in words and concept
 * (-2 for a function word); 0 when nothing matches. */
static int tgt_match(char *const *w, int n, int *id) {
    static const char *const FUNCTION[] = {"the", "a", "an", "does", "do", "did", "not"};
    int best = 0;
    *id = -1;
    for (size_t i = 0; i < NMT_ARRAY_LEN(FUNCTION); i++) consider(w, n, FUNCTION[i], -2, &best, id);
    for (int i = 0; i < N_NOUNS; i++)
        for (int f = 0; f < 2; f++) consider(w, n, NOUNS[i][f], W_NOUN * 1000 + i, &best, id);
    for (int i = 0; i < N_ADJS; i++) consider(w, n, ADJS[i], W_ADJ * 1000 + i, &best, id);
    for (int i = 0; i < N_TVERBS; i++)
        for (int f = 0; f < 3; f++) consider(w, n, TVERBS[i][f], W_TVERB * 1000 + i, &best, id);
    for (int i = 0; i < N_IVERBS; i++)
        for (int f = 0; f < 3; f++) consider(w, n, IVERBS[i][f], W_IVERB * 1000 + i, &best, id);
    for (int i = 0; i < N_ADVS; i++) consider(w, n, ADVS[i], W_ADV * 1000 + i, &best, id);
    for (int i = 0; i < N_PREPS; i++) consider(w, n, PREPS[i], W_PREP * 1000 + i, &best, id);
    for (int i = 0; i < N_CONJS; i++) consider(w, n, CONJS[i], W_CONJ * 1000 + i, &best, id);
    int v = number_value(w[0]);
    if (v && best < 1) best = 1, *id = W_NUM * 1000 + v;
    return best;
}

int demo_corpus_concepts(const char *line, int target_side, int32_t *out, int cap) {
    char store[LINE_CAP];
    char *w[MAX_TOKENS];
    int n = 0, count = 0;
    size_t len = strlen(line);
    if (len >= LINE_CAP) return -1;
    memcpy(store, line, len + 1);
    char *save = NULL;
    for (char *p = strtok_r(store, " \t\r\n", &save); p; p = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == MAX_TOKENS) return -1;
        w[n++] = p;
    }
    for (int i = 0; i < n;) {
        int id = -1, k = 1;
        if (target_side) {
            k = tgt_match(w + i, n - i, &id);
            if (k == 0) return -1;
        } else {
            int idx = 0, cls = src_lookup(w[i], &idx);
            if (cls == W_NONE) return -1;
            id = cls <= W_NUM ? cls * 1000 + idx : -2;
        }
        if (id >= 0 && count < cap) out[count++] = id;
        i += k;
    }
    return count;
}

/* ---- generation ----------------------------------------------------------- */

void demo_corpus_spec_default(DemoCorpusSpec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->seed = 1;
    spec->n_pairs[DEMO_TRAIN] = 20000;
    spec->n_pairs[DEMO_VALID] = 500;
    spec->n_pairs[DEMO_TEST] = 500;
    spec->min_words = 3;
    spec->max_words = 25;
}

const char *demo_corpus_split_name(int split) {
    static const char *const names[DEMO_N_SPLITS] = {"train", "valid", "test"};
    NMT_ASSERT(split >= 0 && split < DEMO_N_SPLITS);
    return names[split];
}

void demo_corpus_free(DemoCorpus *c) {
    if (!c) return;
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        nmt_free(c->split[s].src);
        nmt_free(c->split[s].tgt);
        nmt_free(c->split[s].src_off);
        nmt_free(c->split[s].tgt_off);
    }
    nmt_free(c);
}

/* Appends line + '\n' to a growable text. */
static int text_append(char **text, int64_t *cap, int64_t used, const Line *l) {
    int64_t need = used + (int64_t)l->len + 1;
    if (need > *cap) {
        int64_t c = *cap ? *cap : 4096;
        while (c < need) c *= 2;
        char *p = nmt_realloc(*text, (size_t)c);
        if (!p) return 0;
        *text = p;
        *cap = c;
    }
    memcpy(*text + used, l->buf, l->len);
    (*text)[used + (int64_t)l->len] = '\n';
    return 1;
}

static uint64_t hash_line(const Line *l) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < l->len; i++) h = (h ^ (unsigned char)l->buf[i]) * 1099511628211ULL;
    h = rng_mix64(h);
    return h ? h : 1; /* 0 marks an empty slot */
}

/* Inserts h into the open-addressing set; 0 if it was already there. */
static int set_insert(uint64_t *set, uint64_t mask, uint64_t h) {
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        if (set[i] == h) return 0;
        if (!set[i]) {
            set[i] = h;
            return 1;
        }
    }
}

#define DEMO_MAX_PAIRS 100000000LL
#define DEMO_MAX_STALL 100000

NmtStatus demo_corpus_generate(const DemoCorpusSpec *spec, DemoCorpus **out) {
    *out = NULL;
    int64_t total = 0;
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        if (spec->n_pairs[s] < 0 || spec->n_pairs[s] > DEMO_MAX_PAIRS)
            return nmt_fail(NMT_ERR_CONFIG, "demo corpus: %s size %lld is outside 0..%lld",
                            demo_corpus_split_name(s), (long long)spec->n_pairs[s], DEMO_MAX_PAIRS);
        total += spec->n_pairs[s];
    }
    if (spec->min_words < 1 || spec->max_words < spec->min_words || spec->max_words < 3 ||
        spec->max_words > 200)
        return nmt_fail(NMT_ERR_CONFIG,
                        "demo corpus: word range %d..%d must satisfy 1 <= min <= max, 3 <= max <= 200",
                        spec->min_words, spec->max_words);

    DemoCorpus *c = nmt_calloc(1, sizeof *c);
    uint64_t cap_set = 64;
    while (cap_set < 2 * (uint64_t)total + 64) cap_set *= 2;
    uint64_t *set = nmt_calloc((size_t)cap_set, sizeof *set);
    Line *src = nmt_malloc(sizeof *src), *tgt = nmt_malloc(sizeof *tgt);
    NmtStatus st = NMT_OK;
    if (!c || !set || !src || !tgt) {
        st = nmt_fail_nomem("generating the demo corpus");
        goto done;
    }
    /* test first, then valid, then train: the held-out sets do not depend on
     * the train size */
    static const int order[DEMO_N_SPLITS] = {DEMO_TEST, DEMO_VALID, DEMO_TRAIN};
    for (int k = 0; k < DEMO_N_SPLITS; k++) {
        int split = order[k];
        DemoText *t = &c->split[split];
        int64_t n = spec->n_pairs[split];
        t->src_off = nmt_calloc((size_t)n + 1, sizeof *t->src_off);
        t->tgt_off = nmt_calloc((size_t)n + 1, sizeof *t->tgt_off);
        if (!t->src_off || !t->tgt_off) {
            st = nmt_fail_nomem("generating the demo corpus");
            goto done;
        }
        Rng rng;
        rng_seed(&rng, spec->seed, 0x64656d6f00ULL + (uint64_t)split);
        /* give up after DEMO_MAX_STALL draws in a row without a new sentence */
        int64_t src_cap = 0, tgt_cap = 0, stall = 0;
        while (t->n < n) {
            if (++stall > DEMO_MAX_STALL) {
                st = nmt_fail(NMT_ERR_RUNTIME,
                              "demo corpus: found only %lld distinct %s sentences of %d..%d words "
                              "(asked for %lld)",
                              (long long)t->n, demo_corpus_split_name(split), spec->min_words,
                              spec->max_words, (long long)n);
                goto done;
            }
            DemoSentence s;
            sentence_sample(&rng, &s);
            sentence_src(src, &s);
            sentence_tgt(tgt, &s);
            NMT_ASSERT(!src->overflow && !tgt->overflow);
            if (src->words < spec->min_words || src->words > spec->max_words ||
                tgt->words < spec->min_words || tgt->words > spec->max_words)
                continue;
            if (!set_insert(set, cap_set - 1, hash_line(src))) continue;
            if (!text_append(&t->src, &src_cap, t->src_off[t->n], src) ||
                !text_append(&t->tgt, &tgt_cap, t->tgt_off[t->n], tgt)) {
                st = nmt_fail_nomem("generating the demo corpus");
                goto done;
            }
            t->src_off[t->n + 1] = t->src_off[t->n] + (int64_t)src->len + 1;
            t->tgt_off[t->n + 1] = t->tgt_off[t->n] + (int64_t)tgt->len + 1;
            t->n++;
            stall = 0;
        }
    }
done:
    nmt_free(set);
    nmt_free(src);
    nmt_free(tgt);
    if (st) {
        demo_corpus_free(c);
        return st;
    }
    *out = c;
    return NMT_OK;
}

/* ---- writing -------------------------------------------------------------- */

/* mkdir -p */
static NmtStatus make_dirs(const char *dir) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return nmt_fail(NMT_ERR_IO, "%s: bad output folder name", dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return nmt_fail(NMT_ERR_IO, "%s: cannot create folder: %s", path, strerror(errno));
        path[i] = saved;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return nmt_fail(NMT_ERR_IO, "%s: not a folder", dir);
    return NMT_OK;
}

/* The gzip form of bytes[0, len) into f, in pieces: level 9, the header
 * of gzopen's "wb9" (no name, time stamp 0), so the bytes are
 * reproducible. */
static NmtStatus write_gzip(AtomicFile *f, const char *path, const char *bytes, int64_t len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return nmt_fail(NMT_ERR_NOMEM, "%s: cannot start gzip compression", path);
    unsigned char out[65536];
    NmtStatus st = NMT_OK;
    int64_t done = 0;
    int zret = Z_OK;
    while (!st && zret != Z_STREAM_END) {
        if (z.avail_in == 0 && done < len) { /* avail_in is 32-bit: 1 GiB at a time */
            z.next_in = (unsigned char *)(bytes + done);
            z.avail_in = (unsigned)(len - done > (1 << 30) ? (1 << 30) : len - done);
            done += z.avail_in;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        zret = deflate(&z, done == len ? Z_FINISH : Z_NO_FLUSH);
        if (zret == Z_STREAM_ERROR) st = nmt_fail(NMT_ERR_RUNTIME, "%s: gzip compression failed", path);
        else if (z.avail_out < sizeof out) st = atomic_file_write(f, out, sizeof out - z.avail_out);
    }
    deflateEnd(&z);
    return st;
}

/* Writes one file of the corpus atomically (fileio.h): a failed write
 * (a full disk) leaves no partial file and whatever PATH held before. */
static NmtStatus write_file(const char *path, const char *bytes, int64_t len, int gzip) {
    AtomicFile *f = NULL;
    NmtStatus st = atomic_file_open(path, &f);
    if (st) return st;
    st = gzip ? write_gzip(f, path, bytes, len) : atomic_file_write(f, bytes, (size_t)len);
    if (st) {
        atomic_file_abort(f);
        return st;
    }
    return atomic_file_commit(f);
}

NmtStatus demo_corpus_write(const DemoCorpus *c, const char *dir, int gzip) {
    NmtStatus st = make_dirs(dir);
    if (st) return st;
    for (int s = 0; s < DEMO_N_SPLITS; s++) {
        const DemoText *t = &c->split[s];
        for (int side = 0; side < 2; side++) {
            char path[4352];
            snprintf(path, sizeof path, "%s/%s.%s%s", dir, demo_corpus_split_name(s),
                     side ? "tgt" : "src", gzip ? ".gz" : "");
            const char *bytes = side ? t->tgt : t->src;
            int64_t len = side ? t->tgt_off[t->n] : t->src_off[t->n];
            if ((st = write_file(path, bytes ? bytes : "", len, gzip))) return st;
        }
    }
    return NMT_OK;
}
