/* fuzz_replay.c — run LLVMFuzzerTestOneInput over files and directories
 * without libFuzzer, so the corpus and every saved crash input are
 * regression tests in the ordinary (gcc, sanitizer or not) build.
 * Usage: fuzz_replay PATH... ; fails if no input file was found at all. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *p = realloc(buf, cap);
            if (!p) abort();
            buf = p;
        }
        const size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    /* An exact-size copy, so ASan catches a read one byte past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) abort();
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    long files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i])) return 1;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (n + 1) * sizeof *names);
            if (!names || !(names[n] = malloc(strlen(argv[i]) + strlen(e->d_name) + 2))) abort();
            sprintf(names[n++], "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (n) qsort(names, n, sizeof *names, cmp_str); /* names is NULL for an empty folder */
        for (size_t k = 0; k < n; k++) {
            if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(names[k])) return 1;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("fuzz_replay: %ld passed, 0 failed\n", files);
    if (files == 0) {
        fprintf(stderr, "fuzz_replay: no input files\n");
        return 1;
    }
    return 0;
}
