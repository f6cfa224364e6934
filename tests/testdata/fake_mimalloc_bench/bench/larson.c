/* Prints a relative time the way the suite's larson does. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    free(malloc(100));
    printf("Throughput = 1000 operations per second, relative time: %d.250s.\n", argc);
    return 0;
}
