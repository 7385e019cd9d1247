# mk/gpu.mk: the CUDA bundle for a GPU machine (included by the Makefile;
# see shared/GPU.md and docs/gpu.md).
#
#   make gpu-bundle   builds with CUDA=1 and fills $(GPU_BUNDLE) (default
#                     $(BUILD)/gpu-bundle/, ignored by git) with: nmt (a
#                     copy of $(BIN)), test_gpu_parity, bench_train,
#                     gpu-check.sh, torch_gpu_bench.py (the PyTorch side of
#                     the benchmark), reference.py, ckpt_same.py, configs/de-en-2x512.json (the
#                     bench config), data/multi30k/ (where ../shared has
#                     it: gpu-check step 3d), COMMIT, lib/ (every shared library that
#                     ldd lists and that is neither glibc's nor CUDA's:
#                     libopenblas (the build the binaries link), libgomp,
#                     libgfortran, libquadmath, libstdc++, libgcc_s,
#                     libcjson, libsentencepiece*, libz; and libcupti, the
#                     toolkit's CUPTI, which nmt opens for NMT_CUDA_PROFILE),
#                     and run.sh, which
#                     runs a program with LD_LIBRARY_PATH set to lib/ and
#                     the machine's CUDA libraries:
#                         build/gpu-bundle/gpu-check.sh
#                         build/gpu-bundle/run.sh build/gpu-bundle/nmt --version
#                     The CUDA runtime is linked statically; cuBLAS and
#                     cuBLASLt (CUDA 13, 600 MB) come from the GPU machine.
#                     Binaries lose their debug sections (GPU_BUNDLE_STRIP=0
#                     keeps them) and libraries over GPU_BUNDLE_GZIP_KB are
#                     gzipped (gpu-check.sh unpacks them) so that the
#                     bundle and the tree stay under 64 MiB (the target
#                     fails above GPU_BUNDLE_MAX_KB). BUILD and BIN are
#                     honoured: `make BUILD=build/x BIN=build/x/nmt gpu-bundle`
#                     leaves ./nmt alone and fills build/x/gpu-bundle/.
#   make gpu-check    runs scripts/gpu-check.sh in this tree (needs a GPU)
#   make gpu-emu-check  builds src/gpu/*.cu with g++ against the CPU emulator
#                     of tests/gpu_emu/ (fibers for CUDA threads, cblas for
#                     cuBLAS) into $(BUILD)/gpu-emu/test_gpu_parity and runs
#                     it: the kernels' indexing, barriers, shuffles and the
#                     memory slots checked against the CPU backend without a
#                     GPU (about a minute on 2 cores; no substitute for a GPU
#                     run). It runs every GPU_EMU_SWEEP_STRIDE-th model of
#                     the attention sweep only. Works in CUDA=0 and CUDA=1 builds.
#                     $(BUILD)/gpu-emu/nmt (and bench_train) are linked the same way, for
#                     the training, checkpoint and decoding round trips of
#                     tests/test_gpu_emu.sh. EMU_STREAM_ORDER=last runs the
#                     latest-created stream first where the default (first)
#                     runs the main stream first (tests/gpu_emu/cuda_runtime.h).
#   make gpu-emu-selftest  builds tests/gpu_emu/emu_selftest.cpp against the
#                     emulator alone and runs it: the emulator's streams,
#                     events, scheduler orders, multi-stream capture and
#                     cooperative launches (under a second).

GPU_BUNDLE ?= $(BUILD)/gpu-bundle
GPU_BUNDLE_STRIP ?= 1
GPU_BUNDLE_MAX_KB ?= 60000
# libraries over this many KiB travel gzipped (OpenBLAS's 36 MB: 10 MB)
GPU_BUNDLE_GZIP_KB ?= 8000
GPU_BUNDLE_BINS := $(BIN) $(BUILD)/tests/test_gpu_parity $(BUILD)/bench/bench_train $(BUILD)/bench/bench_recurrence
# what gpu-check.sh needs beside the binaries (configs keep their folder)
GPU_BUNDLE_FILES := scripts/gpu-check.sh scripts/torch_gpu_bench.py scripts/reference.py scripts/ckpt_same.py \
                    scripts/combo-soak.sh
