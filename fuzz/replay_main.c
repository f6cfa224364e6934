/* main() for fuzz harnesses built without libFuzzer: replays inputs through
 * LLVMFuzzerTestOneInput. Arguments are files or directories (walked recursively, in name
 * order); arguments starting with '-' are libFuzzer flags and are ignored, so a replay binary
 * accepts the same command line as the fuzzer. Each input is copied into a buffer of exactly
 * its size, so a sanitizer sees a harness reading past the end. Fails when no input was
 * replayed: a corpus that silently went missing must not pass. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static unsigned long replayed;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    /* Exactly n bytes, so reading one past the input is an overflow the sanitizers see. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    printf("replay: %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    replayed++;
    return 0;
}

static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        perror(path);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *e = names[i]->d_name;
        if (strcmp(e, ".") != 0 && strcmp(e, "..") != 0 && strncmp(e, "README", 6) != 0) {
            size_t len = strlen(path) + strlen(e) + 2;
            char *child = malloc(len);
            snprintf(child, len, "%s/%s", path, e);
            if (replay_path(child) != 0)
                rc = -1;
            free(child);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && replay_path(argv[i]) != 0)
            rc = 1;
    printf("replayed %lu inputs\n", replayed);
    if (replayed == 0) {
        fprintf(stderr, "no input replayed: pass corpus files or directories\n");
        return 1;
    }
    return rc;
}
