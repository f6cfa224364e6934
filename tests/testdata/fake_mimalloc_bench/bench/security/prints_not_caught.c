/* Not caught: it carries on and says so. */
#include <stdio.h>

int main(void)
{
    puts("NOT_CAUGHT");
    return 0;
}
