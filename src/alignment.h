/* alignment.h: word alignments read off the attention (`nmt translate
 * --alignment`), in the Pharaoh format of Moses and fast_align: pairs
 * "s-t" of a source and an output position, counted from 0.
 *
 * A target token is aligned to the source token it attends to most (hard)
 * or to every source token whose weight reaches a threshold. In word units
 * (the default) a source word and an output word are aligned when any of
 * their tokens are (the rule of Garg et al. 2019 for subwords); words are
 * the text split at spaces (word_space_len: ASCII and Unicode spaces), of
 * the input line as given and of the output line as written, so the
 * indices count what a script sees. Token units count the model's tokens
 * instead (the pieces of `--attention-out`).
 *
 * Pairs come in output order, then source order ("0-0 2-1 1-2 3-2"); no
 * pair twice. EOS is not aligned (it has no word); an output token whose
 * weights all stay under the threshold is left unaligned.
 *
 * Soft (Marian's `--alignment soft`) gives the weights instead of pairs:
 * one group per output unit, space-separated, each the comma-separated
 * weights of the source units ("0.9000,0.1000 0.2500,0.7500"). In word
 * units a source word's weight is the sum of its tokens' (a token over k
 * words gives each 1/k of its weight) and an output word's row the mean
 * of its tokens' rows, so every row sums to 1 (over a source without EOS:
 * the attention covers exactly its tokens). */
#ifndef NMT_ALIGNMENT_H
#define NMT_ALIGNMENT_H

#include <stddef.h>

#include "common.h"
#include "data/tokenizer.h"

/* The words a token covers: first..last (inclusive). */
typedef struct {
    int first, last;
} WordRange;

/* How pairs are chosen and counted. */
typedef struct {
    double threshold; /* 0: hard (the argmax of each row); else every weight >= threshold */
    int tokens;       /* 1: token positions; 0: word positions */
    int soft;         /* 1: the weights themselves (threshold unused) */
} AlignSpec;

/* Parses --alignment's value into spec's threshold and soft: "hard",
 * "soft", or a threshold in (0, 1]. 0 ok, -1 bad (spec untouched). */
int alignment_parse(const char *value, AlignSpec *spec);

/* --alignment hard|soft|P and --alignment-units words|tokens, as `nmt translate`
 * and `nmt score` take them. */
typedef struct {
    int on;          /* --alignment given */
    AlignSpec spec;  /* its threshold, and the units */
    int units_given; /* --alignment-units given (it needs --alignment) */
} AlignOptions;
/* If argv[*i] is one of the two options, takes it (and its value): 1; 0
 * for any other argument; -1 on a bad or missing value (message set, naming
 * the option), as cli.h's cli_take_* do. */
int alignment_take_option(int argc, char **argv, int *i, AlignOptions *o);
/* NMT_ERR_USAGE (message set) for --alignment-units without --alignment. */
NmtStatus alignment_check_options(const AlignOptions *o);

/* The words of text[0..len) (maximal runs of non-space bytes, numbered from
 * 0) that each of the n tokens covers: those its span's non-space bytes
 * touch. A token whose span holds no such byte (a lone word-start piece
 * "▁", an empty span) takes the first word of the next token that has
 * one, else the last word of the previous one, else word 0. Returns the
 * number of words. */
int alignment_token_words(const char *text, size_t len, const TokenSpan *spans, int n, WordRange *words);

/* The pairs of one translation as "s-t s-t ..." (soft: the weights; a
 * new string; "" for no pairs or no output): attn holds T rows (output tokens) of stride S, row t's weights
 * over source tokens 0..src_n. In word units src_words (src_n ranges,
 * n_src_words words) and tgt_words (T ranges, n_tgt_words words) map tokens
 * to words; in token units they are not read (may be NULL). */
NmtStatus alignment_render(const AlignSpec *spec, const float *attn, int T, int S, int src_n,
                           const WordRange *src_words, int n_src_words, const WordRange *tgt_words,
                           int n_tgt_words, char **out);

/* The pairs of one sentence pair, as `nmt translate` and `nmt score` give
 * them: attn as above (T target tokens, src_n source tokens); in word
 * units the words of src_text and tgt_text (NUL-terminated) that the
 * tokens' spans (src_n and T of them) cover. A new string in *out. */
NmtStatus alignment_of_pair(const AlignSpec *spec, const float *attn, int T, int S, int src_n, const char *src_text,
                            const TokenSpan *src_spans, const char *tgt_text, const TokenSpan *tgt_spans,
                            char **out);

#endif
