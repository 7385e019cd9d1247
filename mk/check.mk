# mk/check.mk: sanitizer builds and fuzzing (included by the Makefile; see
# docs/reliability.md).
#
#   make san-test        build everything with AddressSanitizer, LeakSanitizer
#   make test SAN=1      and UndefinedBehaviorSanitizer (gcc; -O1 -g, CUDA=0)
#                        into $(SAN_BUILD) (default build/san/, never mixed
#                        with build/'s objects; the binary is build/san/nmt,
#                        ./nmt is left alone) and run the CPU test suite
#                        under it, with NMT_SAN=1 in the environment (a test
#                        may take a smaller workload then, and says so).
#                        Every sanitizer report, also from an nmt that a
#                        shell test ran with stderr thrown away, goes to
#                        $(SAN_BUILD)/logs/ and fails the run.
#                        SAN_TESTS="test_config test_cli" runs only those;
#                        SAN_SKIP (below) names the tests left out, SAN_SKIP=
#                        runs every one.
#   make fuzz            build the libFuzzer targets fuzz/fuzz_*.c (clang,
#                        -fsanitize=fuzzer,address,undefined) into
#                        $(FUZZ_BUILD) (default build/fuzz/) and run each for
#                        FUZZ_SECONDS (default 60) from its seeds in
#                        tests/fuzz/<target>/; FUZZ_TARGETS="fuzz_bleu" runs
#                        some; new corpus entries stay in build/fuzz/corpus/,
#                        a crash is written to build/fuzz/artifacts/<target>/
#                        and fails the run.
#   make fuzz-smoke      the same for 10 s each (CI).
#   make fuzz-regress    replays every seed and regression input once.
#   make fuzz-seeds      regenerates tests/fuzz/fuzz_checkpoint/ (valid and
#                        broken tiny checkpoints, fuzz/make_checkpoint_seeds.c).
#   make check-clean     removes build/san/ and build/fuzz/ (make clean does too).
#
# Both builds are recursive makes of this Makefile with BUILD=build/san (or
# build/fuzz), CUDA=0 and the flags below, so the object rules are the main
# Makefile's own. Suppressions (tests/sanitizer/*.supp) name third-party
# libraries only, never nmt code.

SAN_BUILD    ?= $(BUILD)/san
SAN_OPT      ?= -O1 -g
SAN_FLAGS    := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_SUPP_DIR := $(CURDIR)/tests/sanitizer
SAN_TESTS    ?=
# Tests the sanitizer suite leaves out, because the sanitizers gain nothing
# from them that the other tests do not give (the plain `make test` runs
# them); each is printed with its reason.
#  - test_attention_gain: a BLEU quality check, two 1200-step trainings of
#    a larger model (about 20 minutes under ASan on 2 cores); the training,
#    validation and translation code it runs is run by test_train_e2e.sh
#    and test_crash_safety.sh too.
#  - test_gpu_emu_parity, test_gpu_emu: the CUDA kernels and nmt on the
#    CPU emulator; mk/gpu.mk compiles the emulated kernels and the GPU
#    backend with its own flags, without sanitizers, so only the CPU code
#    around them is checked, which the other tests run already (and ASan
#    would not know the emulator's fiber stacks).
#  - test_gpu_check_dry: the dry run of scripts/gpu-check.sh, a check of
#    the script's logic; the nmt code it runs, the other tests run.
GPU_EMU_TESTS = test_gpu_emu_parity test_gpu_emu
SAN_SKIP     ?= test_attention_gain $(GPU_EMU_TESTS) test_gpu_check_dry
SAN_SKIP_WHY  = test_attention_gain:"BLEU quality check, 2 x 1200 training steps; its code paths run in test_train_e2e and test_crash_safety" \
                $(foreach t,$(GPU_EMU_TESTS),$(t):"emulated CUDA kernels are built without sanitizers (mk/gpu.mk)") \
                test_gpu_check_dry:"the logic of scripts/gpu-check.sh; the nmt code it runs is run by the other tests"

FUZZ_BUILD   ?= $(BUILD)/fuzz
FUZZ_CC      ?= clang
FUZZ_CXX     ?= clang++
FUZZ_OPT     ?= -O1 -g
FUZZ_FLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 16384
FUZZ_SRC     := $(wildcard fuzz/fuzz_*.c)
FUZZ_ALL     := $(FUZZ_SRC:fuzz/%.c=%)
FUZZ_TARGETS ?= $(FUZZ_ALL)

