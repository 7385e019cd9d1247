// spm.cc: the extern "C" wrapper around SentencePiece (spm.h), the only C++
// file of nmt. It owns in-memory training from a C sentence callback, model
// loading from serialized protos, encode/decode, and the translation of
// SentencePiece statuses and C++ exceptions into NmtStatus + nmt_fail.
//
// Rules: every entry point catches every exception (std::bad_alloc becomes
// NMT_ERR_NOMEM, anything else NMT_ERR_RUNTIME); buffers handed to C come
// from nmt_malloc; the SentencePieceProcessor object itself lives in memory
// from nmt_malloc (placement new) so the allocation hook sees it.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdarg>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "common.h"
#include "data/spm.h"
#include "data/spm_proto.h"
}

namespace spm = sentencepiece;

// SentencePiece's sampler draws from a thread-local std::mt19937 that its
// public API seeds only once per thread, from a process-wide seed
// (SetRandomGeneratorSeed). libsentencepiece exports the generator itself;
// spm_sample_encode seeds it from a key before every sentence, so that a
// sentence's segmentation is a function of (model, text, alpha, key), not of
// the thread or of the sentences sampled before it on that thread.
// tests/test_subword_sampling.c checks that (an epoch drawn again, after
// other epochs or on another thread count, gives the same ids; other epochs
// and seeds other segmentations of the same text).
namespace sentencepiece {
namespace random {
std::mt19937 *GetRandomGenerator();
}  // namespace random
}  // namespace sentencepiece

struct SpmModel {
    spm::SentencePieceProcessor proc;
    // 1 when no piece holds U+2581 past its first byte and U+2581 is a known
    // piece: then no id spans two words (spm_pieces_within_words).
    int within_words = 0;
    // The ids pad, unk, bos, eos had in the model as given (-1: none), when
    // nmt moved them to 0..3 (spm_moved_specials); moved 0 when in place.
    int given_ids[NMT_N_SPECIAL] = {0, 0, 0, 0};
    int moved = 0;
};

namespace {

const char *const kSpecialPieces[NMT_N_SPECIAL] = {"<pad>", "<unk>", "<s>", "</s>"};

// Turns the exception being handled into a status with a message.
NmtStatus fail_from_exception(const char *what) {
    try {
        throw;
    } catch (const std::bad_alloc &) {
        return nmt_fail_nomem(what);
    } catch (const std::exception &e) {
        return nmt_fail(NMT_ERR_RUNTIME, "%s: sentencepiece: %s", what, e.what());
    } catch (...) {
        return nmt_fail(NMT_ERR_RUNTIME, "%s: sentencepiece: unknown exception", what);
    }
}

// The C sentence source seen as a SentencePiece SentenceIterator. The first
// sentence is fetched at construction (the trainer calls done() first).
class CallbackIterator : public spm::SentenceIterator {
  public:
    CallbackIterator(SentenceSourceFn next, void *ctx) : next_(next), ctx_(ctx) { fetch(); }
    bool done() const override { return done_; }
    void Next() override { fetch(); }
    const std::string &value() const override { return current_; }
    spm::util::Status status() const override {
        if (source_status_ != NMT_OK)
            return spm::util::Status(spm::util::StatusCode::kInternal, "sentence source failed");
        return spm::util::Status();
    }
    NmtStatus source_status() const { return source_status_; }
    long long n_nonempty() const { return n_nonempty_; }

  private:
    void fetch() {
        if (done_) return;
        const char *line = nullptr;
        size_t len = 0;
        int r = next_(ctx_, &line, &len);
        if (r == 1) {
            current_.assign(line ? line : "", line ? len : 0);
            if (len > 0) n_nonempty_++;
        } else {
            done_ = true;
            current_.clear();
            if (r < 0) source_status_ = r >= -(int)NMT_ERR_RUNTIME ? (NmtStatus)(-r) : NMT_ERR_IO;
        }
    }
    SentenceSourceFn next_;
    void *ctx_;
    std::string current_;
    bool done_ = false;
    NmtStatus source_status_ = NMT_OK;
    long long n_nonempty_ = 0;
};

// Sentences already in memory (the seeded sample) as a SentenceIterator.
class VectorIterator : public spm::SentenceIterator {
  public:
    explicit VectorIterator(const std::vector<std::string> &v) : v_(v) {}
    bool done() const override { return i_ >= v_.size(); }
    void Next() override { i_++; }
    const std::string &value() const override { return v_[i_]; }
    spm::util::Status status() const override { return spm::util::Status(); }

