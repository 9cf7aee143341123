/*
 * A main for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput
 * once on each file named on the command line (or in each directory named).
 * `make test` builds every target with the project's own compiler and flags
 * (and sanitizers under SANITIZE=1) and replays the committed corpora
 * (tests/integration/fuzz), so the targets keep compiling and every input
 * that once found a bug keeps being run.
 */
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
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
        fclose(f);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    /* libFuzzer hands the target a buffer of exactly |n| bytes: so do we
     * (ASan sees a read past the end). */
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf || fread(buf, 1, n, f) != n) {
        fprintf(stderr, "%s: short read\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    long ran = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            if (run_file(argv[i]) != 0)
                return 2;
            ran++;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            if (run_file(path) != 0) {
                closedir(d);
                return 2;
            }
            ran++;
        }
        closedir(d);
    }
    printf("replayed %ld inputs\n", ran);
    return 0;
}