# exit codes that no nmt command or test uses, so that a report is never
# mistaken for an expected failure (exit 1 or 2)
SAN_ENV = NMT_SAN=1 ASAN_OPTIONS=detect_leaks=1:exitcode=86:check_initialization_order=1:strict_init_order=1:log_path=$(SAN_LOGDIR)/asan \
  LSAN_OPTIONS=suppressions=$(SAN_SUPP_DIR)/lsan.supp:print_suppressions=0:exitcode=86 \
  UBSAN_OPTIONS=suppressions=$(SAN_SUPP_DIR)/ubsan.supp:print_stacktrace=1:halt_on_error=1:exitcode=87:log_path=$(SAN_LOGDIR)/ubsan
# $(abspath) and not $(CURDIR)/$(BUILD): BUILD (= SAN_BUILD) may be absolute
# (make test SAN=1 SAN_BUILD=/tmp/san, or BUILD=/abs/dir); gluing CURDIR in
# front of it gave NMT_BIN=/repo//tmp/san/nmt (every shell test: "nmt binary
# not found") and logs under /repo/tmp/san/logs. abspath keeps an absolute
# path and prefixes CURDIR to a relative one, as the Makefile's test rule does.
SAN_LOGDIR = $(abspath $(BUILD)/logs)
FUZZ_ENV = ASAN_OPTIONS=detect_leaks=1 \
  LSAN_OPTIONS=suppressions=$(SAN_SUPP_DIR)/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=suppressions=$(SAN_SUPP_DIR)/ubsan.supp:print_stacktrace=1:halt_on_error=1

.PHONY: san-test fuzz fuzz-smoke fuzz-build fuzz-regress fuzz-seeds check-clean

ifeq ($(NMT_CHECK_INNER),san)
# ---- inside the sanitizer build: BUILD is build/san --------------------------
CFLAGS   += $(SAN_FLAGS)
CXXFLAGS += $(SAN_FLAGS)
# static runtimes: with gcc's shared libasan + libubsan, UBSan ignores
# log_path and its reports could vanish with a test's stderr
LDLIBS   += $(SAN_FLAGS) -static-libasan -static-libubsan

SAN_RUN_BIN := $(if $(SAN_TESTS),$(filter $(addprefix $(BUILD)/tests/,$(SAN_TESTS)),$(TEST_BIN)),$(TEST_BIN))
SAN_RUN_SH  := $(if $(SAN_TESTS),$(filter $(addprefix tests/,$(addsuffix .sh,$(SAN_TESTS))),$(TEST_SH)),$(TEST_SH))
SAN_SKIPPED := $(filter $(addprefix $(BUILD)/tests/,$(SAN_SKIP)) $(addprefix tests/,$(addsuffix .sh,$(SAN_SKIP))),\
                 $(SAN_RUN_BIN) $(SAN_RUN_SH))
SAN_RUN_BIN := $(filter-out $(SAN_SKIPPED),$(SAN_RUN_BIN))
SAN_RUN_SH  := $(filter-out $(SAN_SKIPPED),$(SAN_RUN_SH))

$(BUILD)/nmt: $(BUILD)/src/main.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

