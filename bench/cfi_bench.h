/* bench/cfi_bench.c: the DWARF CFI rows of bench_guestwalk. */
#pragma once

void cfi_bench(unsigned batches);
