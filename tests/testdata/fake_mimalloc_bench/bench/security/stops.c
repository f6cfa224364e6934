/* Caught: the program dies before it can say NOT_CAUGHT. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    abort();
    puts("NOT_CAUGHT");
    return 0;
}