GPU_BUNDLE_CONFIGS := configs/de-en-2x512.json
# Multi30k (gzip, 1.3 MB), copied in when ../shared has it, for gpu-check's
# step 3d; the bundle is a build output (ignored by git), so the corpus is
# never committed
GPU_BUNDLE_MULTI30K ?= ../shared/data/multi30k
# libraries left to the GPU machine: glibc's, the dynamic loader, CUDA's
# the toolkit's libraries: CUPTI (src/gpu/gpu_profile.cu opens it with
# dlopen, so ldd does not list it) travels with the bundle, the build's own
# version, since its records are read with the build's headers
GPU_CUDA_LIB ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))/lib64
GPU_BUNDLE_SKIP := /(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|curand|nvrtc|nvJitLink|nvidia)[^/]*\.so

.PHONY: gpu-bundle gpu-check gpu-emu-check gpu-emu-selftest

gpu-bundle:
	$(MAKE) CUDA=1 $(GPU_BUNDLE_BINS)
	@nm $(BIN) | grep -q ' T cuda_backend_create' || { \
	  echo "gpu-bundle: $(BIN) has no CUDA backend (objects built with CUDA=0?); rebuild them with CUDA=1" >&2; exit 1; }
	rm -rf $(GPU_BUNDLE)
	mkdir -p $(GPU_BUNDLE)/lib $(GPU_BUNDLE)/configs
	cp $(BIN) $(GPU_BUNDLE)/nmt
	cp $(BUILD)/tests/test_gpu_parity $(BUILD)/bench/bench_train $(BUILD)/bench/bench_recurrence $(GPU_BUNDLE_FILES) $(GPU_BUNDLE)/
	cp $(GPU_BUNDLE_CONFIGS) $(GPU_BUNDLE)/configs/
	@if [ -r $(GPU_BUNDLE_MULTI30K)/train.de.gz ]; then mkdir -p $(GPU_BUNDLE)/data/multi30k && \
	  cp $(GPU_BUNDLE_MULTI30K)/*.gz $(GPU_BUNDLE)/data/multi30k/ && \
	  echo "  data/multi30k <- $(GPU_BUNDLE_MULTI30K) (gpu-check step 3d)"; \
	else echo "  no $(GPU_BUNDLE_MULTI30K): gpu-check step 3d will say skipped"; fi
	@if [ "$(GPU_BUNDLE_STRIP)" = 1 ]; then \
	  for b in nmt test_gpu_parity bench_train bench_recurrence; do strip --strip-debug $(GPU_BUNDLE)/$$b; done; fi
	(git describe --always --dirty 2>/dev/null || echo unknown) > $(GPU_BUNDLE)/COMMIT
	@for b in $(GPU_BUNDLE_BINS); do ldd $$b; done | awk '/=>/ && $$3 ~ /^\// {print $$3}' | sort -u \
	  | grep -Ev '$(GPU_BUNDLE_SKIP)' | while read -r lib; do \
	    echo "  lib/$$(basename $$lib) <- $$lib"; cp -L "$$lib" $(GPU_BUNDLE)/lib/ || exit 1; done
	@cupti=$$(ls $(GPU_CUDA_LIB)/libcupti.so.* 2>/dev/null | grep -E '\.so\.[0-9]+$$' | head -n 1); \
	  if [ -z "$$cupti" ]; then echo "gpu-bundle: no libcupti.so.<major> in $(GPU_CUDA_LIB)" >&2; exit 1; fi; \
	  echo "  lib/$$(basename $$cupti) <- $$cupti (opened with dlopen: NMT_CUDA_PROFILE)"; \
	  cp -L "$$cupti" $(GPU_BUNDLE)/lib/
	@for lib in $(GPU_BUNDLE)/lib/*; do \
	  if [ "$$(du -k "$$lib" | cut -f1)" -gt $(GPU_BUNDLE_GZIP_KB) ]; then \
	    gzip -9 "$$lib" && echo "  $$lib.gz (unpacked by gpu-check.sh and run.sh on first use)"; fi; done
	@printf '%s\n' '#!/bin/sh' \
	  '# run.sh: runs a program of this bundle with its libraries (lib/) and the' \
	  '# machine'"'"'s CUDA libraries on LD_LIBRARY_PATH, e.g.  ./run.sh ./nmt --version' \
	  'here=$$(cd "$$(dirname "$$0")" && pwd)' \
	  'eval "$$("$$here/gpu-check.sh" --print-env)"' \
	  'exec "$$@"' > $(GPU_BUNDLE)/run.sh
	chmod +x $(GPU_BUNDLE)/run.sh $(GPU_BUNDLE)/gpu-check.sh $(GPU_BUNDLE)/torch_gpu_bench.py
	@du -sh $(GPU_BUNDLE) | sed 's/^/gpu-bundle: /'
	@cat $(GPU_BUNDLE)/COMMIT | sed 's/^/gpu-bundle: commit /'
	@kb=$$(du -sk $(GPU_BUNDLE) | cut -f1); if [ "$$kb" -gt $(GPU_BUNDLE_MAX_KB) ]; then \
	  echo "gpu-bundle: $$kb KiB, over GPU_BUNDLE_MAX_KB=$(GPU_BUNDLE_MAX_KB) (a call carries at most 64 MiB with the tree)" >&2; exit 1; fi

gpu-check: $(BIN) $(BUILD)/tests/test_gpu_parity $(BUILD)/bench/bench_train
	NMT_BIN=$(abspath $(BIN)) NMT_BUILD=$(abspath $(BUILD)) bash scripts/gpu-check.sh

# ---- the CPU emulator build of the CUDA backend ----
GPU_EMU := $(BUILD)/gpu-emu
GPU_EMU_CU := $(filter-out src/gpu/gpu_info.cu,$(wildcard src/gpu/*.cu))
# the emulator: emu.o (runtime, cuBLAS), emu_cupti.o (CUPTI's activity API)
GPU_EMU_RT := $(GPU_EMU)/emu.o $(GPU_EMU)/emu_cupti.o
GPU_EMU_OBJ := $(GPU_EMU_CU:src/gpu/%.cu=$(GPU_EMU)/%.o) $(GPU_EMU_RT)
GPU_EMU_FLAGS := -std=c++17 -O1 -g -Wall -Wextra -Wno-unused-parameter -Itests/gpu_emu -Isrc \
                 $(BLAS_CFLAGS) -DNMT_WITH_CUDA -DNMT_CUDA_EMU
GPU_EMU_HDR := $(wildcard tests/gpu_emu/*.h src/gpu/*.cuh src/gpu/*.h src/kernels/*.h) src/backend.h

$(GPU_EMU)/%.o: src/gpu/%.cu $(GPU_EMU_HDR)
	@mkdir -p $(dir $@)
	$(CXX) -x c++ $(GPU_EMU_FLAGS) -c -o $@ $<

$(GPU_EMU_RT): $(GPU_EMU)/%.o: tests/gpu_emu/%.cpp $(GPU_EMU_HDR)
	@mkdir -p $(dir $@)
	$(CXX) $(GPU_EMU_FLAGS) -c -o $@ $<

# the parity test as a CUDA build compiles it (its library-load checks
# expect cuBLAS and CUPTI: the emulator's), also in a CUDA=0 build
$(GPU_EMU)/test_gpu_parity.o: tests/test_gpu_parity.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DNMT_WITH_CUDA -Itests $(CFLAGS) -c -o $@ $<

# the library without its CUDA objects and stubs, plus the emulated ones
$(GPU_EMU)/test_gpu_parity: $(GPU_EMU)/test_gpu_parity.o $(filter-out $(BUILD)/src/gpu/%,$(LIB_OBJ)) $(GPU_EMU_OBJ)
	$(CXX) -o $@ $^ $(filter-out -lcudart_static,$(LDLIBS))

# The parity test again with the kernels compiled as nvcc compiles them in
# one respect: a * b + c fused into one multiply-add (nvcc's default,
# --fmad=true; the emulator's g++ -O1 without -mfma and the CPU backend's
# -ffp-contract=off never fuse). A kernel whose result hangs on a product
# being rounded on its own fails here as on a GPU: layer_norm_backward's
# g - mean(g) over a row of one column gave -5.5e-6 against the CPU's 0,
# on the H200 and here alike (2026-12-04). On a CPU with FMA only
# (tests/test_gpu_emu_parity.sh checks /proc/cpuinfo before running it).
GPU_EMU_FMA := $(BUILD)/gpu-emu-fma
GPU_EMU_FMA_FLAGS := $(filter-out -O1,$(GPU_EMU_FLAGS)) -O2 -ffp-contract=fast \
                     $(if $(filter x86_64,$(shell uname -m)),-mfma)
GPU_EMU_FMA_OBJ := $(GPU_EMU_CU:src/gpu/%.cu=$(GPU_EMU_FMA)/%.o)

$(GPU_EMU_FMA)/%.o: src/gpu/%.cu $(GPU_EMU_HDR)
	@mkdir -p $(dir $@)
	$(CXX) -x c++ $(GPU_EMU_FMA_FLAGS) -c -o $@ $<

$(GPU_EMU_FMA)/test_gpu_parity: $(GPU_EMU)/test_gpu_parity.o $(filter-out $(BUILD)/src/gpu/%,$(LIB_OBJ)) $(GPU_EMU_FMA_OBJ) $(GPU_EMU_RT)
	$(CXX) -o $@ $^ $(filter-out -lcudart_static,$(LDLIBS))

# nmt itself on the emulated backend, for tests/test_gpu_emu.sh's training,
# checkpoint and decoding round trips between the CPU and "cuda"
$(GPU_EMU)/nmt: $(BUILD)/src/main.o $(filter-out $(BUILD)/src/gpu/%,$(LIB_OBJ)) $(GPU_EMU_OBJ)
	$(CXX) -o $@ $^ $(filter-out -lcudart_static,$(LDLIBS))

# bench_train on the emulated backend: the device profile of its timed
# steps against its own counts (tests/test_gpu_emu.sh)
$(GPU_EMU)/bench_train: $(BUILD)/bench/bench_train.o $(filter-out $(BUILD)/src/gpu/%,$(LIB_OBJ)) $(GPU_EMU_OBJ)
	$(CXX) -o $@ $^ $(filter-out -lcudart_static,$(LDLIBS))

# `make test` builds the emulated programs before any test starts: the
# emulator's tests (tests/test_gpu_emu*.sh, tests/test_score_cli.sh) run
# side by side and would race to build them (tests/gpu_emu/lib.sh)
ifneq ($(SAN),1)
test: $(GPU_EMU)/test_gpu_parity $(GPU_EMU)/nmt $(GPU_EMU)/bench_train $(GPU_EMU)/emu_selftest \
      $(GPU_EMU_FMA)/test_gpu_parity
endif

# every 5th attention combination of the parity sweep (15 of 72: each model
# takes 2 s on the emulator; the GPU and the self-test run all of them)
GPU_EMU_SWEEP_STRIDE ?= 5
gpu-emu-check: $(GPU_EMU)/test_gpu_parity
	NMT_PARITY_SWEEP_STRIDE=$(GPU_EMU_SWEEP_STRIDE) $(GPU_EMU)/test_gpu_parity

# the emulator's own checks (streams, events, capture), on the emulator alone
$(GPU_EMU)/emu_selftest: tests/gpu_emu/emu_selftest.cpp $(GPU_EMU_RT) $(GPU_EMU_HDR)
	$(CXX) $(GPU_EMU_FLAGS) -o $@ $< $(GPU_EMU_RT) $(BLAS_LIBS)

gpu-emu-selftest: $(GPU_EMU)/emu_selftest
	$(GPU_EMU)/emu_selftest
