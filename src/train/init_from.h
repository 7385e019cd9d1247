/* init_from.h: fine-tuning from a trained model (train.init_from). A fresh
 * run starts from the checkpoint's weights with a new optimizer and
 * schedule; the checkpoint's tokenizers encode the new data (nmt prepare
 * takes them instead of training its own), so the vocabulary and every
 * model size stay the model's. docs/user-guide.md, "Fine-tuning". */
#ifndef NMT_TRAIN_INIT_FROM_H
#define NMT_TRAIN_INIT_FROM_H

#include <stdint.h>
#include "backend.h"
#include "config.h"
#include "data/tokenizer.h"
#include "model/params.h"

/* With train.init_from set: the model keys cfg's file and --set do not
 * state become the checkpoint's; a stated one that differs from the
 * checkpoint's is refused (NMT_ERR_CONFIG, naming the key and the
 * checkpoint), but for those only training uses (dropout, init_range) and
 * the window of global attention (config_take_model_keys); and the
 * checkpoint's tokenizer keys (data.tokenizer and its settings) replace
 * cfg's, saying so when they differed. A missing, damaged or non-regular
 * checkpoint file is an error naming it. Without train.init_from: nothing. */
NmtStatus init_from_apply_config(Config *cfg);

/* The checkpoint's tokenizers (new objects; tokenizer_free them). */
NmtStatus init_from_tokenizers(const char *path, Tokenizer **src_tok, Tokenizer **tgt_tok);

/* Uploads the checkpoint's weights (its model: the moving average when it
 * kept one) into `params` (layout->total floats on be), refusing a
 * checkpoint whose tensors are not the layout's (names and sizes) or hold
 * NaN or Inf; *step gets the step it was saved at. */
NmtStatus init_from_weights(const char *path, Backend *be, const ParamLayout *layout, float *params,
                            int64_t *step);

#endif
