# mk/bench.mk: benchmarks beyond `make bench` (included by the Makefile; see
# docs/benchmarks.md). Benchmarks print numbers and never fail on them.
#
#   make bench-decode    decoding speed of nmt next to PyTorch on Multi30k
#                        test2016: sentences/s, target tokens/s and BLEU for
#                        beam 1 and 5, the same checkpoint, batching, OpenBLAS
#                        and thread count on both sides, as a markdown table
#                        (scripts/bench-decode.sh). DECODE_MODEL names the
#                        checkpoint (default runs/de-en/best.nmt; it is copied
#                        first); THREADS, BATCH, BEAMS, PT_DROP=1 and KEEP=DIR
#                        pass through the environment, e.g.
#                        make bench-decode THREADS=1 PT_DROP=1

DECODE_MODEL ?= runs/de-en/best.nmt

.PHONY: bench-decode
bench-decode: $(BIN)
	NMT=$(abspath $(BIN)) $(if $(THREADS),THREADS=$(THREADS)) $(if $(BATCH),BATCH=$(BATCH)) \
	  $(if $(BEAMS),BEAMS="$(BEAMS)") $(if $(PT_DROP),PT_DROP=$(PT_DROP)) $(if $(KEEP),KEEP=$(KEEP)) \
	  bash scripts/bench-decode.sh $(DECODE_MODEL)
