/* given_tokenizers.h: SentencePiece models given as files
 * (data.spm_src_model, data.spm_tgt_model: spm_train's .model files)
 * instead of trained by `nmt prepare`. Unigram or bpe models; nmt's
 * special ids are pad 0, unk 1, bos 2, eos 3 (spm_train --pad_id=0
 * --unk_id=1 --bos_id=2 --eos_id=3), and a model with others (spm_train's
 * defaults: no pad, unk 0, bos 1, eos 2) is used with its special pieces
 * moved there (spm_load_proto), the cache and checkpoints holding it so;
 * the same file on both sides is a joint model. The cache follows the files (their size and time
 * stamp are in its manifest), and every checkpoint holds them, as it holds
 * trained ones. */
#ifndef NMT_DATA_GIVEN_TOKENIZERS_H
#define NMT_DATA_GIVEN_TOKENIZERS_H

#include <stdbool.h>

#include "common.h"
#include "config.h"
#include "data/tokenizer.h"

/* True when cfg gives the models (config validation makes it both or none). */
bool given_tokenizers(const Config *cfg);

/* Loads the two models, logging a line for each whose special pieces were
 * moved; an error names the key and the file (a missing or unreadable
 * file, not a SentencePiece model, specials that cannot be moved, a word
 * or char model). On failure *src and *tgt are NULL. */
NmtStatus given_tokenizers_load(const Config *cfg, Tokenizer **src, Tokenizer **tgt);

/* With given models: checks them (given_tokenizers_load) and makes the
 * keys that describe the tokenizers say what the models are:
 * data.spm_model_type (bpe when either is), data.spm_vocab_size (when
 * both sides have the same number of pieces) and data.spm_joint (the same
 * file on both sides), logging the change; the other spm_* training keys
 * are not used. Without them, nothing. */
NmtStatus given_tokenizers_apply_config(Config *cfg);

#endif
