/* config_keys.h: THE list of config keys. Each row gives the key path, the
 * Config field, the type, the default (as JSON text), the allowed range or
 * choices, flags, and the one-line meaning. The loader, the validator, the
 * resolved-config printer, the resume check and docs/config.md (`nmt config
 * --doc`) are all generated from this table.
 *
 * X(path, field, type, default, lo, hi, range_flags, choices, flags, doc)
 *   type:   CFG_INT, CFG_FLOAT, CFG_BOOL, CFG_STRING, CFG_PATH, CFG_ENUM
 *           (CFG_FLOAT with CFG_LIST: a ConfigNumbers field, each item in the range)
 *   lo, hi: inclusive bounds for numbers (NOLIMIT for none);
 *           range_flags CFG_LO_OPEN / CFG_HI_OPEN make a bound exclusive
 *   choices: the enum's name table (NULL for other types)
 *   flags:  CFG_SCHEDULE: may change when resuming a run;
 *           CFG_OPTIONAL: an empty string means "not given";
 *           CFG_SINGLE: the model computes with it in single precision,
 *           so its range is checked on the value rounded to a float too;
 *           CFG_TOKENIZER: it shapes the tokenizers (nmt prepare), so with
 *           train.init_from the checkpoint's value replaces the config's;
 *           CFG_TRAINING_ONLY: a model key that only training uses, so it
 *           may differ from train.init_from's model (every other model key
 *           must equal the checkpoint's) */
