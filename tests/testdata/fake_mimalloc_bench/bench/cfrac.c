/* Allocates and frees a few thousand blocks; the time is the elapsed time of the run. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    void *keep[64] = {0};
    for (int i = 0; i < 200000; i++) {
        free(keep[i & 63]);
        keep[i & 63] = malloc((size_t)(16 + i % 500));
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    printf("%d arguments\n", argc - 1);
    return argc > 1 ? 0 : 1;
}