  private:
    const std::vector<std::string> &v_;
    size_t i_ = 0;
};

uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Uniform sample of `k` sentences of the source (reservoir sampling, seeded;
// the kept sentences stay in corpus order). SentencePiece's own sampler
// (input_sentence_size) uses a fixed seed, so nmt samples itself.
void sample_sentences(CallbackIterator *it, size_t k, uint64_t seed,
                      std::vector<std::string> *out) {
    std::vector<std::pair<uint64_t, std::string>> kept;  // (corpus index, sentence)
    kept.reserve(std::min(k, (size_t)1 << 16));
    uint64_t state = seed, seen = 0;
    for (; !it->done(); it->Next(), seen++) {
        if (kept.size() < k) {
            kept.emplace_back(seen, it->value());
            continue;
        }
        uint64_t j = splitmix64(&state) % (seen + 1);
        if (j < k) kept[j] = std::make_pair(seen, it->value());
    }
    std::sort(kept.begin(), kept.end(),
              [](const std::pair<uint64_t, std::string> &a,
                 const std::pair<uint64_t, std::string> &b) { return a.first < b.first; });
    out->clear();
    out->reserve(kept.size());
    for (auto &p : kept) out->push_back(std::move(p.second));
}

bool env_verbose() {
    const char *v = std::getenv("NMT_VERBOSE");
    return v && *v && std::strcmp(v, "0") != 0;
}

std::string fmt_double(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return buf;
}

// Frees m's memory (the processor was constructed with placement new).
void destroy(SpmModel *m) {
    if (!m) return;
    m->~SpmModel();
    nmt_free(m);
}

// A new, empty model in nmt_malloc memory; NULL (message set) on failure.
SpmModel *create(const char *what) {
    void *mem = nmt_malloc(sizeof(SpmModel));
    if (!mem) {
        nmt_fail_nomem(what);
        return nullptr;
    }
    try {
        return new (mem) SpmModel();
    } catch (...) {
        nmt_free(mem);
        fail_from_exception(what);
        return nullptr;
    }
}

// The ids of pad, unk, bos and eos in m (-1: none), in that order.
void special_ids(const SpmModel *m, int ids[NMT_N_SPECIAL]) {
    ids[NMT_PAD_ID] = m->proc.pad_id();
    ids[NMT_UNK_ID] = m->proc.unk_id();
    ids[NMT_BOS_ID] = m->proc.bos_id();
    ids[NMT_EOS_ID] = m->proc.eos_id();
}

// A model whose special pieces are not at 0..3 (spm_train's defaults: unk
// 0, bos 1, eos 2, no pad) is rewritten so that they are, the missing ones
// added as control pieces (spm_proto_move_specials), and loaded again: the
// same segmentation, each other id moved up by the specials put before it.
// Refused when a missing special's name is taken by another piece.
NmtStatus move_specials(SpmModel *m, const std::string &proto, const char *name) {
    int ids[NMT_N_SPECIAL];
    special_ids(m, ids);
    std::string names[NMT_N_SPECIAL];
    const char *name_ptrs[NMT_N_SPECIAL];
    for (int k = 0; k < NMT_N_SPECIAL; k++) {
        if (ids[k] >= 0) {
            names[k] = m->proc.IdToPiece(ids[k]);
        } else {
            names[k] = kSpecialPieces[k];
            int taken = m->proc.PieceToId(names[k]);
            if (taken != ids[NMT_UNK_ID] || names[k] == m->proc.IdToPiece(ids[NMT_UNK_ID]))
                return nmt_fail(NMT_ERR_FORMAT,
                                "%s: the SentencePiece model has no %s control piece (nmt needs one at id %d) "
                                "and its piece %d, a user-defined or other piece, is named %s, so none can be "
                                "added; train it without that piece (e.g. not in --user_defined_symbols)",
                                name, names[k].c_str(), k, taken, names[k].c_str());
        }
        name_ptrs[k] = names[k].c_str();
    }
    uint8_t *moved = nullptr;
    size_t moved_n = 0;
    NmtStatus s = spm_proto_move_specials((const uint8_t *)proto.data(), proto.size(), ids, name_ptrs, &moved,
                                          &moved_n);
    if (s != NMT_OK) {
        nmt_error_prefix("%s", name);
        return s;
    }
    std::string moved_proto;
    try {
        moved_proto.assign((const char *)moved, moved_n);
    } catch (...) {
        nmt_free(moved);
        throw;
    }
    nmt_free(moved);
    spm::util::Status st = m->proc.LoadFromSerializedProto(moved_proto);
    int now[NMT_N_SPECIAL];
    if (st.ok()) special_ids(m, now);
    if (!st.ok() || now[NMT_PAD_ID] != NMT_PAD_ID || now[NMT_UNK_ID] != NMT_UNK_ID ||
        now[NMT_BOS_ID] != NMT_BOS_ID || now[NMT_EOS_ID] != NMT_EOS_ID)
        return nmt_fail(NMT_ERR_FORMAT,
                        "%s: SentencePiece model has pad/unk/bos/eos ids %d/%d/%d/%d, and moving them to "
                        "nmt's 0/1/2/3 failed (%s); train it with --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3",
                        name, ids[NMT_PAD_ID], ids[NMT_UNK_ID], ids[NMT_BOS_ID], ids[NMT_EOS_ID],
                        st.ok() ? "other ids after the rewrite" : st.error_message());
    for (int k = 0; k < NMT_N_SPECIAL; k++) m->given_ids[k] = ids[k];
    m->moved = 1;
    return NMT_OK;
}

// Loads a serialized proto into m, its special pieces moved to nmt's ids
// when they are elsewhere.
NmtStatus load_into(SpmModel *m, const std::string &proto, const char *name) {
    spm::util::Status st = m->proc.LoadFromSerializedProto(proto);
    if (!st.ok())
        return nmt_fail(NMT_ERR_FORMAT, "%s: not a valid SentencePiece model: %s", name,
                        st.error_message());
    int ids[NMT_N_SPECIAL];
    special_ids(m, ids);
    if (ids[NMT_PAD_ID] != NMT_PAD_ID || ids[NMT_UNK_ID] != NMT_UNK_ID || ids[NMT_BOS_ID] != NMT_BOS_ID ||
        ids[NMT_EOS_ID] != NMT_EOS_ID) {
        NmtStatus s = move_specials(m, proto, name);
        if (s != NMT_OK) return s;
    }
    int n = m->proc.GetPieceSize();
    // Pieces within words: SentencePiece's default split_by_whitespace (nmt
    // never changes it) keeps U+2581 at the start of a piece only.
    static const char kWordStart[] = "\xE2\x96\x81";  // U+2581
    int within = !m->proc.IsUnknown(m->proc.PieceToId(kWordStart));
    for (int id = 0; id < n && within; id++) {
        const std::string &piece = m->proc.IdToPiece(id);
        if (piece.size() > 1 && piece.find(kWordStart, 1) != std::string::npos) within = 0;
    }
    m->within_words = within;
    return NMT_OK;
}

// Makes sure *buf (of `capacity` elements of `elem` bytes; NULL: none)
// holds at least `need`: grown to the first doubling of capacity (from 64)
// that does, that count in *grown (capacity when nothing was grown or on
// failure).
NmtStatus grow_buffer(void **buf, size_t elem, int capacity, size_t need, int *grown) {
    *grown = capacity;
    if (need > (size_t)INT_MAX) return nmt_fail(NMT_ERR_RUNTIME, "spm encode: too many tokens");
    if ((int)need <= capacity && *buf) return NMT_OK;
    size_t cap = capacity > 0 ? (size_t)capacity : 64;
    while (cap < need) cap *= 2;
    if (cap > (size_t)INT_MAX) cap = (size_t)INT_MAX;
    void *p = nmt_realloc(*buf, cap * elem);
    if (!p) return nmt_fail_nomem("spm encode");
    *buf = p;
    *grown = (int)cap;
    return NMT_OK;
}

// Makes sure *ids holds at least `need` ids.
NmtStatus grow_ids(int32_t **ids, int *capacity, size_t need) {
    void *p = *ids;
    NmtStatus s = grow_buffer(&p, sizeof(int32_t), *capacity, need, capacity);
    *ids = (int32_t *)p;
    return s;
}

// Makes sure *spans holds the entries grow_ids gives *ids for `need`.
NmtStatus grow_spans(TokenSpan **spans, int capacity, size_t need) {
    void *p = *spans;
    int grown;
    NmtStatus s = grow_buffer(&p, sizeof(TokenSpan), capacity, need, &grown);
    *spans = (TokenSpan *)p;
    return s;
}

// Hands an encoding to C: into *ids (grown as needed), its length in *n_ids.
NmtStatus copy_ids(const std::vector<int> &from, int32_t **ids, int *n_ids, int *capacity) {
    NmtStatus s = grow_ids(ids, capacity, from.size() ? from.size() : 1);
    if (s != NMT_OK) return s;
    for (size_t i = 0; i < from.size(); i++) (*ids)[i] = (int32_t)from[i];
    *n_ids = (int)from.size();
    return NMT_OK;
}

}  // namespace

extern "C" NmtStatus spm_train(const TokenizerSpec *spec, SentenceSourceFn next, void *ctx,
                               SpmModel **out) {
    *out = nullptr;
    const char *key = spec->vocab_size_key ? spec->vocab_size_key : "data.spm_vocab_size";
    if (spec->vocab_size <= NMT_N_SPECIAL)
        return nmt_fail(NMT_ERR_CONFIG, "%s = %d: must be larger than %d (the special tokens)",
                        key, spec->vocab_size, NMT_N_SPECIAL);
    const char *type = spec->spm_model_type ? spec->spm_model_type : "unigram";
    if (std::strcmp(type, "unigram") != 0 && std::strcmp(type, "bpe") != 0)
        return nmt_fail(NMT_ERR_CONFIG, "spm model type \"%s\": must be \"unigram\" or \"bpe\"",
                        type);
    if (!(spec->character_coverage > 0.0 && spec->character_coverage <= 1.0))
        return nmt_fail(NMT_ERR_CONFIG, "spm character_coverage = %g: must be in (0, 1]",
                        spec->character_coverage);
    if (spec->spm_max_sentences < 0)
        return nmt_fail(NMT_ERR_CONFIG, "spm max sentences = %lld: must be >= 0",
                        (long long)spec->spm_max_sentences);
    SpmModel *m = nullptr;
    try {
        std::unordered_map<std::string, std::string> kw;
        kw["vocab_size"] = std::to_string(spec->vocab_size);
        kw["model_type"] = type;
        kw["character_coverage"] = fmt_double(spec->character_coverage);
        kw["normalization_rule_name"] =
            spec->spm_normalization ? spec->spm_normalization : "nmt_nfkc";
        kw["pad_id"] = "0";
        kw["unk_id"] = "1";
        kw["bos_id"] = "2";
        kw["eos_id"] = "3";
        kw["pad_piece"] = kSpecialPieces[NMT_PAD_ID];
        kw["unk_piece"] = kSpecialPieces[NMT_UNK_ID];
        kw["bos_piece"] = kSpecialPieces[NMT_BOS_ID];
        kw["eos_piece"] = kSpecialPieces[NMT_EOS_ID];
        kw["hard_vocab_limit"] = spec->spm_hard_vocab_limit ? "true" : "false";
        kw["byte_fallback"] = spec->spm_byte_fallback ? "true" : "false";
        kw["num_threads"] = std::to_string(spec->spm_threads > 0 ? spec->spm_threads : 1);
        if (spec->spm_user_symbol && spec->spm_user_symbol[0])
            kw["user_defined_symbols"] = spec->spm_user_symbol;
        kw["input_sentence_size"] = "0";  // nmt samples itself (sample_sentences)
        // INFO = 0, WARNING = 1, ERROR = 2; failures come back as statuses.
        kw["minloglevel"] = env_verbose() ? "0" : "2";

        // The library's seed is an unsigned int; UINT_MAX means "from
        // std::random_device", so it is mapped to 0.
        unsigned int seed = (unsigned int)(spec->seed ^ (spec->seed >> 32));
        if (seed == UINT_MAX) seed = 0;
        spm::SetRandomGeneratorSeed(seed);

        CallbackIterator it(next, ctx);
        std::string proto;
        spm::util::Status st;
        if (spec->spm_max_sentences > 0) {
            std::vector<std::string> sample;
            sample_sentences(&it, (size_t)spec->spm_max_sentences, spec->seed, &sample);
            if (it.source_status() != NMT_OK) return it.source_status();
            VectorIterator vit(sample);
            if (!sample.empty()) st = spm::SentencePieceTrainer::Train(kw, &vit, &proto);
        } else {
            st = spm::SentencePieceTrainer::Train(kw, &it, &proto);
        }
        if (it.source_status() != NMT_OK) return it.source_status();  // message set by source
        if (it.n_nonempty() == 0)
            return nmt_fail(NMT_ERR_RUNTIME, "spm training: no non-empty sentences to train on");
        if (!st.ok()) {
            const char *msg = st.error_message();
            if (std::strstr(msg, "Vocabulary size")) {
                nmt_fail(NMT_ERR_CONFIG, "%s = %d does not fit this corpus (%s model): sentencepiece: %s",
                         key, spec->vocab_size, type, msg);
                if (spec->spm_max_sentences > 0 && it.n_nonempty() > spec->spm_max_sentences)
                    nmt_error_suffix(" (it saw a sample of %lld of the %lld sentences: data.spm_max_sentences)",
                                     (long long)spec->spm_max_sentences, it.n_nonempty());
                return NMT_ERR_CONFIG;
            }
            return nmt_fail(NMT_ERR_RUNTIME, "spm training failed: %s", msg);
        }
        m = create("spm training");
        if (!m) return NMT_ERR_NOMEM;
        NmtStatus s = load_into(m, proto, "spm training");
        if (s != NMT_OK) {
            destroy(m);
            return s;
        }
        *out = m;
        return NMT_OK;
    } catch (...) {
        destroy(m);
        return fail_from_exception("spm training");
    }
}

extern "C" NmtStatus spm_load_proto(const uint8_t *bytes, size_t n, const char *name,
                                    SpmModel **out) {
    *out = nullptr;
    SpmModel *m = nullptr;
    try {
        m = create(name);
        if (!m) return NMT_ERR_NOMEM;
        NmtStatus s = load_into(m, std::string((const char *)bytes, n), name);
        if (s != NMT_OK) {
            destroy(m);
            return s;
        }
        *out = m;
        return NMT_OK;
    } catch (...) {
        destroy(m);
        return fail_from_exception(name);
    }
}

// TrainerSpec.model_type (spm_proto.h): UNIGRAM 1, the default; BPE 2;
// WORD 3; CHAR 4.
extern "C" const char *spm_model_type(const SpmModel *m) {
    try {
        std::string proto = m->proc.serialized_model_proto();
        const uint8_t *p = (const uint8_t *)proto.data(), *spec;
        size_t spec_n, i = 0;
        uint64_t type = 1, tag;
        if (spm_proto_find_message(p, proto.size(), SPM_PROTO_TRAINER_SPEC, &spec, &spec_n)) {
            while (i < spec_n && spm_proto_read_varint(spec, spec_n, &i, &tag)) {
                if ((tag >> 3) == SPM_PROTO_MODEL_TYPE && (tag & 7) == 0) {
                    if (!spm_proto_read_varint(spec, spec_n, &i, &type)) return "unknown";
                } else if (!spm_proto_skip_field(spec, spec_n, &i, (unsigned)(tag & 7))) {
                    return "unknown";
                }
            }
        }
        static const char *const names[] = {"unknown", "unigram", "bpe", "word", "char"};
        return type < 5 ? names[type] : "unknown";
    } catch (...) {
        return "unknown";
    }
}

extern "C" int spm_moved_specials(const SpmModel *m, int given_ids[NMT_N_SPECIAL]) {
    for (int k = 0; k < NMT_N_SPECIAL; k++) given_ids[k] = m->moved ? m->given_ids[k] : k;
    return m->moved;
}

extern "C" void spm_free(SpmModel *m) {
    try {
        destroy(m);
    } catch (...) {
        // a destructor that throws cannot be reported from here
    }
}

extern "C" NmtStatus spm_serialize(const SpmModel *m, uint8_t **bytes, size_t *n) {
    *bytes = nullptr;
    *n = 0;
    try {
        std::string proto = m->proc.serialized_model_proto();
        uint8_t *buf = (uint8_t *)nmt_malloc(proto.size() ? proto.size() : 1);
        if (!buf) return nmt_fail_nomem("serializing a SentencePiece model");
        std::memcpy(buf, proto.data(), proto.size());
        *bytes = buf;
        *n = proto.size();
        return NMT_OK;
    } catch (...) {
        return fail_from_exception("serializing a SentencePiece model");
    }
}

extern "C" int spm_vocab_size(const SpmModel *m) {
    try {
        return m->proc.GetPieceSize();
    } catch (...) {
        return 0;
    }
}

extern "C" const char *spm_piece(const SpmModel *m, int id) {
    try {
        if (id < 0 || id >= m->proc.GetPieceSize()) return nullptr;
        return m->proc.IdToPiece(id).c_str();
    } catch (...) {
        return nullptr;
    }
}

extern "C" int spm_pieces_within_words(const SpmModel *m) { return m->within_words; }

extern "C" int spm_piece_to_id(const SpmModel *m, const char *piece) {
    try {
        return m->proc.PieceToId(piece);
    } catch (...) {
        return NMT_UNK_ID;
    }
}

extern "C" NmtStatus spm_encode(const SpmModel *m, const char *text, size_t len,
                                int32_t **ids, int *n_ids, int *capacity) {
    *n_ids = 0;
    try {
        // One vector per thread, reused across calls.
        thread_local std::vector<int> tl_ids;
        spm::util::Status st = m->proc.Encode(absl::string_view(text, len), &tl_ids);
        if (!st.ok()) return nmt_fail(NMT_ERR_RUNTIME, "spm encode: %s", st.error_message());
        return copy_ids(tl_ids, ids, n_ids, capacity);
    } catch (...) {
        return fail_from_exception("spm encode");
    }
}

extern "C" NmtStatus spm_encode_spans(const SpmModel *m, const char *text, size_t len, int32_t **ids,
                                     TokenSpan **spans, int *n_ids) {
    *ids = nullptr;
    *spans = nullptr;
    *n_ids = 0;
    try {
        spm::ImmutableSentencePieceText spt = m->proc.EncodeAsImmutableProto(absl::string_view(text, len));
        size_t n = spt.pieces_size();
        if (n > (size_t)INT_MAX) return nmt_fail(NMT_ERR_RUNTIME, "spm encode: too many tokens");
        *ids = (int32_t *)nmt_malloc((n ? n : 1) * sizeof(int32_t));
        *spans = (TokenSpan *)nmt_malloc((n ? n : 1) * sizeof(TokenSpan));
        if (!*ids || !*spans) {
            nmt_free(*ids);
            nmt_free(*spans);
            *ids = nullptr;
            *spans = nullptr;
            return nmt_fail_nomem("spm encode");
        }
        for (size_t i = 0; i < n; i++) {
            auto piece = spt.pieces((int)i);
            (*ids)[i] = (int32_t)piece.id();
            (*spans)[i].begin = piece.begin();
            (*spans)[i].end = piece.end();
        }
        *n_ids = (int)n;
        return NMT_OK;
    } catch (...) {
        nmt_free(*ids);
        nmt_free(*spans);
        *ids = nullptr;
        *spans = nullptr;
        return fail_from_exception("spm encode");
    }
}

extern "C" NmtStatus spm_sample_encode_spans(const SpmModel *m, const char *text, size_t len, double alpha,
                                             uint64_t key, int32_t **ids, TokenSpan **spans, int *n_ids,
                                             int *capacity) {
    *n_ids = 0;
    try {
        thread_local spm::ImmutableSentencePieceText tl_spt;
        std::seed_seq seq{(uint32_t)key, (uint32_t)(key >> 32)};
        spm::random::GetRandomGenerator()->seed(seq);
        // nbest_size -1: the whole lattice (forward filtering, backward
        // sampling) for unigram; BPE ignores it (alpha is the merge dropout)
        spm::util::Status st =
            m->proc.SampleEncode(absl::string_view(text, len), -1, (float)alpha, tl_spt.mutable_proto());
        if (!st.ok()) return nmt_fail(NMT_ERR_RUNTIME, "spm sample encode: %s", st.error_message());
        size_t n = tl_spt.pieces_size();
        // spans first: *capacity only grows once both hold it
        NmtStatus s = spans ? grow_spans(spans, *capacity, n ? n : 1) : NMT_OK;
        if (s == NMT_OK) s = grow_ids(ids, capacity, n ? n : 1);
        if (s != NMT_OK) return s;
        for (size_t i = 0; i < n; i++) {
            auto piece = tl_spt.pieces((int)i);
            (*ids)[i] = (int32_t)piece.id();
            if (spans) {
                (*spans)[i].begin = piece.begin();
                (*spans)[i].end = piece.end();
            }
        }
        *n_ids = (int)n;
        return NMT_OK;
    } catch (...) {
        return fail_from_exception("spm sample encode");
    }
}

extern "C" NmtStatus spm_sample_encode(const SpmModel *m, const char *text, size_t len, double alpha,
                                       uint64_t key, int32_t **ids, int *n_ids, int *capacity) {
    return spm_sample_encode_spans(m, text, len, alpha, key, ids, nullptr, n_ids, capacity);
}

extern "C" NmtStatus spm_decode_spans(const SpmModel *m, const int32_t *ids, int n, char **text, TokenSpan *spans) {
    *text = nullptr;
    try {
        int v = m->proc.GetPieceSize();
        thread_local std::vector<int> tl_ids;
        thread_local std::vector<int> tl_from;  // the position in ids of each id decoded
        tl_ids.clear();
        tl_from.clear();
        for (int i = 0; i < n; i++) {
            int32_t id = ids[i];
            if (id < 0 || id >= v)
                return nmt_fail(NMT_ERR_RUNTIME,
                                "spm decode: id %d at position %d is outside the vocabulary "
                                "[0, %d)",
                                (int)id, i, v);
            if (spans) spans[i].begin = spans[i].end = 0;
            if (id == NMT_PAD_ID || id == NMT_BOS_ID || id == NMT_EOS_ID) continue;
            tl_ids.push_back(id);
            tl_from.push_back(i);
        }
        thread_local std::string tl_text;
        const std::string *decoded = &tl_text;
        spm::ImmutableSentencePieceText spt;
        if (spans) {  // SentencePieceText: the text and where each piece went in it
            spt = m->proc.DecodeIdsAsImmutableProto(tl_ids);
            if (spt.pieces_size() != tl_ids.size())
                return nmt_fail(NMT_ERR_RUNTIME, "spm decode: %zu pieces for %zu ids", spt.pieces_size(),
                                tl_ids.size());
            size_t end = 0;  // a skipped id: an empty span where the text stands
            for (int i = 0, k = 0; i < n; i++) {
                if (k < (int)tl_from.size() && tl_from[k] == i) {
                    auto piece = spt.pieces(k++);
                    spans[i].begin = piece.begin();
                    spans[i].end = end = piece.end();
                } else {
                    spans[i].begin = spans[i].end = end;
                }
            }
            decoded = &spt.text();
        } else {
            spm::util::Status st = m->proc.Decode(tl_ids, &tl_text);
            if (!st.ok()) return nmt_fail(NMT_ERR_RUNTIME, "spm decode: %s", st.error_message());
        }
        char *buf = (char *)nmt_malloc(decoded->size() + 1);
        if (!buf) return nmt_fail_nomem("spm decode");
        std::memcpy(buf, decoded->data(), decoded->size());
        buf[decoded->size()] = '\0';
        *text = buf;
        return NMT_OK;
    } catch (...) {
        return fail_from_exception("spm decode");
    }
}

extern "C" NmtStatus spm_decode(const SpmModel *m, const int32_t *ids, int n, char **text) {
    return spm_decode_spans(m, ids, n, text, nullptr);
}
