/* The version API (rampart.h): the macros agree with each other and with rp_version(), and
 * with the VERSION file the Meson build and the pkg-config files take their version from
 * (the path is argv[1]). */
#include <stdio.h>
#include <string.h>

#include "rampart.h"
#include "testing.h"

int main(int argc, char **argv)
{
    char composed[32];
    snprintf(composed, sizeof composed, "%d.%d.%d", RAMPART_VERSION_MAJOR, RAMPART_VERSION_MINOR,
             RAMPART_VERSION_PATCH);
    CHECKF(strcmp(composed, RAMPART_VERSION_STRING) == 0, "macros %s, string %s", composed,
           RAMPART_VERSION_STRING);
    CHECK(RAMPART_VERSION ==
          RAMPART_VERSION_MAJOR * 10000 + RAMPART_VERSION_MINOR * 100 + RAMPART_VERSION_PATCH);
    CHECK(RAMPART_VERSION_MINOR < 100 && RAMPART_VERSION_PATCH < 100);
    CHECKF(strcmp(rp_version(), RAMPART_VERSION_STRING) == 0, "rp_version() %s", rp_version());

    REQUIRE(argc == 2);
    FILE *f = fopen(argv[1], "r");
    REQUIRE(f);
    char line[64] = "";
    REQUIRE(fgets(line, sizeof line, f));
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    CHECKF(strcmp(line, RAMPART_VERSION_STRING) == 0, "VERSION file says %s, rampart.h %s", line,
           RAMPART_VERSION_STRING);
    TEST_MAIN_END();
}
