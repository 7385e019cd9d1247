/* train_csv.h: the run log DIR/train.csv, both sides: the trainer appends
 * rows with train_csv_append, `nmt plot` reads them back into curves. The
 * columns are defined once, in TRAIN_CSV_COLUMNS below; the header, the
 * row struct, the writer and the reader all come from that list.
 *
 * Format: a header line naming the columns, then one row per line:
 *   kind,step,epoch,loss,ppl,lr,grad_norm,src_tok_s,tgt_tok_s,valid_ppl,valid_bleu,valid_chrf,align_loss
 * kind is "train" (a log row: loss, ppl, lr, grad_norm, src_tok_s, tgt_tok_s
 * filled, valid_* empty; align_loss, the guided alignment loss per target
 * token (train.guided_alignment_weight included), only with guided
 * alignment; loss is the cross-entropy without it) or "valid" (valid_ppl and, when computed,
 * valid_bleu and valid_chrf filled; the training columns may be empty). step is a
 * non-negative integer; the other fields are plain decimal numbers or empty.
 * A resumed run appends rows to the same file, so steps may repeat or go
 * back.
 *
 * Reading: columns are found by header name (unknown extra columns are
 * ignored; kind and step are required, a missing other column reads as
 * empty); rows of an unknown kind are skipped (counted in n_ignored); blank
 * lines are skipped; "\r\n" line ends and a UTF-8 BOM are accepted. A row
 * whose field count differs from the header's, an empty kind, a step that
 * is not a non-negative integer or a field that is not a number is an error
 * naming FILE:LINE. */
#ifndef NMT_TRAIN_TRAIN_CSV_H
#define NMT_TRAIN_TRAIN_CSV_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "common.h"

/* X(ENUM, name, TYPE): the columns in file order. TYPE is KIND (the row
 * kind), STEP (an int64_t) or VALUE (a double; NaN when empty). */
#define TRAIN_CSV_COLUMNS(X)             \
    X(KIND, kind, KIND)                  \
    X(STEP, step, STEP)                  \
    X(EPOCH, epoch, VALUE)               \
    X(LOSS, loss, VALUE)                 \
    X(PPL, ppl, VALUE)                   \
    X(LR, lr, VALUE)                     \
    X(GRAD_NORM, grad_norm, VALUE)       \
    X(SRC_TOK_S, src_tok_s, VALUE)       \
    X(TGT_TOK_S, tgt_tok_s, VALUE)       \
    X(VALID_PPL, valid_ppl, VALUE)       \
    X(VALID_BLEU, valid_bleu, VALUE)     \
    X(VALID_CHRF, valid_chrf, VALUE)     \
    X(ALIGN_LOSS, align_loss, VALUE)

typedef enum {
#define TRAIN_CSV_ENUM_(E, name, T) TRAIN_CSV_COL_##E,
    TRAIN_CSV_COLUMNS(TRAIN_CSV_ENUM_)
#undef TRAIN_CSV_ENUM_
    TRAIN_CSV_N_COLUMNS
} TrainCsvColumn;

typedef enum { TRAIN_CSV_TRAIN = 0, TRAIN_CSV_VALID } TrainCsvKind;

/* The value of an empty field. */
#define TRAIN_CSV_EMPTY ((double)NAN)

/* One row. Optional (VALUE) fields are NaN when empty: start from
 * train_csv_row_init and fill what the row has. */
#define TRAIN_CSV_FIELD_KIND(name) TrainCsvKind name;
#define TRAIN_CSV_FIELD_STEP(name) int64_t name;
#define TRAIN_CSV_FIELD_VALUE(name) double name;
typedef struct {
#define TRAIN_CSV_FIELD_(E, name, T) TRAIN_CSV_FIELD_##T(name)
    TRAIN_CSV_COLUMNS(TRAIN_CSV_FIELD_)
#undef TRAIN_CSV_FIELD_
} TrainCsvRow;

/* Header name of a column ("valid_bleu"); "kind" and "train"/"valid". */
const char *train_csv_column_name(TrainCsvColumn col);
const char *train_csv_kind_name(TrainCsvKind kind);
/* Clears a row: kind train, step 0, every optional field empty. Then set
 * kind, step and the fields the row has. */
void train_csv_row_init(TrainCsvRow *row);
/* The numeric value of a column of a row: NaN when empty, the step as a
 * double for TRAIN_CSV_COL_STEP, NaN for TRAIN_CSV_COL_KIND. */
double train_csv_row_value(const TrainCsvRow *row, TrainCsvColumn col);

/* ---- writing ---- */

/* Writes the header line. */
NmtStatus train_csv_header(FILE *f);
/* Appends one row as one line (written with a single fwrite, then
 * flushed). Numbers are plain decimals with 9 significant digits (no
 * exponent: 0.00001, 12345.6789), integers without a point; NaN is written
 * as an empty field, infinities as "inf"/"-inf". */
NmtStatus train_csv_append(FILE *f, const TrainCsvRow *row);
/* Formats v as train_csv_append does (NaN: ""); cap >= TRAIN_CSV_NUMBER_CAP. */
enum { TRAIN_CSV_NUMBER_CAP = 40 };
void train_csv_format_number(double v, char *buf, size_t cap);
/* Opens `path` for appending rows (*out; fclose it). A missing or empty file
 * gets the header. An existing one must start with this version's header
 * (else NMT_ERR_FORMAT naming the file), or with the header of an earlier
 * version that had fewer columns (the first ones of this version's, e.g.
 * one without valid_chrf): such a file is rewritten first (atomically)
 * with this version's header and its rows given the missing columns empty.
 * A last line cut short by a crash (no final newline) is removed first so
 * that the next row starts its own line. */
NmtStatus train_csv_open_append(const char *path, FILE **out);

/* ---- reading ---- */

typedef struct {
    char *path;          /* as given to train_csv_read */
    TrainCsvRow *rows;   /* (n_rows) train and valid rows in file order */
    size_t n_rows;
    size_t n_ignored;    /* rows of an unknown kind */
    unsigned has_column; /* bit (1u << TrainCsvColumn) set for each column in the header */
} TrainCsvTable;

/* Reads a train.csv file into a new table (*out; train_csv_free it). */
NmtStatus train_csv_read(const char *path, TrainCsvTable **out);
/* Parses train.csv text (len bytes; need not be terminated); `path` names
 * the file in messages. */
NmtStatus train_csv_parse(const char *path, const char *text, size_t len, TrainCsvTable **out);
void train_csv_free(TrainCsvTable *t);
/* Rows of one kind. */
size_t train_csv_count(const TrainCsvTable *t, TrainCsvKind kind);

/* A curve: y = column `col` of the rows of one kind, against x = step. */
typedef struct {
    double *step;  /* (n) increasing */
    double *value; /* (n) as read; empty (and "nan") fields are left out */
    size_t n;
} TrainCsvSeries;

/* The curve of column `col` over the rows of `kind`, in file order, with
 * the resume rule: a row whose step is <= the step of the previous row of
 * its kind starts the curve again from there: every point already taken
 * with step >= that row's step is dropped (a resumed run replaces what the
 * earlier run logged after its checkpoint). A train row going back also
 * cuts the curves of valid rows (the later validations belonged to the
 * replaced run). Rows whose field is empty add no point but still apply
 * the rule. Free with train_csv_series_free. */
NmtStatus train_csv_series(const TrainCsvTable *t, TrainCsvKind kind, TrainCsvColumn col,
                           TrainCsvSeries *out);
void train_csv_series_free(TrainCsvSeries *s);

#endif