.PHONY: san-run
san-run: $(BUILD)/nmt $(SAN_RUN_BIN)
	@rm -rf $(SAN_LOGDIR) && mkdir -p $(SAN_LOGDIR)
	@for t in $(notdir $(basename $(SAN_SKIPPED))); do \
	  why=; for w in $(SAN_SKIP_WHY); do [ "$${w%%:*}" = "$$t" ] && why=" ($${w#*:})"; done; \
	  echo "SKIP under SAN=1: $$t$$why; SAN_SKIP= runs it"; \
	done
	@start=$$(date +%s); \
	$(SAN_ENV) NMT_BIN=$(abspath $(BUILD)/nmt) scripts/run-tests.sh $(call test_order,$(SAN_RUN_BIN),$(SAN_RUN_SH)); rc=$$?; \
	reports=$$(grep -l -E '^SUMMARY: |ERROR: [A-Za-z]+Sanitizer|runtime error:' $(SAN_LOGDIR)/* 2>/dev/null | wc -l); \
	for f in $(SAN_LOGDIR)/*; do [ -f "$$f" ] && { echo "==== $$f"; head -c 20000 "$$f"; }; done; \
	echo "sanitizers (address,undefined,leak): $$reports reports, $$(ls $(SAN_LOGDIR) | wc -l) log files in $(BUILD)/logs/, $$(( $$(date +%s) - start )) s"; \
	[ "$$rc" -eq 0 ] && [ "$$reports" -eq 0 ]

else ifeq ($(NMT_CHECK_INNER),fuzz)
# ---- inside the fuzzing build: BUILD is build/fuzz, CC is clang -------------
CFLAGS   += $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link
CXXFLAGS += $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link

FUZZ_BIN := $(FUZZ_ALL:%=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ifuzz $(CFLAGS) -c -o $@ $<

$(BUILD)/fuzz/%: $(BUILD)/fuzz/%.o $(LIB_OBJ)
	$(CXX) -fsanitize=fuzzer $(FUZZ_FLAGS) -o $@ $^ $(LDLIBS)

.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BIN)

else
# ---- the top-level targets -----------------------------------------------------
san-test:
	+$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) CUDA=0 OPT="$(SAN_OPT)" NMT_CHECK_INNER=san san-run

# `make test SAN=1` (the Makefile's own test rule stands aside when SAN=1)
ifeq ($(SAN),1)
test: san-test
endif

fuzz-build:
	+$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CUDA=0 CC=$(FUZZ_CC) CXX=$(FUZZ_CXX) \
	  OPT="$(FUZZ_OPT)" NMT_CHECK_INNER=fuzz fuzz-bins

# runs each target for FUZZ_SECONDS; the first corpus folder (writable) is
# build/fuzz/corpus/<target>, the seeds are read from tests/fuzz/<target>
fuzz: fuzz-build
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	  dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) \
	      -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 $$dict \
	      -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ $(FUZZ_BUILD)/corpus/$$t tests/fuzz/$$t \
	      > $(FUZZ_BUILD)/$$t.log 2>&1; then \
	    grep -E '^#[0-9]+[[:space:]]+DONE' $(FUZZ_BUILD)/$$t.log | sed -E 's/^#([0-9]+)[[:space:]]+DONE +/  \1 runs, /' | tr -d '\n'; \
	    echo "; $$(ls $(FUZZ_BUILD)/corpus/$$t | wc -l) new corpus entries: ok"; \
	  else \
	    fail=$$((fail + 1)); echo "---- $$t FAILED (log $(FUZZ_BUILD)/$$t.log)"; \
	    grep -B2 -A12 -E 'property failed|^==[0-9]+==ERROR|runtime error|Timeout|out-of-memory' \
	      $(FUZZ_BUILD)/$$t.log | head -80; \
	    ls -l $(FUZZ_BUILD)/artifacts/$$t/; \
	  fi; \
	done; echo "fuzz: $$fail of $(words $(FUZZ_TARGETS)) targets failed"; [ $$fail -eq 0 ]

fuzz-smoke:
	+$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

# regenerates the checkpoint seeds (normal build, gcc) into tests/fuzz/fuzz_checkpoint/
fuzz-seeds: $(BUILD)/fuzz-seeds/make_checkpoint_seeds
	mkdir -p tests/fuzz/fuzz_checkpoint
	$(BUILD)/fuzz-seeds/make_checkpoint_seeds tests/fuzz/fuzz_checkpoint

$(BUILD)/fuzz-seeds/make_checkpoint_seeds: $(BUILD)/fuzz-seeds/make_checkpoint_seeds.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

$(BUILD)/fuzz-seeds/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# every seed and regression input once (no mutation)
fuzz-regress: fuzz-build
	@fail=0; for t in $(FUZZ_TARGETS); do \
	  if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/$$t -runs=0 tests/fuzz/$$t/* > $(FUZZ_BUILD)/$$t.regress.log 2>&1; then \
	    echo "$$t: $$(ls tests/fuzz/$$t | wc -l) inputs ok"; \
	  else fail=$$((fail + 1)); echo "---- $$t FAILED"; tail -40 $(FUZZ_BUILD)/$$t.regress.log; fi; \
	done; [ $$fail -eq 0 ]
endif

check-clean:
	rm -rf $(SAN_BUILD) $(FUZZ_BUILD)
