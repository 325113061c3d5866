/* check_blocks: dequantizes the blocks of a blocks/<TYPE>.bin file (format in ../make_blocks.py)
 * with ggml's own to_float (ggml-base, the routine llama-quantize uses to write F32) and compares
 * the result bit for bit with the gguf-py floats stored in the file. It only reports; it writes
 * nothing. Built by build_dump_logits.sh next to dump_logits. */
#include "ggml.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s blocks/TYPE.bin\n", argv[0]);
        return 2;
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char magic[4];
    uint32_t hdr[4];
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "QBLK", 4) != 0 || fread(hdr, 4, 4, f) != 4) {
        fprintf(stderr, "%s: not a QBLK file\n", argv[1]);
        return 1;
    }
    const enum ggml_type type = (enum ggml_type)hdr[0];
    const uint32_t n_blocks = hdr[1], block_bytes = hdr[2], block_values = hdr[3];
    const struct ggml_type_traits* tr = ggml_get_type_traits(type);
    if (tr->type_size != block_bytes || tr->blck_size != block_values) {
        fprintf(stderr, "%s: block size %u/%u, ggml says %zu/%lld\n", argv[1], block_bytes, block_values, tr->type_size,
                (long long)tr->blck_size);
        return 1;
    }
    const size_t n = (size_t)n_blocks * block_values;
    uint8_t* raw = malloc((size_t)n_blocks * block_bytes);
    float* ref = malloc(n * sizeof(float));
    float* got = malloc(n * sizeof(float));
    if (fread(raw, block_bytes, n_blocks, f) != n_blocks || fread(ref, sizeof(float), n, f) != n) {
        fprintf(stderr, "%s: truncated\n", argv[1]);
        return 1;
    }
    fclose(f);
    tr->to_float(raw, got, (int64_t)n);
    size_t n_diff = 0, first = (size_t)-1;
    double max_abs = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0) {
            if (n_diff++ == 0) first = i;
            const double d = fabs((double)got[i] - (double)ref[i]);
            if (d > max_abs) max_abs = d;
        }
    }
    printf("%s %s: %zu values, %zu differ bitwise", argv[1], tr->type_name, n, n_diff);
    if (n_diff) {
        printf(", max abs diff %.9g, first at %zu (ggml %.9g, gguf-py %.9g)", max_abs, first, got[first], ref[first]);
    }
    printf("\n");
    free(raw);
    free(ref);
    free(got);
    return n_diff ? 3 : 0;
}
