/* The suite's "late crash": NOT_CAUGHT, then a crash. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    puts("NOT_CAUGHT");
    fflush(stdout);
    abort();
}