#define CONFIG_KEYS(X)                                                                             \
    X("data.train_src", data.train_src, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "training corpus, source side (plain or gzip text, one sentence per line)")                  \
    X("data.train_tgt", data.train_tgt, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "training corpus, target side, aligned line by line with train_src")                          \
    X("data.train_align", data.train_align, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "guided alignment: word alignments of the training pairs, one line per pair of Pharaoh "     \
      "pairs i-j (0-based source and target word, words split at spaces: fast_align's and eflomal's " \
      "output on the corpus as it is; plain or gzip); train.guided_alignment_weight weighs them")  \
    X("data.extra_src", data.extra_src, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL | CFG_LIST, \
      "more training corpora, source side: a path or a list of paths (at most 32), e.g. back-translation " \
      "(machine-translated sources of monolingual target text) or other parallel corpora; their pairs join " \
      "every epoch beside data.train_src's, and the tokenizers are trained on all the corpora; no guided "  \
      "alignment links (plain or gzip)")                                                           \
    X("data.extra_tgt", data.extra_tgt, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL | CFG_LIST, \
      "the target sides of data.extra_src's corpora, as many and in its order, each aligned line by line " \
      "with its source")                                                                           \
    X("data.extra_tag", data.extra_tag, CFG_STRING, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL | CFG_LIST, \
      "a token put before every source sentence of a data.extra_src corpus, e.g. <BT> (tagged "      \
      "back-translation: the model tells the corpora apart); with several corpora a list of one per " \
      "corpus, \"\" for an untagged one; each a piece of its own in the source vocabulary "           \
      "(SentencePiece: a user-defined symbol); no spaces or commas, at most 64 bytes; empty: none")   \
    X("data.train_upsample", data.train_upsample, CFG_INT, "1", 1, 1000, 0, NULL, 0,                \
      "every epoch takes each data.train_src pair this many times (weighs the genuine pairs "       \
      "against a larger data.extra_src)")                                                          \
    X("data.extra_weight", data.extra_weight, CFG_FLOAT, "1", 0, 1000, CFG_LO_OPEN, NULL, CFG_LIST, \
      "how much of each data.extra_src corpus an epoch takes: one weight for every corpus or a list of " \
      "one per corpus; w takes every pair floor(w) times plus the next (w - floor(w)) x its pairs of a " \
      "shuffled round of them, so 0.25 trains on a different quarter each epoch and on every pair once " \
      "in four epochs (the draw keyed by train.seed, the same after --resume)")                        \
    X("data.valid_src", data.valid_src, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "validation corpus, source side (optional)")                                                 \
    X("data.valid_tgt", data.valid_tgt, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "validation corpus, target side (given together with valid_src)")                            \
    X("data.test_src", data.test_src, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL,                 \
      CFG_OPTIONAL | CFG_SCHEDULE, "test corpus, source side (optional; used by scripts)")          \
    X("data.test_tgt", data.test_tgt, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL,                 \
      CFG_OPTIONAL | CFG_SCHEDULE, "test corpus, target side (optional; used by scripts)")          \
    X("data.tokenizer", data.tokenizer, CFG_ENUM, "\"spm\"", NOLIMIT, NOLIMIT, 0,                  \
      tokenizer_kind_names, CFG_TOKENIZER, "spm: SentencePiece trained on the training corpus (or given: data.spm_src_model); word: whitespace words") \
    X("data.spm_src_model", data.spm_src_model, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "a SentencePiece model file (spm_train's .model, unigram or bpe; special ids other than pad 0, unk 1, " \
      "bos 2, eos 3 are moved there) as the source tokenizer instead of training one; with data.spm_tgt_model " \
      "(the same file for a joint model); the spm_* training keys are then not used")              \
    X("data.spm_tgt_model", data.spm_tgt_model, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL, CFG_OPTIONAL, \
      "the target side's SentencePiece model file, given with data.spm_src_model")                \
    X("data.spm_vocab_size", data.spm_vocab_size, CFG_INT, "8000", 8, 1000000, 0, NULL, CFG_TOKENIZER, \
      "SentencePiece vocabulary size per side (or joint), special tokens included")                \
    X("data.spm_model_type", data.spm_model_type, CFG_ENUM, "\"unigram\"", NOLIMIT, NOLIMIT, 0,    \
      spm_model_type_names, CFG_TOKENIZER, "SentencePiece model type")                                          \
    X("data.spm_joint", data.spm_joint, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0, NULL, CFG_TOKENIZER, \
      "one SentencePiece model trained on both sides instead of one per language")                 \
    X("data.spm_character_coverage", data.spm_character_coverage, CFG_FLOAT, "1.0", 0.9, 1.0, 0,   \
      NULL, CFG_TOKENIZER, "share of characters SentencePiece must cover (1.0 for small alphabets; with tokenizer spm at least 0.98, SentencePiece's least)")\
    X("data.spm_max_sentences", data.spm_max_sentences, CFG_INT, "2000000", 0, NOLIMIT, 0, NULL,   \
      CFG_TOKENIZER, "SentencePiece trains on a uniform sample of at most this many training sentences per model (seeded; a joint model counts both sides); 0: all of them") \
    X("data.spm_threads", data.spm_threads, CFG_INT, "1", 1, 1024, 0, NULL, CFG_TOKENIZER,       \
      "SentencePiece trainer threads (faster on a large corpus; the model depends on the count, the same for the same count on any machine)") \
    X("data.word_vocab_size", data.word_vocab_size, CFG_INT, "50000", 8, 10000000, 0, NULL, CFG_TOKENIZER, \
      "word tokenizer: most frequent words kept per side, special tokens included")                \
    X("data.word_min_freq", data.word_min_freq, CFG_INT, "1", 1, NOLIMIT, 0, NULL, CFG_TOKENIZER,  \
      "word tokenizer: words seen fewer times become <unk>")                                       \
    X("data.max_len", data.max_len, CFG_INT, "80", 1, 100000, 0, NULL, 0,                          \
      "training pairs with more tokens than this on either side are skipped (and counted)")        \
    X("data.spm_sample_alpha", data.spm_sample_alpha, CFG_FLOAT, "0.0", 0, 10, 0, NULL, 0,        \
      "subword regularization: each epoch segments every training sentence anew at random (unigram: from the whole segmentation lattice with this inverse temperature, 0.1-0.5 typical; bpe: BPE-dropout with this merge dropout probability, below 1); validation and translation keep the one best segmentation; 0: off") \
    X("data.spm_sample_sides", data.spm_sample_sides, CFG_ENUM, "\"both\"", NOLIMIT, NOLIMIT, 0,  \
      sample_side_names, 0, "the sides data.spm_sample_alpha samples: both, src or tgt")            \
    X("data.cache_dir", data.cache_dir, CFG_PATH, "\"cache\"", NOLIMIT, NOLIMIT, 0, NULL, 0,       \
      "folder of the tokenizer models and the encoded corpora (`nmt prepare`)")                    \
    X("model.emb_dim", model.emb_dim, CFG_INT, "256", 1, 65536, 0, NULL, 0,                        \
      "embedding size (source and target)")                                                        \
    X("model.hidden", model.hidden, CFG_INT, "512", 1, 65536, 0, NULL, 0,                          \
      "decoder LSTM size (the attention query size)")                                              \
    X("model.enc_hidden", model.enc_hidden, CFG_INT, "0", 0, 65536, 0, NULL, 0,                    \
      "encoder output size, both directions together (the attention key size); 0: same as hidden") \
    X("model.enc_layers", model.enc_layers, CFG_INT, "2", 1, 64, 0, NULL, 0,                       \
      "encoder LSTM layers")                                                                       \
    X("model.dec_layers", model.dec_layers, CFG_INT, "2", 1, 64, 0, NULL, 0,                       \
      "decoder LSTM layers")                                                                       \
    X("model.bidirectional", model.bidirectional, CFG_BOOL, "true", NOLIMIT, NOLIMIT, 0, NULL, 0,  \
      "first encoder layer reads both ways (each direction enc_hidden/2 units, concatenated)")      \
    X("model.input_feed", model.input_feed, CFG_BOOL, "true", NOLIMIT, NOLIMIT, 0, NULL, 0,        \
      "Luong input feeding: the previous attentional vector joins the decoder input")              \
    X("model.tie_embeddings", model.tie_embeddings, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0, NULL,  \
      0, "share the target embedding matrix with the output layer")                                \
    X("model.share_embeddings", model.share_embeddings, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0,   \
      NULL, 0,                                                                                      \
      "one embedding matrix for source and target (needs one tokenizer for both sides: "          \
      "data.spm_joint true); with tie_embeddings also the output layer's")                         \
    X("model.residual", model.residual, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0, NULL, 0,           \
      "residual connections: every LSTM layer above the first adds its input to its output "       \
      "(encoder and decoder; deep stacks train better)")                                           \
    X("model.layer_norm", model.layer_norm, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0, NULL, 0,       \
      "layer normalisation in every LSTM: the input and the recurrent products of the gates are "   \
      "each normalised over the 4 gates, with learned gains (Marian's layer-normalised LSTM)")     \
    X("model.right_to_left", model.right_to_left, CFG_BOOL, "false", NOLIMIT, NOLIMIT, 0, NULL, 0, \
      "the decoder writes each target from its last token to its first (Marian's --right-left); "  \
      "such a model reranks a left-to-right model's n-best lists (scripts/rerank.sh)")             \
    X("model.bridge", model.bridge, CFG_ENUM, "\"learned\"", NOLIMIT, NOLIMIT, 0, bridge_names, 0, \
      "decoder initial state: learned from the final encoder states, or zero")                     \
    X("model.dropout", model.dropout, CFG_FLOAT, "0.3", 0, 1, CFG_HI_OPEN, NULL,                   \
      CFG_SINGLE | CFG_TRAINING_ONLY,                                                               \
      "dropout on embeddings, between LSTM layers and on the attentional vector")                  \
    X("model.word_dropout_src", model.word_dropout_src, CFG_FLOAT, "0.0", 0, 1, CFG_HI_OPEN, NULL, \
      CFG_SINGLE | CFG_TRAINING_ONLY,                                                               \
      "word dropout on the source: each position's embedding is zeroed with this probability "   \
      "(the whole vector; the others scaled by 1/(1-p)), as Marian's --dropout-src")               \
    X("model.word_dropout_tgt", model.word_dropout_tgt, CFG_FLOAT, "0.0", 0, 1, CFG_HI_OPEN, NULL, \
      CFG_SINGLE | CFG_TRAINING_ONLY,                                                               \
      "word dropout on the decoder's input: each previous target token's embedding is zeroed "    \
      "with this probability, as Marian's --dropout-trg")                                          \
    X("model.init_range", model.init_range, CFG_FLOAT, "0.1", 0, 10, CFG_LO_OPEN, NULL,            \
      CFG_SINGLE | CFG_TRAINING_ONLY,                                                               \
      "weights start uniform in [-init_range, init_range]")                                        \
    X("model.attention.style", model.attention.style, CFG_ENUM, "\"luong\"", NOLIMIT, NOLIMIT, 0,  \
      attn_style_names, 0,                                                                          \
      "luong: query h_t, attentional vector feeds the output; bahdanau: query s_{t-1}, context joins the LSTM input; none") \
    X("model.attention.score", model.attention.score, CFG_ENUM, "\"general\"", NOLIMIT, NOLIMIT,   \
      0, attn_score_names, 0,                                                                       \
      "dot, scaled_dot, general (h^T W s), concat/additive (v^T tanh(W1 q + W2 k)), auto (dot if sizes match, else additive)") \
    X("model.attention.mode", model.attention.mode, CFG_ENUM, "\"global\"", NOLIMIT, NOLIMIT, 0,   \
      attn_mode_names, 0, "global: all source positions; local-m: window at p_t = t; local-p: predicted window centre") \
    X("model.attention.window", model.attention.window, CFG_INT, "10", 1, NOLIMIT, 0, NULL, 0,       \
      "local attention half-width D (the Gaussian of local-p has sigma = D/2)")                    \
    X("model.attention.heads", model.attention.heads, CFG_INT, "1", 1, 64, 0, NULL, 0,             \
      "attention heads, each with its own projections, outputs concatenated and projected")        \
    X("model.attention.dropout", model.attention.dropout, CFG_FLOAT, "0.0", 0, 1, CFG_HI_OPEN,     \
      NULL, CFG_SINGLE | CFG_TRAINING_ONLY, "dropout on the attention weights")                                                 \
    X("train.device", train.device, CFG_ENUM, "\"auto\"", NOLIMIT, NOLIMIT, 0, device_names,       \
      CFG_SCHEDULE, "auto: cuda when a GPU is visible, else cpu")                                   \
    X("train.gpu", train.gpu, CFG_INT, "0", 0, 1023, 0, NULL, CFG_SCHEDULE,                        \
      "which GPU when one is used: 0-based among those CUDA_VISIBLE_DEVICES shows; "              \
      "another than 0 that cannot be used is an error, also with auto; "                          \
      "with cpu a warning says it is unused")                                                      \
    X("train.threads", train.threads, CFG_INT, "0", 0, 1024, 0, NULL, CFG_SCHEDULE,                \
      "CPU threads for BLAS and OpenMP, and for encoding the corpora (nmt prepare); 0: all cores") \
    X("train.optimizer", train.optimizer, CFG_ENUM, "\"adam\"", NOLIMIT, NOLIMIT, 0,               \
      optimizer_names, 0, "adam or sgd (both decay by lr_decay on plateaus)")                                         \
    X("train.lr", train.lr, CFG_FLOAT, "0.001", 0, 1000, CFG_LO_OPEN, NULL, CFG_SINGLE | CFG_SCHEDULE, \
      "learning rate; a new value at a resume is multiplied by the lr_decay factors applied so far") \
    X("train.adam_beta1", train.adam_beta1, CFG_FLOAT, "0.9", 0, 1, CFG_HI_OPEN, NULL, CFG_SINGLE, \
      "Adam first-moment decay")                                                                   \
    X("train.adam_beta2", train.adam_beta2, CFG_FLOAT, "0.999", 0, 1, CFG_HI_OPEN, NULL, CFG_SINGLE, \
      "Adam second-moment decay")                                                                  \
    X("train.adam_eps", train.adam_eps, CFG_FLOAT, "1e-8", 0, 1, CFG_LO_OPEN, NULL, CFG_SINGLE,    \
      "Adam epsilon")                                                                              \
    X("train.warmup_steps", train.warmup_steps, CFG_INT, "0", 0, NOLIMIT, 0, NULL, CFG_SCHEDULE,   \
      "linear learning-rate warmup over this many steps, counted from update 1 (also after a resume)") \
    X("train.lr_schedule", train.lr_schedule, CFG_ENUM, "\"constant\"", NOLIMIT, NOLIMIT, 0,        \
      lr_schedule_names, CFG_SCHEDULE, "the rate after warmup: constant keeps lr; rsqrt (inverse square root, "  \
      "Marian's --lr-decay-inv-sqrt, fairseq's inverse_sqrt) multiplies it by sqrt(N / max(t, N)) at update t, " \
      "N = rsqrt_steps (half the rate at 4N); it multiplies the warmup ramp and the plateau/epoch decay: the " \
      "rate is lr * s * min(1, t / warmup_steps) * sqrt(N / max(t, N)), s the product of the lr_decay "          \
      "factors applied so far")                                                                                 \
    X("train.rsqrt_steps", train.rsqrt_steps, CFG_INT, "0", 0, NOLIMIT, 0, NULL, CFG_SCHEDULE,     \
      "N of lr_schedule rsqrt, the update after which the rate falls; 0: warmup_steps (both 0 is an error)") \
    X("train.lr_decay", train.lr_decay, CFG_FLOAT, "0.5", 0, 1, CFG_LO_OPEN, NULL, CFG_SCHEDULE,   \
      "factor applied to the rate at each validation that does not improve (and each epoch from decay_start_epoch); 1: never") \
    X("train.decay_start_epoch", train.decay_start_epoch, CFG_INT, "0", 0, NOLIMIT, 0, NULL,       \
      CFG_SCHEDULE, "from this epoch on, decay the rate every epoch; 0: only on plateaus")          \
    X("train.batch_sentences", train.batch_sentences, CFG_INT, "64", 0, NOLIMIT, 0, NULL, 0,       \
      "most sentence pairs per batch; 0: no limit (then batch_tokens must be set)")                \
    X("train.batch_tokens", train.batch_tokens, CFG_INT, "0", 0, NOLIMIT, 0, NULL, 0,              \
      "most padded tokens per batch on either side; 0: no limit")                                  \
    X("train.accum_batches", train.accum_batches, CFG_INT, "1", 1, 1000000, 0, NULL, CFG_SCHEDULE, \
      "batches whose gradients add up to one update (gradient accumulation: the update of one "    \
      "batch this many times larger, in the memory of one; steps count updates); an epoch's "     \
      "last update takes the batches left")                                                       \
    X("train.epochs", train.epochs, CFG_INT, "20", 1, NOLIMIT, 0, NULL, CFG_SCHEDULE,              \
      "passes over the training data")                                                             \
    X("train.max_steps", train.max_steps, CFG_INT, "0", 0, NOLIMIT, 0, NULL, CFG_SCHEDULE,         \
      "stop after this many updates; 0: no limit")                                                 \
    X("train.ema_decay", train.ema_decay, CFG_FLOAT, "0.0", 0, 1, CFG_HI_OPEN, NULL,               \
      CFG_SINGLE | CFG_SCHEDULE, "keep an exponential moving average of the weights with this "     \
      "decay (at update t, min(ema_decay, (1 + t) / (10 + t))), validate it and save it as the "     \
      "model (checkpoints also keep the training weights); 0: none. 0.9999 is usual")              \
    X("train.guided_alignment_weight", train.guided_alignment_weight, CFG_FLOAT, "0.1", 0, NOLIMIT, 0, \
      NULL, CFG_SINGLE | CFG_SCHEDULE, "with data.train_align: weight of the guided alignment loss "  \
      "added to the cross-entropy (per target token, like it); 0: the alignments are not used")     \
    X("train.guided_alignment_cost", train.guided_alignment_cost, CFG_ENUM, "\"ce\"", NOLIMIT, NOLIMIT, \
      0, guided_cost_names, CFG_SCHEDULE, "guided alignment loss of a target token's attention (heads " \
      "averaged) against its aligned source tokens (an equal share each): ce, cross-entropy; mse, "  \
      "half the squared error")                                                                     \
    X("train.clip_norm", train.clip_norm, CFG_FLOAT, "5.0", 0, NOLIMIT, 0, NULL, 0,                \
      "clip the global gradient norm to this; 0: no clipping")                                     \
    X("train.label_smoothing", train.label_smoothing, CFG_FLOAT, "0.1", 0, 1, CFG_HI_OPEN, NULL,   \
      0, "label smoothing of the cross-entropy")                                                   \
    X("train.seed", train.seed, CFG_INT, "1", 0, NOLIMIT, 0, NULL, 0,                              \
      "seed of initialisation, shuffling and dropout")                                             \
    X("train.save_dir", train.save_dir, CFG_PATH, "\"runs/default\"", NOLIMIT, NOLIMIT, 0, NULL,   \
      CFG_SCHEDULE, "folder of checkpoints, train.csv and the resolved config; a fresh run into "    \
      "one that holds a run is refused (--resume continues it, --overwrite replaces it)")          \
    X("train.init_from", train.init_from, CFG_PATH, "\"\"", NOLIMIT, NOLIMIT, 0, NULL,            \
      CFG_OPTIONAL | CFG_SCHEDULE, "fine-tuning: a fresh run starts from this checkpoint's model "  \
      "(its weights and tokenizers; the model keys the config leaves out are its own, those it "   \
      "states must equal them but for dropout and init_range; its data.* tokenizer keys replace "  \
      "the config's) with a new optimizer and schedule; a resumed run keeps taking the "          \
      "tokenizers from it")                                                                       \
    X("train.valid_every", train.valid_every, CFG_INT, "1000", 1, NOLIMIT, 0, NULL, CFG_SCHEDULE,  \
      "validate every this many steps (and at the end of each epoch)")                             \
    X("train.patience", train.patience, CFG_INT, "10", 0, NOLIMIT, 0, NULL, CFG_SCHEDULE,          \
      "stop after this many validations without improvement; 0: never stop early")                 \
    X("train.log_every", train.log_every, CFG_INT, "100", 1, NOLIMIT, 0, NULL, CFG_SCHEDULE,       \
      "log a line and a train.csv row every this many steps")                                      \
    X("train.valid_metric", train.valid_metric, CFG_ENUM, "\"bleu\"", NOLIMIT, NOLIMIT, 0,         \
      valid_metric_names, CFG_SCHEDULE, "metric that picks best.nmt and drives early stopping")     \
    X("train.keep_checkpoints", train.keep_checkpoints, CFG_INT, "0", 0, NOLIMIT, 0, NULL,         \
      CFG_SCHEDULE, "also keep the last K step checkpoints step-N.nmt: one is written with "       \
      "last.nmt every valid_every steps, at each epoch's end and at the end of a run not "         \
      "stopped by a signal, with or without a validation set; all but the newest K in save_dir "   \
      "are removed, those written before a --resume too; 0: none, only last.nmt and best.nmt")     \
    X("train.max_bad_steps", train.max_bad_steps, CFG_INT, "5", 1, NOLIMIT, 0, NULL, CFG_SCHEDULE, \
      "stop after this many updates in a row skipped for NaN or Inf")                              \
    X("decode.beam", decode.beam, CFG_INT, "5", 1, 1000, 0, NULL, CFG_SCHEDULE, "beam size (1: greedy)") \
    X("decode.length_penalty", decode.length_penalty, CFG_FLOAT, "0.6", 0, 10, 0, NULL,            \
      CFG_SCHEDULE, "GNMT length penalty alpha; 0: none")                                           \
    X("decode.coverage_penalty", decode.coverage_penalty, CFG_FLOAT, "0.0", 0, 10, 0, NULL,        \
      CFG_SCHEDULE, "GNMT coverage penalty beta; 0: none")                                          \
    X("decode.max_len_a", decode.max_len_a, CFG_FLOAT, "2.0", 0, 1000, 0, NULL, CFG_SCHEDULE,      \
      "output length limit a * source length + b: a")                                               \
    X("decode.max_len_b", decode.max_len_b, CFG_INT, "10", 0, 100000, 0, NULL, CFG_SCHEDULE,       \
      "output length limit a * source length + b: b")                                               \
    X("decode.batch", decode.batch, CFG_INT, "128", 1, 100000, 0, NULL, CFG_SCHEDULE,               \
      "sentences decoded together")                                                                 \
    X("decode.maxi_batch", decode.maxi_batch, CFG_INT, "8", 1, CFG_MAX_MAXI_BATCH, 0, NULL, CFG_SCHEDULE, \
      "batches of input lines read ahead and decoded longest first (1: in input order)")
